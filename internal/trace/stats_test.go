package trace

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

func TestComputeStats(t *testing.T) {
	// Expected values printed by numpy (np.diff, np.std / np.mean,
	// np.percentile) on the same requests.
	burst, err := loadFile(t, "burstgpt.csv", workload.NoElapsedLimit, Options{})
	require.NoError(t, err)
	got := ComputeStats(burst)
	assert.Equal(t, Stats{
		TracePath: "burstgpt.csv", TraceSHA256: burst.SHA256, Format: BurstGPT, Requests: 5,
		SpanS: 4567.25, MeanRatePerS: 0.0008758005364278285,
		PeakRate1sPerS: 1, PeakRate60sPerS: 2.0 / 60, InterarrivalCV: 1.2110267832730168,
		PromptTokens:    TokenStats{P50: 1200, P90: 1306, P99: 1309.6, Max: 1310},
		OutputTokens:    TokenStats{P50: 260, P90: 408, P99: 472.8, Max: 480},
		RequestsSkipped: map[string]int{SkipFailedResponse: 2},
	}, got)

	moon, err := loadFile(t, "mooncake.jsonl", workload.NoElapsedLimit, Options{})
	require.NoError(t, err)
	got = ComputeStats(moon)
	assert.Equal(t, 4, got.Requests)
	assert.InDelta(t, 0.09599846402457561, got.MeanRatePerS, 1e-15)
	assert.InDelta(t, 1.019781310732981, got.InterarrivalCV, 1e-14)
	assert.Equal(t, 2.0, got.PeakRate1sPerS, "two requests at 0")
	assert.Equal(t, 4.0/60, got.PeakRate60sPerS)
	assert.Equal(t, map[string]int{}, got.RequestsSkipped, "{} when nothing was skipped")
}

func TestComputeStatsWindowsAndUndefinedValues(t *testing.T) {
	tr := &Trace{Workload: workload.Workload{Requests: []workload.Request{
		req(0, 0, 1, 1), req(1, 0.5, 1, 1), req(2, 0.999999, 1, 1), req(3, 1, 1, 1), req(4, 1.4, 1, 1), req(5, 61, 1, 1)}}}
	s := ComputeStats(tr)
	assert.Equal(t, 4.0, s.PeakRate1sPerS, "[0.5, 1.5) holds four arrivals, [0, 1) three")
	assert.Equal(t, 5.0/60, s.PeakRate60sPerS, "61 s is past every 60 s window that holds 0")

	one := ComputeStats(&Trace{Workload: workload.Workload{Requests: []workload.Request{req(0, 0, 5, 7)}}})
	assert.Equal(t, 0.0, one.SpanS)
	assert.True(t, math.IsNaN(one.MeanRatePerS), "no rate over a zero span")
	assert.True(t, math.IsNaN(one.InterarrivalCV), "no gaps")
	assert.Equal(t, 1.0, one.PeakRate1sPerS)
	assert.Equal(t, TokenStats{P50: 5, P90: 5, P99: 5, Max: 5}, one.PromptTokens)

	same := ComputeStats(&Trace{Workload: workload.Workload{Requests: []workload.Request{req(0, 0, 5, 7), req(1, 0, 5, 7)}}})
	assert.True(t, math.IsNaN(same.InterarrivalCV), "gaps of mean zero")
	assert.True(t, math.IsNaN(same.MeanRatePerS))
}

func TestStatsTable(t *testing.T) {
	burst, err := loadFile(t, "burstgpt.csv", workload.NoElapsedLimit, Options{})
	require.NoError(t, err)
	s := ComputeStats(burst)
	assert.Equal(t, `trace                                burstgpt.csv
format                               burstgpt
requests                             5
span (s)                             4567.250
mean rate (1/s)                      0.0008758
peak rate, 1 s window (1/s)          1
peak rate, 60 s window (1/s)         0.03333
inter-arrival CV                     1.211
prompt tokens p50 / p90 / p99 / max  1200.0 / 1306.0 / 1309.6 / 1310
output tokens p50 / p90 / p99 / max  260.0 / 408.0 / 472.8 / 480
rows skipped                         failed_response 2
`, s.Table())
}
