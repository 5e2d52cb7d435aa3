package capacity

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// firstMinutes is the first five minutes of the synthetic code-like trace
// (seed 2023), bursty enough that one proxy GPU cannot serve it.
func firstMinutes(t testing.TB) []plant.Request {
	var csv bytes.Buffer
	require.NoError(t, plant.CodeTraceLike(2023, 3600).WriteCSV(&csv))
	w, err := plant.LoadWorkload(&csv, "code-like", 300)
	require.NoError(t, err)
	return w.Requests
}

// proxyStudy is a capacity study of the embedded proxy at a 5 s TTFT.
func proxyStudy(target float64, controllers ...string) Capacity {
	return Capacity{
		Plant:       plant.NewPlant(nil),
		Unit:        []fleet.Group{{Replicas: 1, Profile: profile.Default(), Scheduler: "chunked"}},
		Router:      fleet.RoundRobinName,
		Controllers: controllers,
		SLO:         plant.SLO{TTFTSeconds: 5},
		Search:      SearchSettings{Target: target, Jobs: 2},
	}
}

// proxyFleet is a fleet of n replicas of the embedded proxy, chunked at
// the maximum clock.
func proxyFleet(n int) fleet.Config {
	return fleet.Config{
		Plant:  plant.NewPlant(nil),
		Groups: []fleet.Group{{Replicas: n, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"}},
	}
}

func TestJudgeAgreesWithTheSLOBlock(t *testing.T) {
	requests := firstMinutes(t)
	for _, n := range []int{1, 2, 3} {
		cfg := proxyFleet(n)
		res, err := fleet.Simulate(requests, cfg)
		require.NoError(t, err)
		slo := plant.SLO{TTFTSeconds: 5, TPOTSeconds: 0.03, E2ESeconds: 30}
		got := Judge(res, cfg.Groups, slo)
		want := plant.EvaluateSLO(res.Requests, slo, 1)
		assert.Equal(t, n, got.Replicas)
		assert.Equal(t, want.Attainment, got.Attainment, "%d replicas", n)
		assert.Equal(t, want.TTFTS.P99, got.P99TTFTS)
		assert.Equal(t, res.Metrics.P95TTFTS, got.P95TTFTS)
		assert.Equal(t, res.Metrics.EnergyPerOutputTokenJ, got.EnergyPerOutputTokenJ)
		assert.Equal(t, res.Metrics.PeakPowerW, got.PeakPowerW)
		assert.Equal(t, res.Metrics.CompletedFraction, got.CompletedFraction)
		// A zero objective is the profile's.
		assert.Equal(t, plant.EvaluateSLO(res.Requests, plant.ProfileSLO(profile.Default()), 1).Attainment,
			Judge(res, cfg.Groups, plant.SLO{}).Attainment)
	}
}

func TestJudgeUsesEachGroupsProfile(t *testing.T) {
	requests := firstMinutes(t)
	// A copy of the proxy with tighter SLOs.
	strict := *profile.Default()
	strict.BaselineTTFTS, strict.BaselineTPOTS = 0.1, 0.01
	groups := []fleet.Group{
		{Name: "a", Replicas: 1, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"},
		{Name: "b", Replicas: 1, Profile: &strict, Scheduler: "chunked", Controller: "max"},
	}
	res, err := fleet.Simulate(requests, fleet.Config{Plant: plant.NewPlant(nil), Groups: groups})
	require.NoError(t, err)
	met := 0
	for i := range res.Requests {
		slo := plant.ProfileSLO(groups[res.Replicas[res.Assignment[i]].Group].Profile)
		if slo.Met(&res.Requests[i]) {
			met++
		}
	}
	assert.Equal(t, float64(met)/float64(len(requests)), Judge(res, groups, plant.SLO{}).Attainment)
	assert.Less(t, Judge(res, groups, plant.SLO{}).Attainment,
		plant.EvaluateSLO(res.Requests, plant.ProfileSLO(profile.Default()), 1).Attainment, "group b is stricter")
	// Given objectives apply to every group.
	given := plant.SLO{TTFTSeconds: 5, TPOTSeconds: 0.05}
	assert.Equal(t, plant.EvaluateSLO(res.Requests, given, 1).Attainment, Judge(res, groups, given).Attainment)
}

func TestRunFindsTheSmallestFleetAndTheCheapestController(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.89, "max", "reactive", "min")
	used := 0
	study.Progress = func() { used++ }
	report, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	require.NotNil(t, report.Replicas)
	answer := *report.Replicas

	// Brute force: every size below the answer fails, the answer meets.
	for n := 1; n <= answer; n++ {
		cfg := proxyFleet(n)
		cfg.Options.SLO = study.SLO
		res, err := fleet.Simulate(requests, cfg)
		require.NoError(t, err)
		e := Judge(res, cfg.Groups, study.SLO)
		assert.Equal(t, n == answer, e.Meets(0.89), "%d replicas: attainment %v", n, e.Attainment)
	}
	assert.Equal(t, 1, report.ReplicasPerSize)
	assert.Equal(t, fleet.RoundRobinName, report.Router)
	assert.Equal(t, "max", report.SearchedWith)
	require.Len(t, report.Controllers, 3)
	found, _ := report.Answer()
	assert.Equal(t, found, report.Controllers[0].Evaluation, "the search's own evaluation")
	for i, c := range report.Controllers {
		assert.Equal(t, study.Controllers[i], c.Controller)
		assert.Equal(t, answer, c.Replicas)
	}
	// reactive meets 0.89 on two replicas and spends less than max.
	require.NotNil(t, report.EnergyMinimalController)
	assert.Equal(t, "reactive", *report.EnergyMinimalController)
	assert.True(t, report.Controllers[1].MeetsTarget)
	assert.Less(t, report.Controllers[1].EnergyPerOutputTokenJ, report.Controllers[0].EnergyPerOutputTokenJ)
	assert.False(t, report.Controllers[2].MeetsTarget, "min")
	assert.Equal(t, len(report.Evaluations)+2, used, "progress: each evaluation used")
	assert.LessOrEqual(t, used, study.MaxEvaluations())

	// The same study with other jobs and another router state gives the
	// same report.
	study.Progress, study.Search.Jobs = nil, 1
	again, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	assert.Equal(t, report, again)
}

func TestRunJobsDoNotChangeALockStepStudy(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.95, "max", "reactive")
	study.Router = fleet.LeastOutstandingName
	study.Search.Jobs = 1
	one, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	study.Search.Jobs = 3
	three, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	assert.Equal(t, one, three)
	assert.Equal(t, fleet.LeastOutstandingName, one.Router)
}

func TestRunUnreachable(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.9, "max", "reactive")
	study.SLO = plant.SLO{TTFTSeconds: 0.3}
	study.Search.MaxReplicas = 8
	report, err := Run(context.Background(), requests, study)
	var unreachable *UnreachableError
	require.ErrorAs(t, err, &unreachable)
	require.NotNil(t, report)
	assert.Nil(t, report.Replicas)
	assert.Equal(t, []int{1, 2, 4, 8}, sizesOf(report.Evaluations))
	assert.Empty(t, report.Controllers, "no answer, no comparison")
	assert.Nil(t, report.EnergyMinimalController)
	assert.Equal(t, report.Best, unreachable.Best)
	assert.Less(t, report.Best.Attainment, 0.9)
}

