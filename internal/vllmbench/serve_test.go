package vllmbench

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/testsupport"
)

// serveRecords are a small run: three completed requests (one of a single
// token) and one unfinished.
func serveRecords() []plant.RequestRecord {
	nan := math.NaN()
	return []plant.RequestRecord{
		{RequestID: 0, ArrivalTimeS: 0.5, FirstTokenTimeS: 0.7, CompletionTimeS: 1.7, PromptTokens: 100, OutputTokens: 11},
		{RequestID: 1, ArrivalTimeS: 0.6, FirstTokenTimeS: 1.0, CompletionTimeS: 1.0, PromptTokens: 50, OutputTokens: 1},
		{RequestID: 2, ArrivalTimeS: 1.2, FirstTokenTimeS: 1.5, CompletionTimeS: 3.5, PromptTokens: 80, OutputTokens: 5},
		{RequestID: 3, ArrivalTimeS: 3.0, FirstTokenTimeS: nan, CompletionTimeS: nan, PromptTokens: 70, OutputTokens: 9},
	}
}

// serveOf is the report of the small run under o.
func serveOf(t *testing.T, o ServeOptions) *Serve {
	t.Helper()
	report := &plant.Report{Result: plant.Result{Requests: serveRecords()}}
	s, err := ServeOf(report, o)
	require.NoError(t, err)
	return s
}

func TestServeTextGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		opts   ServeOptions
	}{
		{"serve_default.txt", ServeOptions{Metrics: []string{"ttft", "tpot", "itl"}, Percentiles: []float64{99}}},
		{"serve_goodput.txt", ServeOptions{Metrics: []string{"e2el", "ttft"}, Percentiles: []float64{50, 99.9},
			Goodput: Goodput{"ttft": 300, "e2el": 1500}, MaxConcurrency: 8, RequestRate: 2.5}},
	} {
		testsupport.CheckGolden(t, filepath.Join("testdata", tc.golden), []byte(serveOf(t, tc.opts).Text()))
	}
}

func TestServeTextRequestRateRow(t *testing.T) {
	t.Parallel()
	const label = "Request rate configured (RPS):"
	for _, tt := range []struct {
		name string
		rate float64
		want string // the row; "" for none
	}{
		{"finite", 4, label + "           4.00      \n"},
		{"fraction", 0.125, label + "           0.12      \n"},
		{"inf: no row", math.Inf(1), ""},
		{"not given: no row", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := serveOf(t, ServeOptions{Metrics: []string{"ttft"}, Percentiles: []float64{99}, MaxConcurrency: 2, RequestRate: tt.rate}).Text()
			if tt.want == "" {
				assert.NotContains(t, text, label)
				return
			}
			assert.Contains(t, text, "Maximum request concurrency:             2         \n"+tt.want+"Benchmark duration (s):",
				"after the concurrency, before the duration, as vLLM prints it")
		})
	}
}

func TestServeMetricsAreVLLMs(t *testing.T) {
	t.Parallel()
	s := serveOf(t, ServeOptions{Metrics: MetricNames, Percentiles: []float64{50}, Goodput: Goodput{"ttft": 300, "tpot": 100}})
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.InDelta(t, 3.0, s.DurationS, 1e-12, "first arrival to last completion")
	// TTFTs 0.2, 0.4, 0.3 s; TPOTs (1.2-0.2)/10 = 0.1 and (2.3-0.3)/4 = 0.5
	// (the single token's 0 counts for goodput only); E2ELs 1.2, 0.4, 2.3.
	assert.InDelta(t, 300, s.Stats["ttft"].Mean, 1e-9)
	assert.InDelta(t, 300, s.Stats["tpot"].Mean, 1e-9)
	assert.InDelta(t, 300, s.Stats["tpot"].Percentiles[0], 1e-9, "p50 of two")
	assert.InDelta(t, (10*100.0+4*500)/14, s.Stats["itl"].Mean, 1e-9, "each TPOT output-1 times")
	assert.InDelta(t, 1200, s.Stats["e2el"].Percentiles[0], 1e-9)
	// Request 0 meets TTFT 300 ms and TPOT 100 ms; request 1 misses TTFT
	// (400 ms) though its TPOT counts as 0; request 2 misses both.
	assert.InDelta(t, 1/3.0, s.RequestGoodput, 1e-12)
	// One-second buckets from 0.5 s: the first holds request 0's tokens at
	// 0.7 to 1.4 s (8, accumulating 0.1 s steps as vLLM does) and request
	// 1's one. At most two requests are in flight at once (exactly, not
	// by vLLM 0.11's buckets, which counted three).
	assert.Equal(t, 9.0, s.MaxOutputTokensPerS)
	assert.Equal(t, 2, s.MaxConcurrentRequests)
}

