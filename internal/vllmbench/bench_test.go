package vllmbench

import (
	"testing"

	"servesim/internal/plant"
)

// benchRequests is the size of the benchmarked run.
const benchRequests = 100_000

func BenchmarkCompute(b *testing.B) {
	records := make([]plant.RequestRecord, benchRequests)
	for i := range records {
		a := float64(i) * 0.3701
		records[i] = plant.RequestRecord{RequestID: i, ArrivalTimeS: a, PrefillStartS: a,
			FirstTokenTimeS: a + 0.2 + 0.01*float64(i%11), CompletionTimeS: a + 1.7 + 0.03*float64(i%13),
			PromptTokens: 100 + i%2000, OutputTokens: 1 + i%300}
	}
	slo := plant.SLO{TTFTSeconds: 0.25, TPOTSeconds: 0.01}
	b.ReportAllocs()
	for b.Loop() {
		Compute(records, func(int) plant.SLO { return slo })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRequests, "ns/request")
}
