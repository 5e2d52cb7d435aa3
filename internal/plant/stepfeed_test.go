package plant

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// TestSummarizingStepperIsSimulate runs summarizing Steppers, fed a stream
// or given each request at its arrival step, on a workload long enough for
// them to drop records many times: the result is Simulate's, and the
// records handed on are Simulate's records, in order, each once. A run cut
// by MaxSimulationTimeS hands on the requests that never arrived too.
func TestSummarizingStepperIsSimulate(t *testing.T) {
	requests := windowWorkload(t)
	full := NewPlant(profile.Default())
	full.MaxSimulationTimeS = 1e5
	cut := NewPlant(profile.Default())
	cut.MaxSimulationTimeS = requests[len(requests)/2].ArrivalTimeS
	for _, p := range []Plant{full, cut} {
		for _, pol := range []struct{ sched, ctrl string }{{"chunked", "reactive"}, {"static", "max"}, {"chunked", "mpc"}} {
			for _, fed := range []bool{true, false} {
				want := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Summary: true})
				records := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Stride: 1}).Requests
				st := newTestStepper(t, p, pol.sched, pol.ctrl, Options{Summary: true})
				var handed []RequestRecord
				st.Summarize(0, func(r *RequestRecord) { handed = append(handed, *r) })
				if fed {
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
				} else {
					next := stepAddingAtArrival(t, st, requests, p.TimeStepS, func(done bool, added int) bool {
						return done && (added == len(requests) || st.Expired())
					})
					for ; next < len(requests); next++ {
						require.NoError(t, st.Add(requests[next]))
					}
				}
				got, _ := st.Result()
				want.MPCDiagnostics, got.MPCDiagnostics = nil, nil // pointers, with solve times
				sameResult(t, want, got, "%v fed=%v", pol, fed)
				require.Equal(t, fmt.Sprintf("%+v", records), fmt.Sprintf("%+v", handed), "%v fed=%v", pol, fed)
			}
		}
	}
}

func TestFedStepperWithoutRequestsHasNoStep(t *testing.T) {
	st := newTestStepper(t, NewPlant(profile.Default()), "chunked", "max", Options{Summary: true})
	running, err := st.Feed(&sliceStream{}, 0, 0)
	require.NoError(t, err)
	require.False(t, running)
	require.NoError(t, st.Drain())
	res, totals := st.Result()
	require.Equal(t, Totals{}, totals)
	require.Zero(t, res.Steps)
	require.Equal(t, WorkloadChecksum(nil), res.WorkloadChecksum)
}
