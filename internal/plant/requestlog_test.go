package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestRequestLogChangesNothingElse(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	for _, opt := range []Options{{Stride: 1}, {Stride: 50}, {Summary: true}} {
		plain := simulateWith(t, requests, p, "chunked", "reactive", opt)
		logOpt := opt
		logOpt.RequestLog = true
		logged := simulateWith(t, requests, p, "chunked", "reactive", logOpt)
		require.Nil(t, plain.Log)
		require.NotNil(t, logged.Log)
		log := logged.Log
		logged.Log = nil
		sameResult(t, plain, logged, "%+v: the run with a request log is the run without", opt)
		require.Len(t, log.Records, len(requests))
		require.Len(t, log.ArrivalKVTokens, len(requests))
		assert.Equal(t, p.KVCapacityTokens, log.KVCapacityTokens)
		if !opt.Summary {
			assert.Equal(t, []RequestRecord(plain.Requests), log.Records)
		}
	}
}

// arrivalStep is the step that admits a request arriving at arrivalS in a
// run whose step ends are endS: the first step starting at or after it
// (within TimeEpsilonS).
func arrivalStep(endS []float64, arrivalS float64) int {
	for k := range endS {
		start := 0.0
		if k > 0 {
			start = endS[k-1]
		}
		if arrivalS <= start+TimeEpsilonS {
			return k
		}
	}
	return len(endS)
}

func TestRequestLogArrivalKVIsTheOccupancyAtTheStartOfTheArrivalStep(t *testing.T) {
	requests := smallWorkload(t)
	// A loaded run, so that arrivals find the KV cache in use.
	for i := range requests {
		requests[i].ArrivalTimeS /= 4
	}
	p := NewPlant(profile.Default())
	for _, pol := range stepperPolicies {
		full := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Stride: 1, RequestLog: true})
		summary := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Summary: true, RequestLog: true})
		assert.Equal(t, full.Log, summary.Log, "%v: a summary run keeps the same log", pol)
		busy := 0
		for i, r := range requests {
			// The occupancy at the end of the step before, which is the
			// occupancy at the start of the arrival step: arrivals add
			// empty requests.
			want := 0.0
			if k := arrivalStep(full.TimeS, r.ArrivalTimeS); k > 0 {
				want = full.KVTokens[k-1]
			}
			require.Equalf(t, want, full.Log.ArrivalKVTokens[i], "%v: request %d", pol, r.ID)
			if want > 0 {
				busy++
			}
		}
		assert.Greater(t, busy, len(requests)/2, "%v: most requests arrive at a busy KV cache", pol)
	}
}

func TestRequestLogOfAStepperIsSimulates(t *testing.T) {
	requests := sparseWorkload(t)
	p := NewPlant(profile.Default())
	for _, pol := range stepperPolicies {
		opt := Options{Summary: true, RequestLog: true}
		want := simulateWith(t, requests, p, pol.sched, pol.ctrl, opt)
		st := newTestStepper(t, p, pol.sched, pol.ctrl, opt)
		next := 0
		for {
			// Requests are added just before the step they arrive in.
			for next < len(requests) && requests[next].ArrivalTimeS <= float64(st.Steps()+1)*p.TimeStepS {
				require.NoError(t, st.Add(requests[next]))
				next++
			}
			done, err := st.Step()
			require.NoError(t, err)
			if done && next == len(requests) {
				break
			}
		}
		got, _ := st.Result()
		assert.Equal(t, want.Log, got.Log, "%v", pol)
	}
}

func TestStepLoopWithARequestLogAllocatesNothing(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	sim, err := startSimulation(requests, p, ChunkedPrefill{}, Reactive{}, Options{Summary: true, RequestLog: true})
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(2000, func() {
		done, err := sim.advance()
		require.NoError(t, err)
		require.False(t, done)
	})
	assert.Zero(t, allocs)
}
