package scenario

import (
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

func TestTableGolden(t *testing.T) {
	r, err := DefaultReport()
	require.NoError(t, err)
	testsupport.CheckGolden(t, "testdata/default_table.golden", []byte(r.Table()))

	trace, err := BuildAgentTrace(300, big.NewInt(7), 20)
	require.NoError(t, err)
	profiles := append(BuiltinProfiles(), EngineProfile{Name: "a_much_longer_engine_name", PrefillTokensPerMS: 90, PrefixCacheHitEfficiency: 0.9, BaseTPOTMS: 9, BatchTPOTSlopeMS: 0.2, MaxBatchSlots: 64})
	r, err = BuildReport(trace, profiles, BenchmarkOptions{WorkloadName: "w", TTFTSLOMilliseconds: 250.5, TPOTSLOMilliseconds: 20, ClosedLoop: true})
	require.NoError(t, err)
	testsupport.CheckGolden(t, "testdata/custom_table.golden", []byte(r.Table()))
}

func TestTableIsAligned(t *testing.T) {
	r, err := DefaultReport()
	require.NoError(t, err)
	table := r.Table()
	comparisons, diagnostics, ok := strings.Cut(table, "\ndiagnostics (fixed definitions):\n")
	require.True(t, ok)
	for _, section := range []string{comparisons, diagnostics} {
		lines := strings.Split(strings.TrimSuffix(section, "\n"), "\n")
		if strings.HasPrefix(lines[0], "scenario comparisons") {
			lines = lines[1:]
		}
		header := lines[0]
		assert.Contains(t, header, "TTFT p99 (ms)")
		for _, line := range lines {
			// Right-aligned numbers end where their header ends.
			assert.Len(t, line, len(header), "%q", line)
			assert.Equal(t, line, strings.TrimRight(line, " "))
		}
	}
	assert.Contains(t, table, "baseline")
	assert.Contains(t, table, "16.25", "attainment 0.1625 as a percentage")
}
