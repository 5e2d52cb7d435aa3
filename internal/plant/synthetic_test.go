package plant

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestDefaultTraceIsGenerated(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, DefaultTraceConfig().WriteCSV(&buf))
	if *update {
		require.NoError(t, os.WriteFile(filepath.Join("default_trace.csv"), buf.Bytes(), 0o644))
	}
	require.Equal(t, buf.String(), string(defaultTraceCSV), "default_trace.csv is stale: go test -update")

	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	gen := DefaultTraceConfig().Requests()
	require.Len(t, w.Requests, len(gen))
	for i := range gen {
		gen[i].OriginalTimestamp = w.Requests[i].OriginalTimestamp
	}
	require.Equal(t, gen, w.Requests, "the CSV round trip keeps every request")
}

// TestDefaultRunIsHealthy is the first run a newcomer sees (`make run`:
// simulate --summary on the embedded defaults): every request completes
// and the proxy meets its SLOs at the 95th percentile.
func TestDefaultRunIsHealthy(t *testing.T) {
	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	prof := profile.Default()
	sched, err := NewScheduler("chunked")
	require.NoError(t, err)
	ctrl, err := NewController("max")
	require.NoError(t, err)
	report, err := Run(w, Config{Plant: NewPlant(prof), Scheduler: sched, Controller: ctrl, Options: Options{Summary: true}})
	require.NoError(t, err)
	m := report.Metrics
	n := len(w.Requests)
	span := w.Requests[n-1].ArrivalTimeS
	assert.InDelta(t, DefaultTraceRequestsPerS, float64(n)/span, 0.05, "requests per second")
	assert.Less(t, span, DefaultMaxSimulationTimeS/2, "arrivals end well before --max-sim-time")
	assert.Equal(t, 1.0, m.CompletedFraction)
	assert.Zero(t, m.UnfinishedRequestsAtEnd)
	assert.LessOrEqual(t, m.P95TTFTS, prof.TTFTSLOSeconds(), "p95 TTFT meets the SLO")
	assert.LessOrEqual(t, m.P95TPOTS, prof.TPOTSLOSeconds(), "p95 TPOT meets the SLO")
	assert.Less(t, m.TTFTViolationRate, 0.05)
	assert.Less(t, m.TPOTViolationRate, 0.01)
	assert.Zero(t, m.ThermalViolationC)
	assert.Zero(t, m.KVViolationTokens)

	isolated := 0.0
	for _, r := range w.Requests {
		isolated += float64(r.PromptTokens)/prof.Rate(profile.PhasePrefill, prof.MaxClockMHz()) +
			float64(r.OutputTokens)/prof.Rate(profile.PhaseDecode, prof.MaxClockMHz())
	}
	assert.InDelta(t, 0.2, isolated/span, 0.03, "offered utilization of isolated maximum-clock service")
}

func TestSyntheticTraceResemblesTheCodeTrace(t *testing.T) {
	gen := CodeTraceLike(DefaultTraceSeed, 3600).Requests()
	n := len(gen)
	span := gen[n-1].ArrivalTimeS
	rate := float64(n) / span
	assert.InDelta(t, 2.57, rate, 0.2, "requests per second (code trace: 2.57)")
	prompts := make([]float64, n)
	outputs := make([]float64, n)
	gaps := make([]float64, 0, n)
	for i, r := range gen {
		prompts[i], outputs[i] = float64(r.PromptTokens), float64(r.OutputTokens)
		if i > 0 {
			gaps = append(gaps, r.ArrivalTimeS-gen[i-1].ArrivalTimeS)
		}
	}
	slices.Sort(prompts)
	slices.Sort(outputs)
	assert.InDelta(t, 1100, prompts[n/2], 250, "median prompt (code trace: 1469)")
	assert.InDelta(t, 16, outputs[n/2], 5, "median output (code trace: 13)")
	assert.LessOrEqual(t, prompts[n-1], 7437.0)
	assert.GreaterOrEqual(t, outputs[0], 1.0)
	assert.Greater(t, gapsCV(gaps), 1.2, "arrivals are burstier than Poisson (code trace: much burstier)")
}

// gapsCV is the coefficient of variation of inter-arrival gaps (1 for
// Poisson arrivals).
func gapsCV(gaps []float64) float64 {
	mean, sq := 0.0, 0.0
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	return math.Sqrt(sq/float64(len(gaps))) / mean
}

func TestSyntheticTraceDependsOnlyOnItsSeed(t *testing.T) {
	a := CodeTraceLike(7, 600).Requests()
	b := CodeTraceLike(7, 600).Requests()
	c := CodeTraceLike(8, 600).Requests()
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}