func TestServeDocumentKeys(t *testing.T) {
	t.Parallel()
	s := serveOf(t, ServeOptions{Metrics: []string{"ttft", "e2el"}, Percentiles: []float64{90, 99, 99.5}})
	cfg := SaveConfig{Date: "20250101-120000", Backend: "servesim", ModelID: "servesim-proxy", TokenizerID: "servesim-proxy",
		NumPrompts: 4, RequestRate: math.Inf(1), Burstiness: 1}
	doc := s.Document(cfg)
	var keys []string
	values := map[string]any{}
	for _, m := range doc {
		keys = append(keys, m.Key)
		values[m.Key] = m.Value
	}
	assert.Equal(t, []string{
		"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"input_lens", "output_lens", "ttfts", "latencies", "max_output_tokens_per_s", "max_concurrent_requests",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "p99.5_ttft_ms",
		"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
		"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
		"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p90_e2el_ms", "p99_e2el_ms", "p99.5_e2el_ms",
	}, keys)
	assert.Equal(t, "inf", values["request_rate"], "as vLLM writes an infinite rate")
	assert.Nil(t, values["max_concurrency"])
	assert.Nil(t, values["request_goodput"], "null without --goodput, as vLLM")
	assert.InDelta(t, s.P99TTFTMs, values["p99_ttft_ms"], 1e-9, "agrees with Result's own p99")
	_, err := jsonout.Chunks(doc)
	assert.NoError(t, err)

	cfg.RequestRate, cfg.MaxConcurrency, cfg.ModelID = 5, 16, "meta-llama/Llama-3-8B"
	assert.Equal(t, "servesim-5.0qps-concurrency16-Llama-3-8B-20250101-120000.json", cfg.FileName(), "the model id's basename")
	cfg.RequestRate, cfg.MaxConcurrency, cfg.ModelID = math.Inf(1), 0, "servesim-proxy"
	assert.Equal(t, "servesim-infqps-servesim-proxy-20250101-120000.json", cfg.FileName())
}

func TestParseServeFlags(t *testing.T) {
	t.Parallel()
	g, err := ParseGoodput([]string{"ttft:500", "e2el:2e3", "ttft:400"})
	require.NoError(t, err)
	assert.Equal(t, Goodput{"ttft": 400, "e2el": 2000}, g, "a later pair replaces an earlier one")
	ms, err := ParsePercentileMetrics("e2el, ttft")
	require.NoError(t, err)
	assert.Equal(t, []string{"e2el", "ttft"}, ms)
	ps, err := ParseMetricPercentiles("25,50, 99.9")
	require.NoError(t, err)
	assert.Equal(t, []float64{25, 50, 99.9}, ps)

	for _, tt := range []struct {
		err  error
		want string
	}{
		{second(ParseGoodput([]string{"ttft"})), `--goodput "ttft": expected a KEY:VALUE pair`},
		{second(ParseGoodput([]string{"ttft:1:2"})), `--goodput "ttft:1:2": expected a KEY:VALUE pair`},
		{second(ParseGoodput([]string{"ttft:fast"})), `--goodput "ttft:fast": expected a KEY:VALUE pair`},
		{second(ParseGoodput([]string{"itl:5"})), `--goodput "itl:5": unknown metric "itl": expected ttft, tpot or e2el`},
		{second(ParseGoodput([]string{"tpot:-1"})), `--goodput "tpot:-1": expected a nonnegative number of ms`},
		{second(ParseGoodput([]string{"tpot:nan"})), `--goodput "tpot:nan": expected a nonnegative number of ms`},
		{second(ParsePercentileMetrics("ttft,foo")), `--percentile-metrics "ttft,foo": unknown metric "foo"`},
		{second(ParsePercentileMetrics("")), `--percentile-metrics "": unknown metric ""`},
		{second(ParseMetricPercentiles("50,101")), `--metric-percentiles "50,101": "101": expected a comma-separated list of percentiles in [0, 100]`},
		{second(ParseMetricPercentiles("x")), `--metric-percentiles "x": "x"`},
	} {
		require.Error(t, tt.err)
		assert.Contains(t, tt.err.Error(), tt.want)
	}
}

// second is the error of a two-valued call.
func second[T any](_ T, err error) error { return err }

func FuzzParseServeFlags(f *testing.F) {
	for _, s := range []string{"ttft:500", "99,99.9", "ttft,tpot", "e2el:1e309", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := ParseGoodput([]string{s}); err == nil {
			for name, v := range g {
				assert.Contains(t, goodputNames, name)
				assert.GreaterOrEqual(t, v, 0.0)
			}
		}
		if ps, err := ParseMetricPercentiles(s); err == nil {
			for _, p := range ps {
				assert.True(t, p >= 0 && p <= 100)
			}
		}
		if ms, err := ParsePercentileMetrics(s); err == nil {
			assert.NotEmpty(t, ms)
		}
	})
}
