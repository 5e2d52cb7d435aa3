package plant

import (
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// TestLendingStepperIsSimulate runs fed summarizing Steppers that keep no
// samples of their own, lent them back at Result by the receiver of their
// records: they keep none meanwhile, Result calls for them once, and the
// result is Simulate's. A Stepper that keeps its records lends nothing.
func TestLendingStepperIsSimulate(t *testing.T) {
	requests := windowWorkload(t)
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 1e5
	for _, pol := range []struct{ sched, ctrl string }{{"chunked", "reactive"}, {"static", "max"}} {
		want := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Summary: true})
		st := newTestStepper(t, p, pol.sched, pol.ctrl, Options{Summary: true})
		var ttft, tpot, latency []float64
		lent := 0
		require.True(t, st.LendSamples(func() ([]float64, []float64, []float64) {
			lent++
			return ttft, tpot, latency
		}))
		st.Summarize(0, func(r *RequestRecord) {
			if r.Completed() {
				ttft, tpot, latency = append(ttft, r.TTFTS()), append(tpot, r.TPOTS()), append(latency, r.LatencyS())
			}
		})
		running, err := st.Feed(&sliceStream{requests}, len(requests), 0)
		require.NoError(t, err)
		require.True(t, running)
		for {
			done, err := st.Step()
			require.NoError(t, err)
			if done {
				break
			}
		}
		require.NoError(t, st.Drain())
		require.NotEmpty(t, latency, "%v", pol)
		require.Zero(t, cap(st.sim.requests.latency), "%v: kept samples", pol)
		got, _ := st.Result()
		require.Equal(t, 1, lent, "%v", pol)
		sameResult(t, want, got, "%v", pol)
	}

	st := newTestStepper(t, p, "chunked", "max", Options{Summary: true, RequestLog: true})
	require.False(t, st.LendSamples(func() ([]float64, []float64, []float64) {
		panic("lent to a Stepper that keeps its records")
	}))
	require.Nil(t, st.sim.lent)
}
