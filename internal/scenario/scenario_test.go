package scenario

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
)

// referenceCases is testdata/reference_cases.json, written by running the
// reference's seed001 through a driver kept outside the repository.
type referenceCases struct {
	CustomProfiles []EngineProfile `json:"custom_profiles"`
	Traces         []struct {
		Requests   int       `json:"requests"`
		Seed       string    `json:"seed"`
		RPS        float64   `json:"rps"`
		ArrivalsMS []float64 `json:"arrivals_ms"`
	} `json:"traces"`
	Cases []struct {
		Requests            int                `json:"requests"`
		Seed                string             `json:"seed"`
		RPS                 float64            `json:"rps"`
		TTFTSLOMilliseconds float64            `json:"ttft_slo_ms"`
		TPOTSLOMilliseconds float64            `json:"tpot_slo_ms"`
		ClosedLoop          bool               `json:"closed_loop"`
		Profiles            string             `json:"profiles"`
		Summaries           []BenchmarkSummary `json:"summaries"`
	} `json:"cases"`
	Large100k []struct {
		Requests       int                `json:"requests"`
		Seed           string             `json:"seed"`
		RPS            float64            `json:"rps"`
		ArrivalsSHA256 string             `json:"arrivals_sha256"`
		Summaries      []BenchmarkSummary `json:"summaries"`
	} `json:"large_100k"`
	AzureCodeFirst200 struct {
		ArrivalsMS []float64 `json:"arrivals_ms"`
		Cases      []struct {
			Rows                int                `json:"rows"`
			SharedPrefixTokens  int                `json:"shared_prefix_tokens"`
			ClosedLoop          bool               `json:"closed_loop"`
			TTFTSLOMilliseconds float64            `json:"ttft_slo_ms"`
			TPOTSLOMilliseconds float64            `json:"tpot_slo_ms"`
			Summaries           []BenchmarkSummary `json:"summaries"`
		} `json:"cases"`
	} `json:"azure_code_first200"`
}

func loadReferenceCases(t *testing.T) referenceCases {
	t.Helper()
	data, err := os.ReadFile("testdata/reference_cases.json")
	require.NoError(t, err)
	var rc referenceCases
	require.NoError(t, json.Unmarshal(data, &rc))
	require.NotEmpty(t, rc.Cases)
	return rc
}

func bigSeed(t *testing.T, s string) *big.Int {
	t.Helper()
	seed, ok := new(big.Int).SetString(s, 10)
	require.True(t, ok, "seed %q", s)
	return seed
}

// requireSameBits fails unless got and want are the same float64 bits.
func requireSameBits(t *testing.T, want, got []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%s #%d: want %v got %v", what, i, want[i], got[i])
	}
}

func TestAgentTraceMatchesReference(t *testing.T) {
	rc := loadReferenceCases(t)
	require.NotEmpty(t, rc.Traces)
	total := 0
	for _, tr := range rc.Traces {
		trace, err := BuildAgentTrace(tr.Requests, bigSeed(t, tr.Seed), tr.RPS)
		require.NoError(t, err)
		got := make([]float64, len(trace))
		for i, r := range trace {
			got[i] = r.ArrivalMS
		}
		requireSameBits(t, tr.ArrivalsMS, got, "seed "+tr.Seed)
		total += len(got)
	}
	t.Logf("%d arrivals over %d traces bit-identical to the reference", total, len(rc.Traces))
}

func TestAgentTraceShape(t *testing.T) {
	trace, err := BuildAgentTrace(12, big.NewInt(42), 8.5)
	require.NoError(t, err)
	assert.Equal(t, WorkloadRequest{RequestID: "req-000", ArrivalMS: trace[0].ArrivalMS, SharedPrefixTokens: 2048, UniquePromptTokens: 256, OutputTokens: 96}, trace[0])
	assert.Equal(t, "req-011", trace[11].RequestID)
	assert.Equal(t, 3072, trace[11].SharedPrefixTokens)
	assert.Equal(t, 256+64, trace[11].UniquePromptTokens)
	assert.Equal(t, 96+3*32, trace[11].OutputTokens)
	for i := 1; i < len(trace); i++ {
		assert.GreaterOrEqual(t, trace[i].ArrivalMS, trace[i-1].ArrivalMS)
	}
}