func TestRunMultipliesTheUnitFleet(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.95, "max", "min")
	study.Unit = []fleet.Group{
		{Name: "a", Replicas: 2, Profile: profile.Default(), Scheduler: "chunked"},
		{Name: "b", Replicas: 1, Profile: profile.Default(), Scheduler: "static", Controller: "reactive"},
	}
	report, err := Run(context.Background(), requests, study)
	require.NoError(t, err)
	assert.Equal(t, 3, report.ReplicasPerSize)
	require.NotNil(t, report.Replicas)
	answer := *report.Replicas
	// Size N is 2N replicas of group a under each controller and N of
	// group b, which keeps its own controller.
	for _, c := range report.Controllers {
		groups := []fleet.Group{
			{Name: "a", Replicas: 2 * answer, Profile: profile.Default(), Scheduler: "chunked", Controller: c.Controller},
			{Name: "b", Replicas: answer, Profile: profile.Default(), Scheduler: "static", Controller: "reactive"},
		}
		res, err := fleet.Simulate(requests, fleet.Config{Plant: plant.NewPlant(nil), Groups: groups,
			Options: plant.Options{Summary: true, SLO: study.SLO}})
		require.NoError(t, err)
		want := Judge(res, groups, study.SLO)
		want.Replicas, want.MeetsTarget = answer, want.Meets(0.95)
		assert.Equal(t, want, c.Evaluation, c.Controller)
	}
	// The largest size keeps the fleet within fleet.MaxReplicas.
	assert.Equal(t, DefaultMaxReplicas, study.maxSize())
	study.Search.MaxReplicas = fleet.MaxReplicas
	assert.Equal(t, fleet.MaxReplicas/3, study.maxSize())
	assert.Equal(t, MaxSearchSteps(fleet.MaxReplicas/3)+1, study.MaxEvaluations())
}

func TestRunRejectsBadStudies(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.9)
	_, err := Run(context.Background(), requests, study)
	assert.ErrorContains(t, err, "no controller")
	study = proxyStudy(0.9, "max")
	study.Router = "nearest"
	_, err = Run(context.Background(), requests, study)
	assert.ErrorContains(t, err, `unknown router "nearest"`)
	study = proxyStudy(math.NaN(), "max")
	_, err = Run(context.Background(), requests, study)
	assert.ErrorContains(t, err, "target attainment NaN")
	study = proxyStudy(0.9, "max")
	study.Unit[0].Replicas = 0
	_, err = Run(context.Background(), requests, study)
	assert.ErrorContains(t, err, "replicas 0")
}

func TestFleetViolationRatesJudgeByOptionsSLO(t *testing.T) {
	requests := firstMinutes(t)
	cfg := proxyFleet(2)
	byProfile, err := fleet.Simulate(requests, cfg)
	require.NoError(t, err)
	cfg.Options.SLO = plant.SLO{TTFTSeconds: 5, TPOTSeconds: 0.01}
	given, err := fleet.Simulate(requests, cfg)
	require.NoError(t, err)
	ttft, tpot, completed := 0, 0, 0
	for i := range given.Requests {
		if r := &given.Requests[i]; r.Completed() {
			completed++
			if r.TTFTS() > 5 {
				ttft++
			}
			if r.TPOTS() > 0.01 {
				tpot++
			}
		}
	}
	assert.Equal(t, float64(ttft)/float64(completed), given.Metrics.TTFTViolationRate)
	assert.Equal(t, float64(tpot)/float64(completed), given.Metrics.TPOTViolationRate)
	assert.NotEqual(t, byProfile.Metrics.TTFTViolationRate, given.Metrics.TTFTViolationRate)
	for k := range given.Replicas {
		assert.Equal(t, cfg.Options.SLO.OrProfile(profile.Default()).TTFTSeconds, given.Replicas[k].Result.SLO.TTFTSLOSeconds)
	}
}
