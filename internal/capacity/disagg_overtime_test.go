package capacity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// disaggStudyOf is a study of requests, --disaggregated (disaggStudy's
// pools and link, the mixed fleet one replica of their profile) and over
// windows of windowS seconds.
func disaggStudyOf(t *testing.T, requests []plant.Request, target, windowS float64) *Study {
	d, _ := disaggStudy(t, target, "max")
	mixed := d.Capacity
	mixed.Unit = []fleet.Group{{Replicas: 1, Profile: profile.Default(), Scheduler: "continuous"}}
	return &Study{Capacity: mixed, workload: plant.Workload{Requests: requests}, disagg: &d, overTimeS: windowS, jobs: 2}
}

// busyMinute is the embedded trace's first 300 s at six times the load:
// 50 s of arrivals needing a few replicas a pool.
func busyMinute(t *testing.T) []plant.Request {
	_, requests := disaggStudy(t, 0.9)
	return requests
}

// TestDisaggOverTimeIsEachWindowsStaticStudy: each window of the
// disaggregated plan is the answer of capacity --disaggregated on that
// window's requests alone (re-timed to start at 0), and the document puts
// the whole trace's static disaggregated study beside the plan.
func TestDisaggOverTimeIsEachWindowsStaticStudy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests func(t *testing.T) []plant.Request
		target   float64
		windowS  float64
	}{
		{"busy windows", busyMinute, 0.9, 10},
		{"busy windows, a higher target", busyMinute, 0.97, 25},
		{"an empty window between", func(*testing.T) []plant.Request { return arrivingAt(0, 1, 2, 130, 131) }, 0.9, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests := tc.requests(t)
			study := disaggStudyOf(t, requests, tc.target, tc.windowS)
			doc, err := study.RunOverTime(context.Background(), nil, Progress{})
			require.NoError(t, err)
			require.NotNil(t, doc.Disaggregated)
			plan := doc.Disaggregated.Plan
			windows, err := SplitWindows(requests, tc.windowS)
			require.NoError(t, err)
			require.Len(t, plan.Windows, len(windows))
			prefill, decode := 0, 0
			for k, w := range windows {
				row := plan.Windows[k]
				assert.Equal(t, doc.Plan.Windows[k].Requests, row.Requests)
				assert.Equal(t, [3]float64{float64(k), w.StartS, w.EndS}, [3]float64{float64(row.Window), row.StartS, row.EndS})
				prefill, decode = prefill+row.PrefillReplicas, decode+row.DecodeReplicas
				if w.Requests() == 0 {
					assert.Zero(t, row.PrefillReplicas+row.DecodeReplicas+row.Replicas+row.Simulations, "a window without requests needs no replica")
					assert.True(t, row.MeetsTarget)
					assert.True(t, math.IsNaN(row.Attainment))
					continue
				}
				alone := slices.Clone(requests[w.First:w.Last])
				for i := range alone {
					alone[i].ArrivalTimeS -= w.StartS
				}
				one := *study
				one.workload.Requests = alone
				// The window's search on its share of the jobs: the splits
				// simulated beside those the search needs depend on them.
				one.Search.Jobs = max(1, study.jobs/len(windows))
				static, err := one.Run(context.Background(), nil, Progress{})
				require.NoError(t, err)
				answer, ok := static.Disaggregated.Answer()
				require.True(t, ok, "window %d", k)
				assert.Equal(t, [2]int{answer.PrefillReplicas, answer.DecodeReplicas}, [2]int{row.PrefillReplicas, row.DecodeReplicas}, "window %d", k)
				assert.Equal(t, answer.Replicas, row.Replicas)
				assert.True(t, row.MeetsTarget)
				assert.Equal(t, answer.Attainment, row.Attainment)
				assert.Equal(t, answer.P99TTFTS, row.P99TTFTS)
				assert.Equal(t, answer.EnergyKWh, row.EnergyKWh)
				assert.Equal(t, len(static.Disaggregated.Evaluations), row.Simulations)
			}
			assert.InDelta(t, float64(prefill)*tc.windowS/3600, plan.PrefillReplicaHours, 1e-12)
			assert.InDelta(t, float64(decode)*tc.windowS/3600, plan.DecodeReplicaHours, 1e-12)
			assert.InDelta(t, plan.PrefillReplicaHours+plan.DecodeReplicaHours, plan.ReplicaHours, 1e-12)
			assert.Zero(t, plan.UnreachableWindows)

			static, err := study.Run(context.Background(), nil, Progress{})
			require.NoError(t, err)
			assert.Equal(t, static.Disaggregated, doc.Disaggregated.Static, "the static study is capacity --disaggregated's own")
			require.NotNil(t, doc.Disaggregated.StaticReplicaHours)
			assert.InDelta(t, float64(*static.Disaggregated.Replicas*len(windows))*tc.windowS/3600, *doc.Disaggregated.StaticReplicaHours, 1e-12)
			assert.InDelta(t, plan.ReplicaHours / *doc.Disaggregated.StaticReplicaHours, *doc.Disaggregated.PlanToStaticReplicaHours, 1e-12)
		})
	}
}

