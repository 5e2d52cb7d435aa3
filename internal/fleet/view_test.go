package fleet

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure/figuretest"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// runForFigure runs the embedded trace's first maxElapsed seconds on
// replicas replicas with controller, keeping every step, as simulate --plot
// does.
func runForFigure(t *testing.T, replicas int, controller string, maxElapsed float64, slo plant.SLO) *Report {
	t.Helper()
	w, err := plant.DefaultTrace(maxElapsed)
	require.NoError(t, err)
	r, err := Run(w, RunConfig{Config: Config{Plant: plant.NewPlant(profile.Default()), Groups: []Group{
		{Name: "g", Replicas: replicas, Profile: profile.Default(), Scheduler: "chunked", Controller: controller},
	}, Options: plant.Options{Stride: 1, SLO: slo}}})
	require.NoError(t, err)
	return r
}

func TestFleetFigureJudgesByTheSLOFlags(t *testing.T) {
	r := runForFigure(t, 2, "max", 60, plant.SLO{TTFTSeconds: 0.3, TPOTSeconds: 0.008, E2ESeconds: 1})
	assert.Equal(t, &plant.SLO{TTFTSeconds: 0.3, TPOTSeconds: 0.008, E2ESeconds: 1}, sharedSLO(r.Result))
	fig := r.Figure(0, 60)
	assert.Contains(t, fig.Title, ", --max-elapsed 60 s\n")
	require.Len(t, fig.Columns[1].Panels, 4, "TTFT, TPOT, end-to-end latency, requests routed")
	figuretest.RequirePanelsDrawn(t, fig, 15*96, 12*96, 300)

	r.Result.Replicas[1].Result.SLO.TTFTSLOSeconds = 0.5
	assert.Nil(t, sharedSLO(r.Result), "replicas judged by different objectives: no line")
}

func TestFleetClockPanelDrawsEachReplicasPlan(t *testing.T) {
	r := runForFigure(t, 2, "mpc", 120, plant.SLO{})
	title, _, series, _ := replicaClocks(r)
	assert.Contains(t, title, "gaps: no plan held")
	require.Len(t, series, 4, "a plan and the realized clock per replica")
	for k := range 2 {
		plan, realized := series[2*k], series[2*k+1]
		levels := r.Result.Replicas[k].Result.PlanLevels(r.Plant.TimeStepS)
		assert.True(t, plan.Steps && realized.Steps, "levels, not lines through points")
		assert.Equal(t, levels.EdgesS, plan.X)
		assert.True(t, slices.EqualFunc(levels.PlanMHz, plan.Y, sameFloat), "replica %d: its plan", k)
		assert.True(t, slices.EqualFunc(levels.RealizedMHz, realized.Y, sameFloat), "replica %d: its realized clock", k)
		gaps := 0
		for _, v := range plan.Y {
			if math.IsNaN(v) {
				gaps++
			}
		}
		assert.Positive(t, gaps, "replica %d idles: its plan has gaps", k)
		assert.Less(t, gaps, len(plan.Y), "replica %d plans", k)
	}

	title, _, series, _ = replicaClocks(runForFigure(t, 2, "max", 60, plant.SLO{}))
	assert.Equal(t, "GPU clock per replica", title)
	require.Len(t, series, 2)
	assert.Equal(t, "replica 0: 10 s mean", series[0].Name)

	title, _, series, _ = replicaClocks(runForFigure(t, maxReplicaLines+1, "mpc", 60, plant.SLO{}))
	assert.Contains(t, title, "plans not drawn")
	require.Len(t, series, 3, "highest, mean and lowest")
}

// sameFloat says whether a and b are equal or both NaN.
func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// TestFleetTableCountsTheFleetsRequests: the fleet row's requests are the
// requests routed to its replicas, whether the run held every request's
// record or streamed the trace (no records: it showed 0).
func TestFleetTableCountsTheFleetsRequests(t *testing.T) {
	w, err := plant.DefaultTrace(120)
	require.NoError(t, err)
	cfg := RunConfig{Config: Config{Plant: plant.NewPlant(profile.Default()), Groups: []Group{
		{Name: "g", Replicas: 2, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"},
	}, Options: plant.Options{Summary: true}}}
	held, err := Run(w, cfg)
	require.NoError(t, err)
	streamed, err := RunStreamContext(context.Background(), heldSource{w}, cfg)
	require.NoError(t, err)
	require.Empty(t, streamed.Result.Requests, "a streamed run keeps no request records")
	tests := []struct {
		name   string
		report *Report
	}{{"held", held}, {"streamed", streamed}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.report
			routed := r.Replicas[0].RequestsRouted + r.Replicas[1].RequestsRouted
			require.Equal(t, len(w.Requests), routed)
			lines := strings.Split(r.Table(), "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "fleet  ") })
			require.GreaterOrEqual(t, i, 0, "the fleet row")
			assert.Regexp(t, `^fleet +`+strconv.Itoa(routed)+`  `, lines[i])
		})
	}
}

// TestDisaggregatedFigureNamesThePools: a disaggregated fleet's figure
// says how many replicas each pool has, and names each replica's pool in
// the legends and the bars.
func TestDisaggregatedFigureNamesThePools(t *testing.T) {
	w, err := plant.DefaultTrace(60)
	require.NoError(t, err)
	cfg := disaggFleet(2, 1, Link{BandwidthGBps: 25})
	cfg.Options = plant.Options{Stride: 1}
	r, err := Run(w, RunConfig{Config: cfg})
	require.NoError(t, err)
	fig := r.Figure(0, 60)
	assert.Contains(t, fig.Title, ", disaggregated: 2 prefill (P) + 1 decode (D),")
	var names []string
	for _, s := range replicaQueues(r, stepEndTimes(r.Result.Steps, r.Plant.TimeStepS)) {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"replica 0 (prefill)", "replica 1 (prefill)", "replica 2 (decode)"}, names)
	figuretest.RequirePanelsDrawn(t, fig, 15*96, 12*96, 300)
	assert.Equal(t, []string{"", ""}, (*DisaggResult)(nil).roles(2), "a fleet without pools")
}
