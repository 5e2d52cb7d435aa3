package plant

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/testsupport"
)

func TestDefaultTraceIsGenerated(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, DefaultTraceConfig().WriteCSV(&buf))
	testsupport.CheckGolden(t, "default_trace.csv", buf.Bytes())

	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	gen := DefaultTraceConfig().Requests()
	require.Len(t, w.Requests, len(gen))
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
