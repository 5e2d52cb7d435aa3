package capacity

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
)

// TestStopWhenLostKeepsTheSearchsDecisions: a capacity study that stops
// the fleets that cannot meet the target any more reaches the same
// answer through the same sizes, each meeting the target or not as in
// full simulations; a stopped fleet is marked, fails, and its numbers are
// null; the sizes that run whole keep every number, and the document does
// not depend on the jobs. Under both routing paths (round-robin's replicas in
// parallel, least-outstanding's in lock-step) and at two targets.
func TestStopWhenLostKeepsTheSearchsDecisions(t *testing.T) {
	requests := firstMinutes(t)
	for _, router := range []string{fleet.RoundRobinName, fleet.LeastOutstandingName} {
		for _, target := range []float64{0.9, 0.99} {
			t.Run(fmt.Sprintf("%s/target=%g", router, target), func(t *testing.T) {
				study := proxyStudy(target, "max")
				study.Router = router
				full, err := Run(context.Background(), requests, study)
				require.NoError(t, err)
				study.StopWhenLost = true
				stopped, err := Run(context.Background(), requests, study)
				require.NoError(t, err)
				require.Equal(t, *full.Replicas, *stopped.Replicas)
				require.Len(t, stopped.Evaluations, len(full.Evaluations))
				sawStop := false
				for i, s := range stopped.Evaluations {
					f := full.Evaluations[i]
					require.Equal(t, f.Replicas, s.Replicas)
					require.Equal(t, f.MeetsTarget, s.MeetsTarget, "%d replicas", s.Replicas)
					if !s.StoppedEarly {
						assert.Equal(t, f, s, "%d replicas", s.Replicas)
						continue
					}
					sawStop = true
					assert.False(t, s.MeetsTarget)
					assert.Less(t, f.Attainment, target, "%d replicas: the whole run fails too", s.Replicas)
					assert.True(t, math.IsNaN(s.Attainment))
					assert.True(t, math.IsNaN(s.P99TTFTS))
				}
				assert.True(t, sawStop, "the one-replica fleet cannot serve the trace: it stops")
				assert.False(t, stopped.Best.StoppedEarly)
				for _, jobs := range []int{1, 3} {
					study.Search.Jobs = jobs
					again, err := Run(context.Background(), requests, study)
					require.NoError(t, err)
					assert.Equal(t, describeReport(stopped), describeReport(again), "jobs %d", jobs)
				}
			})
		}
	}
}

// TestRunStops: a study returns its context's error once the
// context is done, instead of running to the end.
func TestRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, firstMinutes(t), proxyStudy(0.9, "max"))
	require.ErrorIs(t, err, context.Canceled)
}

// describeReport is r printed with its pointers' values (NaN compared as
// text).
func describeReport(r *Report) string {
	c := *r
	c.Replicas, c.EnergyMinimalController = nil, nil
	text := fmt.Sprintf("%#v", c)
	if r.Replicas != nil {
		text += fmt.Sprintf(" replicas %d", *r.Replicas)
	}
	if r.EnergyMinimalController != nil {
		text += " energy-minimal " + *r.EnergyMinimalController
	}
	return text
}
