package scenario

import (
	"math"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func agentInputs() Inputs {
	return Inputs{Requests: DefaultAgentRequests, Seed: big.NewInt(DefaultAgentSeed), RPS: DefaultAgentRPS}
}

func TestInputsCheckNamesTheFlag(t *testing.T) {
	t.Parallel()
	opt := DefaultBenchmarkOptions()
	none := func(string) bool { return false }
	require.NoError(t, agentInputs().Check(opt, none))
	tests := []struct {
		edit func(*Inputs, *BenchmarkOptions)
		want string
	}{
		{func(in *Inputs, _ *BenchmarkOptions) { in.TracePath, in.ProfilesPath = "-", "-" }, "--trace and --profiles cannot both read stdin"},
		{func(in *Inputs, _ *BenchmarkOptions) { in.Requests = 0 }, "--requests 0: expected at least 1"},
		{func(in *Inputs, _ *BenchmarkOptions) { in.Requests = MaxAgentRequests + 1 }, "more than the limit of"},
		{func(in *Inputs, _ *BenchmarkOptions) { in.RPS = math.Inf(1) }, "--rps +Inf: expected a positive, finite rate"},
		{func(_ *Inputs, o *BenchmarkOptions) { o.TTFTSLOMilliseconds = 0 }, "--ttft-slo-ms 0: expected a positive, finite time"},
		{func(_ *Inputs, o *BenchmarkOptions) { o.TPOTSLOMilliseconds = -1 }, "--tpot-slo-ms -1: expected a positive, finite time"},
		{func(in *Inputs, _ *BenchmarkOptions) { in.SharedPrefixTokens = -1 }, "--shared-prefix-tokens -1: expected 0 or more"},
	}
	for _, tt := range tests {
		in, o := agentInputs(), DefaultBenchmarkOptions()
		tt.edit(&in, &o)
		assert.ErrorContains(t, in.Check(o, none), tt.want)
	}
}

func TestInputsCheckRefusesFlagsOfTheOtherTrace(t *testing.T) {
	t.Parallel()
	given := func(name string) func(string) bool { return func(flag string) bool { return flag == name } }
	in := agentInputs()
	in.TracePath = "code.csv"
	assert.EqualError(t, in.Check(DefaultBenchmarkOptions(), given("rps")), "--rps shapes the synthetic agent trace: it cannot be combined with --trace")
	assert.NoError(t, in.Check(DefaultBenchmarkOptions(), given("shared-prefix-tokens")))
	assert.EqualError(t, agentInputs().Check(DefaultBenchmarkOptions(), given("shared-prefix-tokens")),
		"--shared-prefix-tokens applies to a replayed trace: use it with --trace")
}

func TestInputsReportIsTheAgentTracesByDefault(t *testing.T) {
	t.Parallel()
	opt := DefaultBenchmarkOptions()
	got, err := agentInputs().Report(opt)
	require.NoError(t, err)
	trace, err := BuildAgentTrace(DefaultAgentRequests, big.NewInt(DefaultAgentSeed), DefaultAgentRPS)
	require.NoError(t, err)
	want, err := BuildReport(trace, BuiltinProfiles(), opt)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestInputsNameAMissingFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "none.csv")
	in := agentInputs()
	in.TracePath = missing
	_, err := in.Report(DefaultBenchmarkOptions())
	assert.EqualError(t, err, "trace "+missing+": no such file or directory")
	in = agentInputs()
	in.ProfilesPath, in.Stdin = "-", strings.NewReader("not json")
	_, err = in.Report(DefaultBenchmarkOptions())
	assert.ErrorContains(t, err, "stdin")
}
