package plant

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/sharedtest"
)

// Benchmark sizes: the whole Azure 2023 code trace (8819 requests, one hour)
// and a synthetic day of about one million requests.
const (
	oneDayS       = 86_400.0
	oneDayRequest = 1_000_000
)

func loadCodeTrace(b *testing.B) []Request {
	b.Helper()
	f, err := os.Open(sharedtest.CodeTrace(b))
	require.NoError(b, err)
	defer f.Close()
	w, err := LoadWorkload(f, "code", NoElapsedLimit)
	require.NoError(b, err)
	return w.Requests
}

func referenceProfile(b *testing.B, name string) *profile.Profile {
	b.Helper()
	p, err := profile.Load(sharedtest.Reference(b, "data", name, "l4_profile.csv"))
	require.NoError(b, err)
	return p
}

// BenchmarkSimulateCodeTrace is the whole code trace, un-normalized (queues
// reach thousands), on the reference's L4 aggregate profile.
func BenchmarkSimulateCodeTrace(b *testing.B) {
	requests := loadCodeTrace(b)
	p := NewPlant(referenceProfile(b, "l4_proxy"))
	for _, ctrl := range []string{"max", "reactive"} {
		b.Run(ctrl, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, _ := NewController(ctrl)
				_, err := Simulate(requests, p, ChunkedPrefill{}, c, Options{Summary: true})
				require.NoError(b, err)
			}
		})
	}
}

// BenchmarkSimulateCodeTraceNormalized is the whole code trace normalized
// to 0.8 utilization, as in run_matrix.py.
func BenchmarkSimulateCodeTraceNormalized(b *testing.B) {
	prof := referenceProfile(b, "l4_proxy")
	requests, _, err := NormalizeOfferedLoad(loadCodeTrace(b), prof, 0.8)
	require.NoError(b, err)
	p := NewPlant(prof)
	b.ReportAllocs()
	for b.Loop() {
		_, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{Summary: true})
		require.NoError(b, err)
	}
}

// BenchmarkSimulateOneDay is a synthetic code-like day of about one million
// requests (--max-sim-time 86400) on the embedded proxy profile, summary
// only.
func BenchmarkSimulateOneDay(b *testing.B) {
	trace := CodeTraceLike(1, oneDayS)
	trace.MeanRequestsPerS = oneDayRequest / oneDayS
	requests := trace.Requests()
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = oneDayS
	b.ReportAllocs()
	for b.Loop() {
		res, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{Summary: true})
		require.NoError(b, err)
		b.ReportMetric(float64(res.Steps), "steps")
		b.ReportMetric(float64(len(requests)), "requests")
	}
}

// BenchmarkLoadWorkloadCodeTrace parses the whole Azure 2023 code trace.
func BenchmarkLoadWorkloadCodeTrace(b *testing.B) {
	data, err := os.ReadFile(sharedtest.CodeTrace(b))
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := LoadWorkload(bytes.NewReader(data), "code", NoElapsedLimit)
		require.NoError(b, err)
	}
}
