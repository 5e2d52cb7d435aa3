package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// TestBuiltinFastPathsMatchTheGeneralPath runs every built-in scheduler and
// controller twice, as the plant knows them (asked in place, idle steps on
// the fast path) and hidden behind a user's type (asked through the
// interfaces with a copied observation, every step on the general path):
// the results must be identical, trajectory and records included. The
// workload has idle stretches long enough for the temperature to fall and
// the reactive controller to step down, and a hot plant that downshifts.
func TestBuiltinFastPathsMatchTheGeneralPath(t *testing.T) {
	requests := smallWorkload(t)
	// A pause of ten minutes, then the first requests again.
	last := requests[len(requests)-1].ArrivalTimeS
	for i, r := range requests[:40] {
		r.ID = len(requests) + i
		r.ArrivalTimeS += last + 600
		requests = append(requests, r)
	}
	p := NewPlant(profile.Default())
	p.ThermalLimitC = 40
	controllers := map[string]func() ClockController{
		"max":          func() ClockController { return MaxClock{} },
		"min":          func() ClockController { return MinClock{} },
		"fixed":        func() ClockController { return FixedClock{MHz: 1000} },
		"reactive":     func() ClockController { return Reactive{} },
		"race-to-idle": func() ClockController { return RaceToIdle{MHz: 1500} },
		"sampled": func() ClockController {
			c, err := NewSampleAndHold(Reactive{}, 0.7)
			require.NoError(t, err)
			return c
		},
	}
	engines := map[string]EngineOptions{
		"":                         {},
		"prefix cache, preemption": {PrefixCache: true, SharedPrefixTokens: 64, Preemption: PreemptionRecompute},
	}
	for _, s := range []Scheduler{StaticBatch{}, ContinuousBatch{}, ChunkedPrefill{}} {
		for name, c := range controllers {
			for engineName, engine := range engines {
				t.Run(s.Name()+"/"+name+"/"+engineName, func(t *testing.T) {
					opt := Options{Stride: 1, Engine: engine}
					fast, err := Simulate(requests, p, s, c(), opt)
					require.NoError(t, err)
					general, err := Simulate(requests, p, userScheduler{s}, userController{c()}, opt)
					require.NoError(t, err)
					assert.Equal(t, general.Trajectory, fast.Trajectory)
					assert.Equal(t, general.Requests, fast.Requests)
					assert.Equal(t, general.Metrics, fast.Metrics)
					assert.Equal(t, general.SLO, fast.SLO)
					assert.Equal(t, general.Engine, fast.Engine)
				})
			}
		}
	}
}

// overridingScheduler embeds a built-in scheduler and overrides Schedule:
// the plant must ask its Schedule, not the embedded fast path.
type overridingScheduler struct{ ChunkedPrefill }

func (overridingScheduler) Schedule(Observation) Action { return Action{Phase: profile.PhaseIdle} }

// overridingController embeds a built-in controller and overrides
// RequestClock.
type overridingController struct{ MaxClock }

func (overridingController) RequestClock(obs Observation) float64 { return obs.ClockLevelsMHz[0] }

func TestEmbeddedBuiltinsAreAskedThroughTheirOverrides(t *testing.T) {
	requests := smallWorkload(t)[:5]
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 30
	res, err := Simulate(requests, p, overridingScheduler{}, overridingController{}, Options{Stride: 1})
	require.NoError(t, err)
	assert.Zero(t, res.Metrics.CompletedFraction, "the overriding scheduler idles throughout")
	for _, mhz := range res.RequestedClockMHz {
		require.Equal(t, profile.Default().MinClockMHz(), mhz, "the overriding controller asks for the lowest level")
	}
}
