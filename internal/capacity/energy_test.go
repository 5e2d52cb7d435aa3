package capacity

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// handRun is a fleet run of one replica built by hand: four requests, of
// which completed complete, 7200 J over four steps of 100, 200, 300 and
// 400 W (so a 7.2 s time step: 1000 W x 7.2 s = 7200 J).
func handRun(completed int) (*fleet.Result, []fleet.Group) {
	groups := []fleet.Group{{Replicas: 1, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"}}
	res := &fleet.Result{
		Metrics:    plant.Metrics{EnergyJ: 7200, CompletedFraction: float64(completed) / 4},
		Replicas:   []fleet.Replica{{Index: 0, Group: 0}},
		Assignment: []int{0, 0, 0, 0},
		Steps:      4,
		PowerW:     []float64{100, 200, 300, 400},
	}
	for i := range 4 {
		r := plant.RequestRecord{RequestID: i, ArrivalTimeS: 0, FirstTokenTimeS: math.NaN(), CompletionTimeS: math.NaN(), OutputTokens: 10}
		if i < completed {
			r.FirstTokenTimeS, r.CompletionTimeS = 1, 2
		}
		res.Requests = append(res.Requests, r)
	}
	return res, groups
}

func TestJudgeEnergyTotalsOnAHandCheckedRun(t *testing.T) {
	tests := []struct {
		name                    string
		completed               int
		perRequestJ, per1kKJ    float64 // NaN: undefined
		kWh, meanPowerW         float64
		attainment, completedFr float64
	}{
		// 7200 J / 3 requests = 2400 J = 2.4 kJ per request, 2400 kJ per
		// 1000; 7200 J / 3.6e6 = 0.002 kWh; 7200 J / (4 x 7.2 s) = 250 W.
		{"three of four completed", 3, 2400, 2400, 0.002, 250, 0.75, 0.75},
		{"all completed", 4, 1800, 1800, 0.002, 250, 1, 1},
		// No request completed: no energy per request (null), the energy
		// and the power stay.
		{"none completed", 0, math.NaN(), math.NaN(), 0.002, 250, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, groups := handRun(tt.completed)
			e := Judge(res, groups, plant.SLO{TTFTSeconds: 5, TPOTSeconds: 5})
			assert.Equal(t, tt.attainment, e.Attainment)
			assert.Equal(t, tt.completedFr, e.CompletedFraction)
			if math.IsNaN(tt.perRequestJ) {
				assert.True(t, math.IsNaN(e.EnergyPerRequestJ), "%v", e.EnergyPerRequestJ)
				assert.True(t, math.IsNaN(e.EnergyPer1kRequestsKJ), "%v", e.EnergyPer1kRequestsKJ)
			} else {
				assert.Equal(t, tt.perRequestJ, e.EnergyPerRequestJ)
				assert.Equal(t, tt.per1kKJ, e.EnergyPer1kRequestsKJ)
			}
			assert.Equal(t, tt.kWh, e.EnergyKWh)
			assert.Equal(t, tt.meanPowerW, e.MeanPowerW)
		})
	}
}

// TestJudgeEnergyTotalsFollowTheirDefinitions checks the definitions on
// simulated fleets: energy per request = energy_j / completed requests,
// kWh = energy_j / 3.6e6, mean power = energy_j / (steps x time step).
func TestJudgeEnergyTotalsFollowTheirDefinitions(t *testing.T) {
	requests := firstMinutes(t)
	for _, n := range []int{1, 2, 3} {
		cfg := proxyFleet(n)
		res, err := fleet.Simulate(requests, cfg)
		require.NoError(t, err)
		e := Judge(res, cfg.Groups, plant.SLO{TTFTSeconds: 5})
		completed := 0
		for i := range res.Requests {
			if res.Requests[i].Completed() {
				completed++
			}
		}
		require.Positive(t, completed)
		energyJ := res.Metrics.EnergyJ
		require.Positive(t, energyJ)
		assert.Equal(t, energyJ/float64(completed), e.EnergyPerRequestJ, "%d replicas", n)
		assert.Equal(t, e.EnergyPerRequestJ, e.EnergyPer1kRequestsKJ, "1000 x J / 1000: the same number")
		assert.Equal(t, energyJ/3.6e6, e.EnergyKWh, "%d replicas", n)
		durationS := float64(res.Steps) * cfg.Plant.TimeStepS
		assert.InEpsilon(t, energyJ/durationS, e.MeanPowerW, 1e-9, "%d replicas", n)
		assert.LessOrEqual(t, e.MeanPowerW, e.PeakPowerW)
		// The hour of energy at the mean power is the energy in kWh.
		assert.InEpsilon(t, e.EnergyKWh, e.MeanPowerW*durationS/3.6e6, 1e-9)
	}
}

func TestRunGivesEachControllerItsEnergyTotals(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.89, "max", "reactive")
	report, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	require.NotNil(t, report.Replicas)
	require.Len(t, report.Controllers, 2)
	for _, c := range report.Controllers {
		groups := []fleet.Group{{Replicas: *report.Replicas, Profile: profile.Default(), Scheduler: "chunked", Controller: c.Controller}}
		res, err := fleet.Simulate(requests, fleet.Config{Plant: study.Plant, Groups: groups, Router: mustRouter(t, study.Router),
			Options: plant.Options{Summary: true, SLO: study.SLO}})
		require.NoError(t, err)
		want := Judge(res, groups, study.SLO)
		assert.Equal(t, want.EnergyPerRequestJ, c.EnergyPerRequestJ, c.Controller)
		assert.Equal(t, want.EnergyPer1kRequestsKJ, c.EnergyPer1kRequestsKJ, c.Controller)
		assert.Equal(t, want.EnergyKWh, c.EnergyKWh, c.Controller)
		assert.Equal(t, want.MeanPowerW, c.MeanPowerW, c.Controller)
		assert.Positive(t, c.EnergyKWh)
	}
	assert.NotEqual(t, report.Controllers[0].EnergyKWh, report.Controllers[1].EnergyKWh, "each controller its own run")
	for _, e := range report.Evaluations {
		assert.Positive(t, e.EnergyPerRequestJ, "%d replicas", e.Replicas)
		assert.Positive(t, e.MeanPowerW, "%d replicas", e.Replicas)
	}
}

