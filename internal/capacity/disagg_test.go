package capacity

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// disaggStudy is a disaggregated study of the batched model on the
// embedded trace's first minutes, both pools of the default profile.
func disaggStudy(t *testing.T, target float64, controllers ...string) (DisaggStudy, []plant.Request) {
	gpu, ok := cards.BuiltinGPU("L4")
	require.True(t, ok)
	model, ok := cards.BuiltinModel(cards.DefaultModel)
	require.True(t, ok)
	w, err := plant.DefaultTrace(300)
	require.NoError(t, err)
	for i := range w.Requests {
		w.Requests[i].ArrivalTimeS /= 6 // six times the load: a few replicas a pool
	}
	pools, err := DisaggUnit([]fleet.Group{{Replicas: 1, Profile: profile.Default(), Scheduler: "continuous"}})
	require.NoError(t, err)
	svc := plant.NewBatchedService(gpu, model)
	return DisaggStudy{
		Capacity: Capacity{Plant: plant.NewPlant(nil), Unit: pools, Router: fleet.LeastOutstandingName, RouterSeed: 1,
			Controllers: controllers, Service: svc, SLO: plant.SLO{}.ObjectivesFor(nil, svc),
			Search: SearchSettings{Target: target, MaxReplicas: 16, Jobs: 2}},
		Link: fleet.Link{BandwidthGBps: 25},
	}, w.Requests
}

// TestDisaggStudyFindsTheFewestGPUs: the answer meets the target, one
// decode replica fewer does not, no split of fewer GPUs the search
// simulated meets it, and the pool controllers are compared at the answer.
func TestDisaggStudyFindsTheFewestGPUs(t *testing.T) {
	for _, target := range []float64{0.9, 0.97} {
		c, requests := disaggStudy(t, target, "max", "fixed:1500")
		report, err := RunDisagg(context.Background(), requests, c)
		require.NoError(t, err)
		require.NotNil(t, report.Replicas)
		p, d := *report.PrefillReplicas, *report.DecodeReplicas
		t.Logf("target %v: %d prefill + %d decode replicas, %d splits simulated", target, p, d, len(report.Evaluations))
		assert.Equal(t, p+d, *report.Replicas)
		byShape := map[[2]int]SplitEvaluation{}
		for _, e := range report.Evaluations {
			byShape[[2]int{e.PrefillReplicas, e.DecodeReplicas}] = e
			assert.Equal(t, e.PrefillReplicas+e.DecodeReplicas, e.Replicas)
			if e.PrefillReplicas+e.DecodeReplicas < p+d {
				assert.False(t, e.MeetsTarget, "a split of fewer GPUs meets the target: %+v", e)
			}
		}
		answer, ok := byShape[[2]int{p, d}]
		require.True(t, ok)
		assert.True(t, answer.MeetsTarget)
		if below, ok := byShape[[2]int{p, d - 1}]; d > 1 {
			require.True(t, ok, "the split one decode replica smaller was simulated")
			assert.False(t, below.MeetsTarget)
		}
		// Every prefill size below the total was searched.
		for q := 1; q < p+d; q++ {
			assert.True(t, func() bool {
				for shape := range byShape {
					if shape[0] == q {
						return true
					}
				}
				return false
			}(), "prefill size %d searched", q)
		}
		require.Len(t, report.PoolControllers, 4)
		assert.Equal(t, PoolControllers{"max", "max"}, report.PoolControllers[0].PoolControllers)
		assert.Equal(t, answer.Evaluation, report.PoolControllers[0].Evaluation)
		if report.EnergyMinimalPoolControllers != nil {
			for _, e := range report.PoolControllers {
				if e.MeetsTarget {
					assert.LessOrEqual(t, func() float64 {
						for _, f := range report.PoolControllers {
							if f.PoolControllers == *report.EnergyMinimalPoolControllers {
								return f.EnergyPerOutputTokenJ
							}
						}
						return 0
					}(), e.EnergyPerOutputTokenJ)
				}
			}
		}
	}
}

// TestDisaggStudyUnreachable: a target no split reaches within the cap
// comes back as a report without an answer and a DisaggUnreachableError
// naming the best split.
func TestDisaggStudyUnreachable(t *testing.T) {
	c, requests := disaggStudy(t, 1, "min")
	c.DecodeCap = 2
	report, err := RunDisagg(context.Background(), requests, c)
	var unreachable *DisaggUnreachableError
	require.ErrorAs(t, err, &unreachable)
	assert.Nil(t, report.Replicas)
	assert.Empty(t, report.PoolControllers)
	assert.NotEmpty(t, report.Evaluations)
	assert.Contains(t, err.Error(), "no disaggregated fleet searched reaches attainment 1")
}

// TestDisaggUnit: one group is both pools; a fleet file gives a prefill
// then a decode group; anything else is refused.
func TestDisaggUnit(t *testing.T) {
	prof := profile.Default()
	pools, err := DisaggUnit([]fleet.Group{{Name: "g", Replicas: 3, Profile: prof, Controller: "max"}})
	require.NoError(t, err)
	assert.Equal(t, []string{fleet.RolePrefill, fleet.RoleDecode}, []string{pools[0].Role, pools[1].Role})
	assert.Equal(t, []int{1, 1}, []int{pools[0].Replicas, pools[1].Replicas})
	_, err = DisaggUnit([]fleet.Group{{Role: fleet.RoleDecode}, {Role: fleet.RolePrefill}})
	require.ErrorContains(t, err, "a prefill group then a decode group")
	_, err = DisaggUnit([]fleet.Group{{}, {}})
	require.Error(t, err)
}

// TestDisaggStudyDoesNotDependOnJobs: the report lists the splits the
// searches' decisions used, each once, not those spare jobs simulated
// ahead: the same for any --jobs.
func TestDisaggStudyDoesNotDependOnJobs(t *testing.T) {
	var want *DisaggReport
	for _, jobs := range []int{1, 2, 5} {
		c, requests := disaggStudy(t, 0.9, "max", "fixed:1500")
		c.Search.Jobs = jobs
		report, err := RunDisagg(context.Background(), requests, c)
		require.NoError(t, err)
		seen := map[[2]int]bool{}
		for _, e := range report.Evaluations {
			shape := [2]int{e.PrefillReplicas, e.DecodeReplicas}
			assert.False(t, seen[shape], "split %v listed twice", shape)
			seen[shape] = true
		}
		if want == nil {
			want = report
			continue
		}
		assert.Equal(t, want, report, "jobs %d", jobs)
	}
}

// TestDisaggStudyCountsItsProgress: Progress counts each split the
// searches used and each pair of pool controllers run at the answer,
// within MaxEvaluations, whatever the jobs.
func TestDisaggStudyCountsItsProgress(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		c, requests := disaggStudy(t, 0.9, "max", "fixed:1500")
		c.Search.Jobs = jobs
		calls := 0
		c.Progress = func() { calls++ }
		report, err := RunDisagg(context.Background(), requests, c)
		require.NoError(t, err)
		assert.Equal(t, len(report.Evaluations)+len(report.PoolControllers), calls, "jobs %d", jobs)
		assert.LessOrEqual(t, calls, c.MaxEvaluations())
		assert.Equal(t, 2*16*MaxSearchSteps(16)+4, c.MaxEvaluations(), "16 replicas a pool at most, two controllers a pool")
	}
}
