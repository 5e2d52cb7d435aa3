package fleet

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// BenchmarkDisaggregated runs a code-like workload on disaggregated fleets
// of 8 to 64 replicas (half prefill, half decode, least-outstanding in
// both pools) at a fixed load per replica (0.5 requests a second each, for
// 600 s): a step costs O(active requests + replicas), so the time per
// request stays flat as the fleet grows (ns/request), and the steps
// allocate nothing but the records' and transfers' amortized growth.
func BenchmarkDisaggregated(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64} {
		trace := plant.CodeTraceLike(1, 600)
		trace.MeanRequestsPerS = 0.5 * float64(n)
		requests := trace.Requests()
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg := disaggFleet(n/2, n/2, Link{BandwidthGBps: 25})
				cfg.Options = plant.Options{Summary: true}
				cfg.Router = LeastOutstanding{}
				cfg.Disaggregation.DecodeRouter = LeastOutstanding{}
				res, err := Simulate(requests, cfg)
				require.NoError(b, err)
				require.Zero(b, res.Disaggregation.TransfersUnfinished)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(requests)), "ns/request")
			b.ReportMetric(float64(len(requests)), "requests")
		})
	}
}

// BenchmarkDisaggregatedPrefixCache is BenchmarkDisaggregated with the
// prefix cache on in the prefill pool (every prompt sharing its first 1024
// tokens) and prefix-aware routing there (its approximate index): the
// step still costs O(active requests + replicas), the route O(replicas)
// plus the prompt's shared blocks, so ns/request stays flat as the fleet
// grows.
func BenchmarkDisaggregatedPrefixCache(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64} {
		trace := plant.CodeTraceLike(1, 600)
		trace.MeanRequestsPerS = 0.5 * float64(n)
		requests := trace.Requests()
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg := disaggFleet(n/2, n/2, Link{BandwidthGBps: 25})
				cfg.Options = plant.Options{Summary: true, Engine: plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024}}
				router, err := NewRouter(PrefixAwareName, 1)
				require.NoError(b, err)
				cfg.Router = router
				res, err := Simulate(requests, cfg)
				require.NoError(b, err)
				require.Zero(b, res.Disaggregation.TransfersUnfinished)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(requests)), "ns/request")
			b.ReportMetric(float64(len(requests)), "requests")
		})
	}
}