func TestAgentTraceRejects(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		rps  float64
	}{
		{"no requests", 0, 8.5},
		{"more than the limit", MaxAgentRequests + 1, 8.5},
		{"a billion", 1_000_000_000, 8.5},
		{"zero rate", 10, 0},
		{"negative rate", 10, -1},
		{"NaN rate", 10, math.NaN()},
		{"infinite rate", 10, math.Inf(1)},
		{"rate so small arrivals overflow", 10, 1e-310},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			allocs := testing.AllocsPerRun(1, func() { _, err = BuildAgentTrace(tt.n, big.NewInt(1), tt.rps) })
			require.Error(t, err)
			assert.Less(t, allocs, 100.0, "refused before the trace is allocated")
		})
	}
}

func TestEvaluateMatchesReference(t *testing.T) {
	rc := loadReferenceCases(t)
	summaries := 0
	for _, c := range rc.Cases {
		trace, err := BuildAgentTrace(c.Requests, bigSeed(t, c.Seed), c.RPS)
		require.NoError(t, err)
		profiles := BuiltinProfiles()
		if c.Profiles == "custom" {
			profiles = rc.CustomProfiles
		}
		opts := BenchmarkOptions{WorkloadName: DefaultWorkloadName, TTFTSLOMilliseconds: c.TTFTSLOMilliseconds, TPOTSLOMilliseconds: c.TPOTSLOMilliseconds, ClosedLoop: c.ClosedLoop}
		require.Len(t, c.Summaries, len(profiles))
		for i, p := range profiles {
			got, err := EvaluateEngineBenchmark(trace, p, opts)
			require.NoError(t, err)
			require.Equal(t, c.Summaries[i], got, "n=%d seed=%s rps=%v slo=%v/%v closed=%v profile=%s",
				c.Requests, c.Seed, c.RPS, c.TTFTSLOMilliseconds, c.TPOTSLOMilliseconds, c.ClosedLoop, p.Name)
			summaries++
		}
	}
	t.Logf("%d summaries in %d cases equal to the reference (every field exact)", summaries, len(rc.Cases))
}

// TestLargeTraceMatchesReference compares a 100,000-request trace (its
// arrivals by SHA-256 of their float64 bits) and its open- and closed-loop
// summaries with the reference.
func TestLargeTraceMatchesReference(t *testing.T) {
	rc := loadReferenceCases(t)
	require.NotEmpty(t, rc.Large100k)
	for _, c := range rc.Large100k {
		trace, err := BuildAgentTrace(c.Requests, bigSeed(t, c.Seed), c.RPS)
		require.NoError(t, err)
		h := sha256.New()
		for _, r := range trace {
			require.NoError(t, binary.Write(h, binary.LittleEndian, r.ArrivalMS))
		}
		require.Equal(t, c.ArrivalsSHA256, hex.EncodeToString(h.Sum(nil)), "arrivals of %d requests at %v rps", c.Requests, c.RPS)
		profiles := BuiltinProfiles()
		require.Len(t, c.Summaries, len(profiles)+1)
		for i, want := range c.Summaries {
			opts := DefaultBenchmarkOptions()
			p := profiles[0]
			if i < len(profiles) {
				p = profiles[i]
			} else {
				opts.ClosedLoop = true
			}
			got, err := EvaluateEngineBenchmark(trace, p, opts)
			require.NoError(t, err)
			require.Equal(t, want, got, "rps=%v profile=%s closed=%v", c.RPS, p.Name, opts.ClosedLoop)
		}
	}
}

func TestDefaultReportMatchesReferenceGolden(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Reference(t, "golden", "seed001_main.json"))
	require.NoError(t, err)
	var golden struct {
		Experiment          string                      `json:"experiment"`
		ExecutionMode       string                      `json:"execution_mode"`
		ScenarioAssumptions map[string]EngineProfile    `json:"scenario_assumptions"`
		SLOTargets          SLOTargets                  `json:"slo_targets"`
		TraceRequests       int                         `json:"trace_requests"`
		ScenarioComparisons map[string]BenchmarkSummary `json:"scenario_comparisons"`
		Diagnostics         Diagnostics                 `json:"diagnostics"`
	}
	require.NoError(t, json.Unmarshal(data, &golden))
	r, err := DefaultReport()
	require.NoError(t, err)
	assert.Equal(t, golden.Experiment, r.Experiment)
	assert.Equal(t, golden.ExecutionMode, r.ExecutionMode)
	assert.Equal(t, golden.SLOTargets, r.SLOTargets)
	assert.Equal(t, golden.TraceRequests, r.TraceRequests)
	require.Len(t, r.ScenarioAssumptions, len(golden.ScenarioAssumptions))
	for i, p := range r.ScenarioAssumptions {
		assert.Equal(t, golden.ScenarioAssumptions[p.Name], p)
		assert.Equal(t, golden.ScenarioComparisons[p.Name], r.ScenarioComparisons[i])
	}
	assert.Equal(t, golden.Diagnostics, r.Diagnostics)
}

