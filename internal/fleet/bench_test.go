package fleet

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/sharedtest"
)

// Benchmark sizes: the whole Azure 2023 code trace (8819 requests, one
// hour, un-normalized) on fleets of 4, 16 and 64 L4s, and a synthetic day
// of about one million requests on 16 replicas.
var codeTraceFleets = []int{4, 16, 64}

const (
	oneDayS        = 86_400.0
	oneDayRequests = 1_000_000
	oneDayReplicas = 16
)

// BenchmarkFleetCodeTrace simulates the code trace on the reference's L4
// aggregate profile (chunked, max clock), summary only, with a state-free
// router (parallel replicas) and a state-aware one (lock-step).
func BenchmarkFleetCodeTrace(b *testing.B) {
	requests := loadCodeTrace(b, sharedtest.CodeTrace(b), 0)
	prof, err := profile.Load(sharedtest.Reference(b, "data", "l4_proxy", "l4_profile.csv"))
	require.NoError(b, err)
	for _, router := range []string{RoundRobinName, LeastOutstandingName} {
		for _, n := range codeTraceFleets {
			b.Run(fmt.Sprintf("%s/%d", router, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := NewRouter(router, DefaultRouterSeed)
					require.NoError(b, err)
					res, err := Simulate(requests, Config{
						Plant:   plant.NewPlant(nil),
						Groups:  []Group{{Replicas: n, Profile: prof, Scheduler: "chunked", Controller: "max"}},
						Router:  r,
						Options: plant.Options{Summary: true},
					})
					require.NoError(b, err)
					b.ReportMetric(float64(res.Steps), "steps")
				}
			})
		}
	}
}

// BenchmarkFleetOneDay simulates a synthetic code-like day of about one
// million requests on 16 replicas of the embedded proxy profile (chunked,
// reactive, --max-sim-time 86400), summary only.
func BenchmarkFleetOneDay(b *testing.B) {
	trace := plant.CodeTraceLike(1, oneDayS)
	trace.MeanRequestsPerS = oneDayRequests / oneDayS
	requests := trace.Requests()
	p := plant.NewPlant(nil)
	p.MaxSimulationTimeS = oneDayS
	for _, router := range []string{RoundRobinName, LeastOutstandingName} {
		b.Run(router, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewRouter(router, DefaultRouterSeed)
				require.NoError(b, err)
				res, err := Simulate(requests, Config{
					Plant:   p,
					Groups:  []Group{{Replicas: oneDayReplicas, Profile: profile.Default(), Scheduler: "chunked", Controller: "reactive"}},
					Router:  r,
					Options: plant.Options{Summary: true},
				})
				require.NoError(b, err)
				b.ReportMetric(float64(res.Steps), "steps")
				b.ReportMetric(float64(len(requests)), "requests")
			}
		})
	}
}
