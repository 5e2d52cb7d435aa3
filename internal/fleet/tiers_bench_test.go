package fleet

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// Size tiers of the fleet benchmarks that make bench tabulates
// (docs/BENCHMARKS.md): synthetic code-like traces of about a thousand,
// ten thousand and a hundred thousand requests on tierReplicas replicas of
// the embedded proxy, arriving tierReplicas times as fast as the code
// trace's (2.57 requests/s per replica). No shared data is needed.
const (
	tierSmall    = 1_000
	tierMedium   = 10_000
	tierLarge    = 100_000
	tierReplicas = 8
)

// BenchmarkFleetTiers simulates each tier on the fleet, summary only, with
// a state-free router (replicas in parallel) and a state-aware one
// (lock-step).
func BenchmarkFleetTiers(b *testing.B) {
	for _, router := range []string{RoundRobinName, LeastOutstandingName} {
		for _, n := range []int{tierSmall, tierMedium, tierLarge} {
			trace := plant.CodeTraceLike(1, float64(n)/(tierReplicas*2.57))
			trace.MeanRequestsPerS = tierReplicas * 2.57
			requests := trace.Requests()
			p := plant.NewPlant(nil)
			p.MaxSimulationTimeS = 2 * trace.DurationS
			b.Run(fmt.Sprintf("%s/requests=%d", router, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := NewRouter(router, DefaultRouterSeed)
					require.NoError(b, err)
					_, err = Simulate(requests, Config{
						Plant:   p,
						Groups:  []Group{{Replicas: tierReplicas, Profile: profile.Default(), Scheduler: "chunked", Controller: "reactive"}},
						Router:  r,
						Options: plant.Options{Summary: true},
					})
					require.NoError(b, err)
				}
			})
		}
	}
}
