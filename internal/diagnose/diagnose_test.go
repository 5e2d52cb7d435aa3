package diagnose

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/numeric"
	"servesim/internal/sharedtest"
)

// referenceCases are outputs of the reference seed000_diagnose.py (Python
// 3.11) on random inputs, written by a generator script kept outside the
// repository: diagnose_p99_spike snapshots with their logs and options,
// nearest-rank percentiles, Python round() results and main()'s report.
type referenceCases struct {
	Generator string          `json:"generator"`
	Demo      json.RawMessage `json:"demo"`
	Snapshots []struct {
		Window               string                `json:"window"`
		GPUHourlyCostUSD     float64               `json:"gpu_hourly_cost_usd"`
		EffectiveConcurrency float64               `json:"effective_concurrency"`
		Logs                 [][10]json.RawMessage `json:"logs"`
		Snapshot             json.RawMessage       `json:"snapshot"`
	} `json:"snapshots"`
	Percentiles []struct {
		Values []float64 `json:"values"`
		Q      float64   `json:"q"`
		Want   float64   `json:"want"`
	} `json:"percentiles"`
	Rounds [][3]float64 `json:"rounds"`
}

func loadReferenceCases(t *testing.T) referenceCases {
	t.Helper()
	f, err := os.Open("testdata/reference_cases.json.gz")
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var c referenceCases
	require.NoError(t, json.NewDecoder(zr).Decode(&c))
	require.NotEmpty(t, c.Snapshots)
	return c
}

// logFromRow decodes a reference log row in RequestLog's field order.
func logFromRow(t *testing.T, row [10]json.RawMessage) RequestLog {
	t.Helper()
	var r RequestLog
	targets := []any{&r.RequestID, &r.PromptTokens, &r.OutputTokens, &r.QueueWaitMs, &r.PrefillMs,
		&r.DecodeTPOTMs, &r.Preempted, &r.RecomputePenaltyMs, &r.PrefixCachedTokens, &r.KVOccupancyPctAtArrival}
	for i, target := range targets {
		require.NoError(t, json.Unmarshal(row[i], target))
	}
	return r
}

// assertSameJSONFields compares two JSON objects field by field: numbers
// exactly (as float64), null as null, nested objects recursively.
func assertSameJSONFields(t *testing.T, want json.RawMessage, got any, context string) {
	t.Helper()
	gotRaw, err := json.Marshal(got)
	require.NoError(t, err)
	var w, g map[string]any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(gotRaw, &g))
	compareFields(t, w, g, context)
}

func compareFields(t *testing.T, want, got map[string]any, context string) {
	t.Helper()
	assert.Equal(t, len(want), len(got), "%s: field count", context)
	for k, wv := range want {
		gv, ok := got[k]
		if !assert.True(t, ok, "%s: missing field %s", context, k) {
			continue
		}
		if wm, isObject := wv.(map[string]any); isObject {
			gm, _ := gv.(map[string]any)
			compareFields(t, wm, gm, context+"."+k)
			continue
		}
		assert.Equal(t, wv, gv, "%s: field %s", context, k)
	}
}

func TestDiagnoseMatchesReference(t *testing.T) {
	cases := loadReferenceCases(t)
	for _, c := range cases.Snapshots {
		logs := make([]RequestLog, len(c.Logs))
		for i, row := range c.Logs {
			logs[i] = logFromRow(t, row)
		}
		opts := DefaultOptions()
		opts.GPUHourlyCostUSD, opts.EffectiveConcurrency = c.GPUHourlyCostUSD, c.EffectiveConcurrency
		got, err := Diagnose(c.Window, logs, opts)
		require.NoError(t, err, c.Window)
		assertSameJSONFields(t, c.Snapshot, got, c.Window)
	}
}

func TestPercentileMatchesReference(t *testing.T) {
	for i, c := range loadReferenceCases(t).Percentiles {
		got, err := Percentile(c.Values, c.Q)
		require.NoError(t, err)
		assert.Equal(t, math.Float64bits(c.Want), math.Float64bits(got), "case %d: q=%v n=%d", i, c.Q, len(c.Values))
	}
	_, err := Percentile(nil, 50)
	assert.Error(t, err)
}

func TestRoundMatchesReference(t *testing.T) {
	for _, c := range loadReferenceCases(t).Rounds {
		assert.Equal(t, c[2], numeric.Round(c[0], int(c[1])), "round(%v, %v)", c[0], c[1])
	}
}

func TestDemoMatchesReference(t *testing.T) {
	got, err := Demo(DefaultOptions())
	require.NoError(t, err)
	assertSameJSONFields(t, loadReferenceCases(t).Demo, got, "committed golden")
}

func TestDemoMatchesSharedGolden(t *testing.T) {
	got, err := Demo(DefaultOptions())
	require.NoError(t, err)
	official, err := os.ReadFile(sharedtest.Reference(t, "golden", "seed000_main.json"))
	require.NoError(t, err)
	assertSameJSONFields(t, official, got, "seed000_main.json")
}
