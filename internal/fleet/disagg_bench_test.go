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
	benchDisagg(b, func(n int, cfg *Config) {
		cfg.Router = LeastOutstanding{}
		cfg.Disaggregation.DecodeRouter = LeastOutstanding{}
	})
}

// BenchmarkDisaggregatedBatched is BenchmarkDisaggregated under the
// batched service model, whose objectives come from its cost model's
// baseline: worked out once per group (objectivesByGroup), not per request
// judged, which made the fleet's metrics cost more than its steps.
func BenchmarkDisaggregatedBatched(b *testing.B) {
	benchDisagg(b, func(n int, cfg *Config) {
		cfg.Service = batchedService()
		cfg.Router = LeastOutstanding{}
		cfg.Disaggregation.DecodeRouter = LeastOutstanding{}
	})
}

// BenchmarkDisaggregatedPrefixCache is BenchmarkDisaggregated with the
// prefix cache on in the prefill pool (every prompt sharing its first 1024
// tokens) and prefix-aware routing there (its approximate index): the
// step still costs O(active requests + replicas), the route O(replicas)
// plus the prompt's shared blocks, so ns/request stays flat as the fleet
// grows.
func BenchmarkDisaggregatedPrefixCache(b *testing.B) {
	benchDisagg(b, func(n int, cfg *Config) {
		cfg.Options.Engine = plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024}
		router, err := NewRouter(PrefixAwareName, 1)
		require.NoError(b, err)
		cfg.Router = router
	})
}

// BenchmarkElasticDisaggregated is BenchmarkDisaggregated with each pool
// scaling on its own (queue:target=4, from n/4 to n/2 replicas, 60 s cold
// starts, a decision every 30 s): the elastic step adds O(replicas) of
// bookkeeping, so ns/request stays flat as the fleet grows.
func BenchmarkElasticDisaggregated(b *testing.B) {
	benchDisagg(b, func(n int, cfg *Config) {
		cfg.Router = LeastOutstanding{}
		cfg.Disaggregation.DecodeRouter = LeastOutstanding{}
		pool := func() GroupScaling {
			return GroupScaling{Autoscaler: NewQueue(4), MinReplicas: n / 4, MaxReplicas: n / 2, InitialReplicas: n / 2}
		}
		cfg.Scaling = &Scaling{Autoscaler: NewQueue(4), MaxReplicas: n / 2, InitialReplicas: n / 2,
			IntervalS: 30, ProvisionS: 30, LoadS: 30, Groups: []GroupScaling{pool(), pool()}}
	})
}

// benchDisagg runs the disaggregated benchmarks: fleets of 8 to 64
// replicas, half prefill and half decode, 25 GB/s links, on a code-like
// trace of 600 s at 0.5 requests/s per replica; edit sets a fleet's
// routers, engine and scaling.
func benchDisagg(b *testing.B, edit func(n int, cfg *Config)) {
	for _, n := range []int{8, 16, 32, 64} {
		trace := plant.CodeTraceLike(1, 600)
		trace.MeanRequestsPerS = 0.5 * float64(n)
		requests := trace.Requests()
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg := disaggFleet(n/2, n/2, Link{BandwidthGBps: 25})
				cfg.Options = plant.Options{Summary: true}
				edit(n, &cfg)
				res, err := Simulate(requests, cfg)
				require.NoError(b, err)
				require.Zero(b, res.Disaggregation.TransfersUnfinished)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(requests)), "ns/request")
			b.ReportMetric(float64(len(requests)), "requests")
		})
	}
}
