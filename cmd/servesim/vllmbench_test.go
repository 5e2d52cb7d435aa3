package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

// vllmBenchKeys are the keys of vllm bench serve's result JSON that
// --format vllm-bench writes, in vLLM's order.
var vllmBenchKeys = []string{
	"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"input_lens", "output_lens", "ttfts", "latencies",
	"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
	"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms",
}

func TestVLLMBenchGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		// The embedded defaults: profile, trace, chunked, max.
		{"vllm_bench_defaults.json", nil},
		{"vllm_bench_fleet.json", []string{"--replicas", "2", "--router", "least-tokens", "--max-elapsed", "300"}},
	} {
		args := append([]string{"simulate", "--format", "vllm-bench"}, tc.args...)
		s, out, errOut := testStreams("")
		require.Equal(t, exitOK, run(context.Background(), args, s), errOut.String())
		assert.Empty(t, errOut.String())
		testsupport.CheckGolden(t, filepath.Join("testdata", tc.golden), out.Bytes())
		assert.Equal(t, vllmBenchKeys, jsonKeys(t, out.Bytes()), "vLLM's keys in vLLM's order")

		// --summary keeps what the document needs.
		s, summary, errOut := testStreams("")
		require.Equal(t, exitOK, run(context.Background(), append(args, "--summary"), s), errOut.String())
		assert.Equal(t, out.String(), summary.String(), "%s with --summary", tc.golden)
	}
}

func TestVLLMBenchAgreesWithTheSimulateDocument(t *testing.T) {
	t.Parallel()
	s, out, errOut := testStreams("")
	require.Equal(t, exitOK, run(context.Background(), []string{"simulate", "--max-elapsed", "600", "--ttft-slo", "0.3"}, s), errOut.String())
	var doc struct {
		Metrics struct {
			MeanTTFTS    float64 `json:"mean_ttft_s"`
			MeanLatencyS float64 `json:"mean_latency_s"`
		} `json:"metrics"`
		SLO struct {
			Met  int `json:"requests_meeting_slo"`
			TTFT struct {
				P99 float64 `json:"p99"`
			} `json:"ttft_s"`
		} `json:"slo"`
		Requests []json.RawMessage `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	s, out, errOut = testStreams("")
	require.Equal(t, exitOK, run(context.Background(), []string{"simulate", "--max-elapsed", "600", "--ttft-slo", "0.3", "--format", "vllm-bench"}, s), errOut.String())
	var bench struct {
		Duration       float64   `json:"duration"`
		Completed      int       `json:"completed"`
		RequestGoodput float64   `json:"request_goodput"`
		MeanTTFTMs     float64   `json:"mean_ttft_ms"`
		P99TTFTMs      float64   `json:"p99_ttft_ms"`
		MeanE2ELMs     float64   `json:"mean_e2el_ms"`
		TTFTs          []float64 `json:"ttfts"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &bench))
	assert.Equal(t, len(doc.Requests), bench.Completed)
	assert.Len(t, bench.TTFTs, len(doc.Requests))
	assert.InDelta(t, float64(doc.SLO.Met)/bench.Duration, bench.RequestGoodput, 1e-12, "goodput by --ttft-slo")
	assert.InDelta(t, doc.Metrics.MeanTTFTS*1000, bench.MeanTTFTMs, 1e-9)
	assert.InDelta(t, doc.SLO.TTFT.P99*1000, bench.P99TTFTMs, 1e-9)
	assert.InDelta(t, doc.Metrics.MeanLatencyS*1000, bench.MeanE2ELMs, 1e-9)
}

func TestVLLMBenchIsAFormat(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseSimulate(t, "--format", "vllm-bench")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "vllm-bench", o.Format)
	_, code, stderr = parseSimulate(t, "--format", "vllm")
	assert.Equal(t, exitUsage, code)
	assert.True(t, strings.Contains(stderr, "expected json, table or vllm-bench"), stderr)
}
