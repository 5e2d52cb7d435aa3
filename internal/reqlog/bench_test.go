package reqlog

import (
	"io"
	"testing"

	"servesim/internal/plant"
)

// benchRequests is the size of the benchmarked log.
const benchRequests = 100_000

// benchLog is a log of n completed requests with varied times.
func benchLog(n int) *plant.RequestLog {
	l := &plant.RequestLog{
		Records:          make([]plant.RequestRecord, n),
		ArrivalKVTokens:  make([]float64, n),
		KVCapacityTokens: 131072,
	}
	for i := range n {
		a := float64(i) * 0.3701
		l.Records[i] = plant.RequestRecord{RequestID: i, ArrivalTimeS: a, PrefillStartS: a + 0.0123*float64(i%7),
			FirstTokenTimeS: a + 0.2 + 0.01*float64(i%11), CompletionTimeS: a + 1.7 + 0.03*float64(i%13),
			PromptTokens: 100 + i%2000, OutputTokens: 1 + i%300}
		l.ArrivalKVTokens[i] = float64(i % 131072)
	}
	return l
}

func BenchmarkWrite(b *testing.B) {
	log, err := FromPlant(benchLog(benchRequests))
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name   string
		format Format
	}{{"csv", CSV}, {"jsonl", JSONLines}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := log.Write(io.Discard, f.format); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRequests, "ns/request")
		})
	}
}
