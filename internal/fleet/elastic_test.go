package fleet

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// elasticFleet is defaultFleet made elastic under a.
func elasticFleet(n int, a Autoscaler, min, max int) Config {
	cfg := defaultFleet(max1(n), "chunked", "reactive")
	cfg.Scaling = &Scaling{Autoscaler: a, MinReplicas: min, MaxReplicas: max, InitialReplicas: n,
		IntervalS: DefaultScaleIntervalS, ProvisionS: DefaultProvisionS, LoadS: DefaultLoadS,
		GPUCostPerHour: DefaultGPUCostPerHour, EnergyPricePerKWh: DefaultEnergyPricePerKWh}
	return cfg
}

func max1(n int) int { return max(1, n) }

// TestStaticElasticIsTodaysFleet: the static autoscaler runs the elastic
// engine and gives today's fleet bit for bit, on every router and both
// service models.
func TestStaticElasticIsTodaysFleet(t *testing.T) {
	requests := embeddedTrace(t)[:600]
	for _, router := range RouterNames {
		if NeedsPrefixCache(router) {
			continue // it needs the prefix cache, whose engine report bits() prints as a pointer (TestPrefixAwareOnAStaticElasticFleet runs it)
		}
		for _, batched := range []bool{false, true} {
			t.Run(router, func(t *testing.T) {
				run := func(scaled bool) *Result {
					cfg := defaultFleet(3, "chunked", "reactive")
					if scaled {
						cfg = elasticFleet(3, Static{}, 1, 8)
					}
					cfg.Options = plant.Options{Stride: 7}
					if batched {
						gpu, _ := cards.BuiltinGPU(cards.DefaultGPU)
						model, _ := cards.BuiltinModel(cards.DefaultModel)
						cfg.Options.Service = plant.NewBatchedService(gpu, model)
					}
					r, err := NewRouter(router, 3)
					require.NoError(t, err)
					cfg.Router = r
					res, err := Simulate(requests, cfg)
					require.NoError(t, err)
					return res
				}
				want, got := run(false), run(true)
				requireSameElastic(t, want, got)
				require.NotNil(t, got.Scaling)
				assert.Empty(t, got.Scaling.Events)
				require.Len(t, got.Scaling.Lifecycles, 3)
				for _, l := range got.Scaling.Lifecycles {
					assert.Equal(t, 0.0, l.StartedS)
					assert.True(t, math.IsNaN(l.ReleasedS))
					assert.InDelta(t, got.Scaling.EndS, l.BilledS, 1e-9)
				}
			})
		}
	}
}

// requireSameElastic is requireSameFleet, the replicas' service blocks
// (pointers, which bits would print as addresses) compared by value.
func requireSameElastic(t *testing.T, want, got *Result) {
	t.Helper()
	for k := range want.Replicas {
		if k < len(got.Replicas) {
			w, g := *want.Replicas[k].Result, *got.Replicas[k].Result
			require.Equal(t, w.Service, g.Service, "replica %d", k)
			w.Service, g.Service = nil, nil
			want.Replicas[k].Result, got.Replicas[k].Result = &w, &g
		}
	}
	requireSameFleet(t, want, got)
}