func mustRouter(t *testing.T, name string) fleet.Router {
	t.Helper()
	r, err := fleet.NewRouter(name, 0)
	require.NoError(t, err)
	return r
}

// TestShardRecordsRoundTripTheEnergyTotals writes the grid's evaluations
// as shards do (jsonout, one file per shard), reads them back and runs the
// search on them: the report, energy totals included, is the plain run's.
func TestShardRecordsRoundTripTheEnergyTotals(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.89, "max", "reactive")
	study.Search.MaxReplicas = 8
	want, err := Run(context.Background(), requests, study)
	require.NoError(t, err)

	grid, shards := shardRecords(t, study, requests, 2)
	dir := t.TempDir()
	var names []string
	for i, shard := range shards {
		var out []byte
		for _, r := range shard {
			out, err = jsonout.AppendLine(out, r)
			require.NoError(t, err)
		}
		for _, key := range energyTotalKeys {
			assert.Equal(t, len(shard), strings.Count(string(out), `"`+key+`":`), "every record carries %s", key)
		}
		name := filepath.Join(dir, "shard"+string(rune('1'+i))+".jsonl")
		require.NoError(t, os.WriteFile(name, out, 0o644))
		names = append(names, name)
	}
	known, err := grid.ReadEvaluations(names, nil)
	require.NoError(t, err)
	require.Len(t, known.Evaluations, len(grid.Sizes))
	cached := study
	cached.Search.Known = known.Evaluations
	got, err := Run(context.Background(), requests, cached)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	for i, e := range got.Evaluations {
		assert.Equal(t, want.Evaluations[i].EnergyKWh, e.EnergyKWh)
		assert.Equal(t, want.Evaluations[i].MeanPowerW, e.MeanPowerW)
		assert.Equal(t, want.Evaluations[i].EnergyPerRequestJ, e.EnergyPerRequestJ)
	}
}

func TestCapacityTableShowsTheEnergyTotals(t *testing.T) {
	answer := 2
	minimal := "reactive"
	eval := func(replicas int, meets bool, perRequestJ, kWh, meanW float64) Evaluation {
		return Evaluation{Replicas: replicas, Attainment: 0.95, MeetsTarget: meets, CompletedFraction: 1, P95TTFTS: 1, P99TTFTS: 2,
			EnergyPerOutputTokenJ: 1, PeakPowerW: 100, EnergyPerRequestJ: perRequestJ, EnergyPer1kRequestsKJ: perRequestJ,
			EnergyKWh: kWh, MeanPowerW: meanW}
	}
	doc := &Document{Report: &Report{
		SearchResult: SearchResult{TargetAttainment: 0.9, MaxReplicas: 8, Replicas: &answer,
			Evaluations: []Evaluation{eval(1, false, 20, 0.001, 40), eval(2, true, 31.403610971786073, 0.007187937622431034, 86.39925021953749)},
			NonMonotone: []Evaluation{}},
		ReplicasPerSize: 1, Router: fleet.RoundRobinName, SearchedWith: "max",
		Controllers: []ControllerEvaluation{
			{Controller: "max", Evaluation: eval(2, true, 31.403610971786073, 0.007187937622431034, 86.39925021953749)},
			{Controller: "min", Evaluation: eval(2, false, math.NaN(), 0.0071, 56.5)},
		},
		EnergyMinimalController: &minimal,
	}}
	doc.Best = doc.Evaluations[1]
	got := doc.Table()
	assert.Contains(t, got, "\nenergy at the answer, 2 replicas (per completed request):\n"+
		"controller  energy/request (J = kJ/1k requests)  energy (kWh)  mean power (W)\n"+
		"max                                       31.40      0.007188            86.4\n"+
		"min                                           -      0.007100            56.5\n")

	// An unreachable target: the best size's energy, under the search controller.
	doc.Replicas, doc.Controllers, doc.EnergyMinimalController = nil, []ControllerEvaluation{}, nil
	got = doc.Table()
	assert.Contains(t, got, "\nenergy of the best size, 2 replicas (per completed request):\n"+
		"controller  energy/request (J = kJ/1k requests)  energy (kWh)  mean power (W)\n"+
		"max                                       31.40      0.007188            86.4\n")
	assert.NotContains(t, got, "energy at the answer")
}
