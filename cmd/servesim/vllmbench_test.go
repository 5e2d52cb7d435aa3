package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update asks the golden tests to rewrite their files (go test -update).
var update = flag.Bool("update", false, "rewrite golden files")

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
		path := filepath.Join("testdata", tc.golden)
		if *update {
			require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		if line, ok := firstDifferentLine(string(want), out.String()); !ok {
			t.Errorf("%s differs from the output first at line %d (go test -run TestVLLMBenchGolden -update rewrites it):\nwant %.200s\ngot  %.200s",
				path, line.number, line.want, line.got)
		}
		assert.Equal(t, vllmBenchKeys, jsonKeys(t, out.Bytes()), "vLLM's keys in vLLM's order")

		// --summary keeps what the document needs.
		s, summary, errOut := testStreams("")
		require.Equal(t, exitOK, run(context.Background(), append(args, "--summary"), s), errOut.String())
		assert.Equal(t, out.String(), summary.String(), "%s with --summary", tc.golden)
	}
}

// lineDiff is the first line at which two texts differ.
type lineDiff struct {
	number    int
	want, got string
}

// firstDifferentLine compares want and got line by line; ok when equal.
func firstDifferentLine(want, got string) (lineDiff, bool) {
	if want == got {
		return lineDiff{}, true
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		d := lineDiff{number: i + 1}
		if i < len(w) {
			d.want = w[i]
		}
		if i < len(g) {
			d.got = g[i]
		}
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			return d, false
		}
	}
	return lineDiff{}, false
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