func TestEvaluateRejects(t *testing.T) {
	trace, err := BuildAgentTrace(5, big.NewInt(1), 8.5)
	require.NoError(t, err)
	good := BuiltinProfiles()[0]
	tests := []struct {
		name    string
		trace   []WorkloadRequest
		profile func(*EngineProfile)
		want    string
	}{
		{"zero capacity", trace, func(p *EngineProfile) { p.MaxBatchSlots = 0 }, `profile "baseline": max_batch_slots 0: capacity must be at least 1`},
		{"zero prefill rate", trace, func(p *EngineProfile) { p.PrefillTokensPerMS = 0 }, `profile "baseline": prefill_tokens_per_ms 0: prefill rate must be positive and finite`},
		{"NaN prefill rate", trace, func(p *EngineProfile) { p.PrefillTokensPerMS = math.NaN() }, "prefill_tokens_per_ms NaN"},
		{"efficiency above 1", trace, func(p *EngineProfile) { p.PrefixCacheHitEfficiency = 1.5 }, "prefix_cache_hit_efficiency 1.5: must be between 0 and 1"},
		{"negative base tpot", trace, func(p *EngineProfile) { p.BaseTPOTMS = -1 }, "base_tpot_ms -1"},
		{"infinite slope", trace, func(p *EngineProfile) { p.BatchTPOTSlopeMS = math.Inf(1) }, "batch_tpot_slope_ms +Inf"},
		{"empty trace", nil, func(*EngineProfile) {}, "workload trace must not be empty"},
		{"no output token", []WorkloadRequest{{RequestID: "r", OutputTokens: 0}}, func(*EngineProfile) {}, "request r: output_tokens 0: must be at least 1"},
		{"negative prompt", []WorkloadRequest{{RequestID: "r", UniquePromptTokens: -1, OutputTokens: 1}}, func(*EngineProfile) {}, "request r: prompt token counts must not be negative"},
		{"NaN arrival", []WorkloadRequest{{RequestID: "r", ArrivalMS: math.NaN(), OutputTokens: 1}}, func(*EngineProfile) {}, "request r: arrival_ms NaN: must be finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.profile(&p)
			_, err := EvaluateEngineBenchmark(tt.trace, p, DefaultBenchmarkOptions())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestBuildReportRejectsDuplicateNames(t *testing.T) {
	trace, err := BuildAgentTrace(5, big.NewInt(1), 8.5)
	require.NoError(t, err)
	p := BuiltinProfiles()
	_, err = BuildReport(trace, []EngineProfile{p[0], p[1], p[0]}, DefaultBenchmarkOptions())
	require.EqualError(t, err, `profile "baseline": name: used twice`)
	_, err = BuildReport(trace, nil, DefaultBenchmarkOptions())
	require.Error(t, err)
}

// TestEvaluateAllocations guards the replay loop: the number of allocations
// does not grow with the trace.
func TestEvaluateAllocations(t *testing.T) {
	allocs := func(n int) float64 {
		trace, err := BuildAgentTrace(n, big.NewInt(7), 40)
		require.NoError(t, err)
		p := BuiltinProfiles()[1]
		return testing.AllocsPerRun(5, func() {
			_, _ = EvaluateEngineBenchmark(trace, p, DefaultBenchmarkOptions())
		})
	}
	small, large := allocs(100), allocs(5000)
	assert.Equal(t, small, large, "allocations per replay must not depend on the trace length")
	assert.LessOrEqual(t, large, 12.0)
}

const benchRequests = 100_000

func BenchmarkEvaluate100k(b *testing.B) {
	trace, err := BuildAgentTrace(benchRequests, big.NewInt(42), 8.5)
	if err != nil {
		b.Fatal(err)
	}
	p := BuiltinProfiles()[0]
	opts := DefaultBenchmarkOptions()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EvaluateEngineBenchmark(trace, p, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildAgentTrace100k(b *testing.B) {
	seed := big.NewInt(42)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildAgentTrace(benchRequests, seed, 8.5); err != nil {
			b.Fatal(err)
		}
	}
}