// TestDisaggOverTimeDoesNotDependOnJobs: the plans on 1, 2 and 5 jobs are
// the same.
func TestDisaggOverTimeDoesNotDependOnJobs(t *testing.T) {
	study := disaggStudyOf(t, busyMinute(t), 0.9, 10)
	plan := func(jobs int) string {
		mixed, dplan, err := RunDisaggOverTime(context.Background(), study.workload.Requests, study.Capacity, study.disagg.Unit, study.disagg.Link, 10, jobs, nil)
		require.NoError(t, err)
		return fmt.Sprintf("%+v %+v", mixed, dplan)
	}
	want := plan(1)
	for _, jobs := range []int{2, 5} {
		assert.Equal(t, want, plan(jobs), "%d jobs", jobs)
	}
}

// TestDisaggOverTimeUnreachableWindows: windows no split serves hold the
// split of best attainment, and come with the error of the mixed plan's
// style, the disaggregated one's; a mixed plan's unreachable windows come
// first.
func TestDisaggOverTimeUnreachableWindows(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(s *Study)
		mixed       bool // the mixed windows are unreachable too
		unreachable int
		err         string
	}{
		{"a KV link too slow for the TTFT objective", func(s *Study) { s.disagg.Link.LatencyS = 5 }, false, 2,
			"2 of 3 windows reach attainment 0.9 with no disaggregated fleet searched: the disaggregated plan holds the split of their best attainment (meets_target false)"},
		{"a TTFT objective below any prefill", func(s *Study) { s.SLO.TTFTSeconds = 1e-4 }, true, 2,
			"2 of 3 windows reach attainment 0.9 with no fleet of at most 4 replicas: the plan holds the size of their best attainment (meets_target false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			study := disaggStudyOf(t, arrivingAt(0, 1, 2, 130, 131), 0.9, 60)
			study.Search.MaxReplicas = 4
			tc.change(study)
			mixed, plan, err := RunDisaggOverTime(context.Background(), study.workload.Requests, study.Capacity, study.disagg.Unit, study.disagg.Link, 60, 2, nil)
			var unreachable *UnreachableWindowsError
			require.ErrorAs(t, err, &unreachable)
			assert.EqualError(t, err, tc.err)
			assert.Equal(t, !tc.mixed, unreachable.Disaggregated)
			require.NotNil(t, mixed)
			require.NotNil(t, plan)
			assert.Equal(t, tc.unreachable, plan.UnreachableWindows)
			for _, k := range []int{0, 2} {
				row := plan.Windows[k]
				assert.False(t, row.MeetsTarget, "window %d", k)
				assert.GreaterOrEqual(t, row.PrefillReplicas, 1, "window %d: the best split", k)
				assert.GreaterOrEqual(t, row.DecodeReplicas, 1, "window %d: the best split", k)
				assert.Equal(t, row.PrefillReplicas+row.DecodeReplicas, row.Replicas)
			}
			assert.True(t, plan.Windows[1].MeetsTarget, "the empty window")
		})
	}
}

func TestDisaggPlanScheduleCSVs(t *testing.T) {
	for _, tc := range []struct {
		name            string
		plan            DisaggPlan
		prefill, decode string
	}{
		{"hours, an empty one", DisaggPlan{Windows: []DisaggWindow{
			{PlanWindow: PlanWindow{StartS: 0}, PrefillReplicas: 3, DecodeReplicas: 1},
			{PlanWindow: PlanWindow{StartS: 3600}},
			{PlanWindow: PlanWindow{StartS: 7200}, PrefillReplicas: 2, DecodeReplicas: 2},
		}}, "start_s,replicas\n0,3\n3600,0\n7200,2\n", "start_s,replicas\n0,1\n3600,0\n7200,2\n"},
		{"tenths", DisaggPlan{Windows: []DisaggWindow{
			{PlanWindow: PlanWindow{StartS: 0}, PrefillReplicas: 1, DecodeReplicas: 4},
			{PlanWindow: PlanWindow{StartS: 0.30000000000000004}, PrefillReplicas: 5, DecodeReplicas: 6},
		}}, "start_s,replicas\n0,1\n0.30000000000000004,5\n", "start_s,replicas\n0,4\n0.30000000000000004,6\n"},
		{"no window", DisaggPlan{}, "start_s,replicas\n", "start_s,replicas\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefill, decode := tc.plan.ScheduleCSVs()
			assert.Equal(t, tc.prefill, string(prefill))
			assert.Equal(t, tc.decode, string(decode))
			for _, data := range [][]byte{prefill, decode} {
				_, _, err := readSchedule(data)
				require.NoError(t, err)
				if len(tc.plan.Windows) > 0 {
					_, err = fleet.ParseSchedule("plan.csv", data)
					assert.NoError(t, err, "what an autoscaler reads")
				}
			}
		})
	}
}
