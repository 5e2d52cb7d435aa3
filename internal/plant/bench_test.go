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

// BenchmarkRunSameWorkload is a sweep cell: Run of the whole code trace
// normalized to 0.8 under max on the L4 rows, summary only, again and
// again on one workload, as read (its workload checksum remembered after
// the first run) and as a literal (computed at every run).
func BenchmarkRunSameWorkload(b *testing.B) {
	f, err := os.Open(sharedtest.CodeTrace(b))
	require.NoError(b, err)
	defer f.Close()
	read, err := LoadWorkload(f, "code", NoElapsedLimit)
	require.NoError(b, err)
	cfg := Config{Plant: NewPlant(referenceProfile(b, "l4_proxy")), Scheduler: ChunkedPrefill{}, Controller: MaxClock{},
		Normalize: 0.8, Options: Options{Summary: true}}
	for _, run := range []struct {
		name string
		w    Workload
	}{{"read", read}, {"literal", Workload{Requests: read.Requests}}} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := Run(run.w, cfg)
				require.NoError(b, err)
			}
		})
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

// BenchmarkSimulateCodeTraceEngine is the whole code trace normalized to
// 0.8 utilization on the default plant with each engine feature off and
// on: the prefix cache (16-token blocks, a 1024-token shared prefix) and
// recompute preemption (which never acts here: the code trace's outputs
// are short, 28 tokens on average).
func BenchmarkSimulateCodeTraceEngine(b *testing.B) {
	prof := referenceProfile(b, "l4_proxy")
	requests, _, err := NormalizeOfferedLoad(loadCodeTrace(b), prof, 0.8)
	require.NoError(b, err)
	benchmarkEngine(b, requests, NewPlant(prof))
}

// BenchmarkSimulateKVStarved is a KV-starved run: 2000 requests with
// outputs longer than their prompts, two a second, on 16384 tokens of KV
// with a decode reserve of 64 tokens, where preemption acts hundreds of
// times.
func BenchmarkSimulateKVStarved(b *testing.B) {
	requests := kvStarved(2000)
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 16384
	p.DecodeKVReserveTokensPerActive = 64
	benchmarkEngine(b, requests, p)
}

// benchmarkEngine simulates requests on p with the engine features off,
// each alone and both on.
func benchmarkEngine(b *testing.B, requests []Request, p Plant) {
	for _, c := range []struct {
		name   string
		engine EngineOptions
	}{
		{"off", EngineOptions{}},
		{"prefix-cache", EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024}},
		{"preemption", EngineOptions{Preemption: PreemptionRecompute}},
		{"both", EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024, Preemption: PreemptionRecompute}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var res *Result
			for b.Loop() {
				var err error
				res, err = Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{Summary: true, Engine: c.engine})
				require.NoError(b, err)
			}
			b.ReportMetric(float64(res.Steps), "steps")
			if e := res.Engine; e != nil {
				b.ReportMetric(float64(e.Preemptions), "preemptions")
				b.ReportMetric(float64(e.PrefixCacheEvictions), "evictions")
			}
		})
	}
}
