package fleet

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

func TestClosedLoopOverAFleetKeepsTheSlots(t *testing.T) {
	t.Parallel()
	gpu, _ := cards.BuiltinGPU(cards.DefaultGPU)
	model, _ := cards.BuiltinModel(cards.DefaultModel)
	batched := plant.NewBatchedService(gpu, model)
	requests := make([]plant.Request, 40)
	for i := range requests {
		requests[i] = plant.Request{ID: i, ArrivalTimeS: 0.01 * float64(i), PromptTokens: 300 + 7*i, OutputTokens: 20 + i%9}
	}
	for _, svc := range []plant.ServiceModel{{}, batched} {
		for _, router := range []string{RoundRobinName, LeastOutstandingName} {
			for _, slots := range []int{1, 5} {
				t.Run(fmt.Sprintf("%s, %s, %d slots", svc.Name(), router, slots), func(t *testing.T) {
					t.Parallel()
					cfg := defaultFleet(3, "chunked", "max")
					r, err := NewRouter(router, 1)
					require.NoError(t, err)
					cfg.Router = r
					cfg.Options.Service = svc
					cfg.MaxConcurrency = slots
					if svc.Batched() {
						cfg.Options.Engine.Preemption = plant.PreemptionRecompute
					}
					res, err := Simulate(requests, cfg)
					require.NoError(t, err)
					completions := make([]float64, 0, len(requests))
					for i, r := range res.Requests {
						require.False(t, math.IsNaN(r.CompletionTimeS), "request %d completes", i)
						want := requests[i].ArrivalTimeS
						if i >= slots {
							// Sent when the (i - slots + 1)-th completion frees a slot.
							slices.Sort(completions)
							want = max(want, completions[i-slots])
						}
						assert.InDelta(t, want, r.ArrivalTimeS, 1e-9, "request %d", i)
						completions = append(completions, r.CompletionTimeS)
					}
				})
			}
		}
	}
}
