package plant

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"

	"servesim/internal/workload"
)

// Size tiers of the benchmarks that make bench tabulates
// (docs/BENCHMARKS.md): synthetic code-like traces of about a thousand,
// ten thousand and a hundred thousand requests at the code trace's rate
// (2.57 requests/s: 6.5 minutes, 65 minutes and 11 hours of arrivals).
// They need no shared data, so the table is the same kind of work on
// every machine.
const (
	tierSmall  = 1_000
	tierMedium = 10_000
	tierLarge  = 100_000
)

// tiers lists the size tiers in order.
var tiers = []int{tierSmall, tierMedium, tierLarge}

// tierTrace is the synthetic trace of a size tier: about requests
// code-like requests (seed 1) arriving at ratePerS.
func tierTrace(requests int, ratePerS float64) workload.SyntheticTrace {
	trace := CodeTraceLike(1, float64(requests)/ratePerS)
	trace.MeanRequestsPerS = ratePerS
	return trace
}

// tierPlant is the embedded proxy plant with time to serve a tier's trace.
func tierPlant(trace workload.SyntheticTrace) Plant {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 2 * trace.DurationS
	return p
}

// BenchmarkSimulateTiers simulates each tier's trace on the embedded proxy
// (chunked prefill, reactive clock), summary only.
func BenchmarkSimulateTiers(b *testing.B) {
	for _, n := range tiers {
		trace := tierTrace(n, 2.57)
		requests := trace.Requests()
		p := tierPlant(trace)
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var steps int
			for b.Loop() {
				res, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{Summary: true})
				require.NoError(b, err)
				steps = res.Steps
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}

// BenchmarkSimulateBatchedTiers is BenchmarkSimulateTiers under the
// batched service model (the default cards, vLLM's preemption), beside the
// reference's: its step costs O(running requests) too.
func BenchmarkSimulateBatchedTiers(b *testing.B) {
	svc := batchedService(b)
	for _, n := range tiers {
		trace := tierTrace(n, 2.57)
		requests := trace.Requests()
		p := tierPlant(trace)
		kv, err := svc.KVCapacityTokens()
		require.NoError(b, err)
		p.KVCapacityTokens = kv
		opt := batchedOptions(svc)
		opt.Summary = true
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var steps int
			for b.Loop() {
				res, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, opt)
				require.NoError(b, err)
				steps = res.Steps
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}

// BenchmarkLoadWorkloadTiers reads each tier's trace as an Azure CSV.
func BenchmarkLoadWorkloadTiers(b *testing.B) {
	for _, n := range tiers {
		var csv bytes.Buffer
		require.NoError(b, tierTrace(n, 2.57).WriteCSV(&csv))
		data := csv.Bytes()
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_, err := LoadWorkload(bytes.NewReader(data), "tier.csv", NoElapsedLimit)
				require.NoError(b, err)
			}
		})
	}
}
