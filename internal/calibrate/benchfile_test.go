package calibrate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/pycompat"
	"servesim/internal/vllmbench"
)

func TestReadRunVLLM011(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "bench", "vllm-0.11.json")
	run, err := ReadRun(path)
	require.NoError(t, err)
	assert.Equal(t, path, run.File)
	assert.Equal(t, "20251001-120000", run.Date)
	assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct", run.ModelID)
	assert.Equal(t, 2.0, run.RequestRate)
	assert.Equal(t, 1.0, run.Burstiness)
	assert.Equal(t, 4, run.MaxConcurrency)
	assert.Equal(t, 1.5, run.DurationS)
	// Latencies are TTFT plus the inter-token latencies (vLLM saves no
	// latencies); the third request failed (a non-empty error).
	assert.Equal(t, []Request{
		{InputTokens: 100, OutputTokens: 4, TTFTS: 0.25, LatencyS: 0.4375},
		{InputTokens: 200, OutputTokens: 3, TTFTS: 0.5, LatencyS: 0.75},
		{InputTokens: 150, OutputTokens: 0, Failed: true},
		{InputTokens: 50, OutputTokens: 1, TTFTS: 0.125, LatencyS: 0.125},
	}, run.Requests)
	// The file's own statistics (vLLM's, in ms) agree with Measured.
	m := run.Measured()
	assert.InDelta(t, 0.2916666666666667, m.MeanTTFTS, 1e-15)
	assert.InDelta(t, 0.495, m.P99TTFTS, 1e-15)
	assert.InDelta(t, 0.09375, m.MeanTPOTS, 1e-15)
	assert.InDelta(t, 5.333333333333333, m.OutputThroughput, 1e-12)
	assert.Nil(t, m.MeanPowerW)
	assert.Nil(t, m.EnergyPerTokenJ)
}

func TestReadRunOldFormat(t *testing.T) {
	t.Parallel()
	run, err := ReadRun(filepath.Join("testdata", "bench", "vllm-0.6.json"))
	require.NoError(t, err)
	assert.Equal(t, 1.0, run.Burstiness, "no burstiness: vLLM's default")
	assert.Equal(t, 0, run.MaxConcurrency, "no max_concurrency: none")
	assert.True(t, math.IsInf(run.RequestRate, 1), `"inf"`)
	assert.Equal(t, "facebook/opt-125m", run.ModelID)
	assert.Equal(t, []Request{
		{InputTokens: 10, OutputTokens: 2, TTFTS: 0.5, LatencyS: 0.75},
		{InputTokens: 20, OutputTokens: 4, TTFTS: 1, LatencyS: 1.5},
		{InputTokens: 5, Failed: true},
	}, run.Requests)
	m := run.Measured()
	assert.InDelta(t, 0.75, m.MeanTTFTS, 1e-15)
	assert.InDelta(t, 0.995, m.P99TTFTS, 1e-15)
	assert.InDelta(t, 0.20833333333333334, m.MeanTPOTS, 1e-15)
	assert.InDelta(t, 3.0, m.OutputThroughput, 1e-15)
}

// minimal is a small valid file with latencies and no errors list, as
// servesim writes it, with the given keys replaced ("" removes a key).
func minimal(replace map[string]string) []byte {
	keys := []string{"date", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency", "duration",
		"completed", "failed", "input_lens", "output_lens", "ttfts", "latencies"}
	values := map[string]string{
		"date": `"20250101-120000"`, "model_id": `"m"`, "num_prompts": "3", "request_rate": "2.5", "burstiness": "0.5",
		"max_concurrency": "null", "duration": "4.0", "completed": "2", "failed": "1",
		"input_lens": "[10, 20, 30]", "output_lens": "[5, 0, 1]", "ttfts": "[0.5, 0.25, 1.0]", "latencies": "[2.5, 0.0, 1.0]",
	}
	for k, v := range replace {
		if !strings.Contains(strings.Join(keys, " "), k) {
			keys = append(keys, k)
		}
		values[k] = v
	}
	var parts []string
	for _, k := range keys {
		if v := values[k]; v != "" {
			parts = append(parts, `"`+k+`": `+v)
		}
	}
	return []byte("{" + strings.Join(parts, ", ") + "}")
}

func TestParseRunAccepts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		replace map[string]string
		check   func(t *testing.T, run *Run)
	}{
		{"servesim shape: a failure is latency and output 0", nil, func(t *testing.T, run *Run) {
			assert.Equal(t, []Request{
				{InputTokens: 10, OutputTokens: 5, TTFTS: 0.5, LatencyS: 2.5},
				{InputTokens: 20, Failed: true},
				{InputTokens: 30, OutputTokens: 1, TTFTS: 1, LatencyS: 1},
			}, run.Requests, "the failed request's TTFT is dropped")
			assert.Equal(t, 2.5, run.RequestRate)
			assert.Equal(t, 0.5, run.Burstiness)
			assert.Equal(t, 0, run.MaxConcurrency, "null: none")
		}},
		{`rate "inf"`, map[string]string{"request_rate": `"inf"`}, func(t *testing.T, run *Run) {
			assert.True(t, math.IsInf(run.RequestRate, 1))
		}},
		{"rate Infinity, burstiness Infinity", map[string]string{"request_rate": "Infinity", "burstiness": "Infinity"}, func(t *testing.T, run *Run) {
			assert.True(t, math.IsInf(run.RequestRate, 1))
			assert.True(t, math.IsInf(run.Burstiness, 1))
		}},
		{"no burstiness, no max_concurrency", map[string]string{"burstiness": "", "max_concurrency": ""}, func(t *testing.T, run *Run) {
			assert.Equal(t, 1.0, run.Burstiness)
			assert.Equal(t, 0, run.MaxConcurrency)
		}},
		{"max_concurrency", map[string]string{"max_concurrency": "8"}, func(t *testing.T, run *Run) {
			assert.Equal(t, 8, run.MaxConcurrency)
		}},
		{"errors list decides", map[string]string{"errors": `["", "", "timeout"]`, "completed": "1", "failed": "2"}, func(t *testing.T, run *Run) {
			assert.False(t, run.Requests[0].Failed)
			assert.True(t, run.Requests[1].Failed, "latency and output 0")
			assert.True(t, run.Requests[2].Failed, "its error")
			assert.Zero(t, run.Requests[2].TTFTS)
		}},
		{"an empty completion vLLM counted", map[string]string{"errors": `["", "", ""]`, "ttfts": "[0.5, 0.0, 1.0]", "completed": "3", "failed": "0"}, func(t *testing.T, run *Run) {
			assert.False(t, run.Requests[1].Failed, "no output, no error, counted completed")
			m := run.Measured()
			assert.InDelta(t, 0.75, m.MeanTTFTS, 1e-12, "the empty completion is not fitted on")
		}},
		{"an empty reason vLLM counted failed", map[string]string{"errors": `["", "", ""]`, "ttfts": "[0.5, 0.0, 1.0]"}, func(t *testing.T, run *Run) {
			assert.True(t, run.Requests[1].Failed, "completed says 2")
		}},
		{"no failed: num_prompts counts", map[string]string{"failed": ""}, func(t *testing.T, run *Run) {
			assert.Len(t, run.Requests, 3)
		}},
		{"no counts at all", map[string]string{"failed": "", "completed": "", "num_prompts": ""}, func(t *testing.T, run *Run) {
			assert.Len(t, run.Requests, 3)
		}},
		{"latencies preferred to itls", map[string]string{"itls": "[[0.5], [], []]"}, func(t *testing.T, run *Run) {
			assert.Equal(t, 2.5, run.Requests[0].LatencyS)
		}},
		{"nothing completed, duration 0", map[string]string{"output_lens": "[0, 0, 0]", "latencies": "[0, 0, 0]", "completed": "0", "failed": "3", "duration": "0"}, func(t *testing.T, run *Run) {
			assert.Equal(t, Metrics{}, run.Measured())
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run, err := ParseRun("run.json", minimal(tt.replace))
			require.NoError(t, err)
			tt.check(t, run)
		})
	}
}

func TestParseRunRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"not JSON", []byte("{"), `bench file run.json: not JSON: `},
		{"appended results", []byte("{}\n{}"), `bench file run.json: not JSON: extra data: line 2 column 1 (char 3) (results appended by --append-result? expected one result)`},
		{"a list", []byte("[1]"), `bench file run.json: not a vllm bench serve result (expected a JSON object, got a list)`},
		{"no input_lens", []byte(`{"foo": 1}`), `bench file run.json: not a vllm bench serve result (no "input_lens")`},
		{"not detailed", minimal(map[string]string{"input_lens": ""}), `bench file run.json: no "input_lens": expected the per-request lists (vllm bench serve writes them with --save-detailed)`},
		{"ramp-up", minimal(map[string]string{"ramp_up_strategy": `"linear"`}), `bench file run.json: key "ramp_up_strategy": a ramp-up run: expected a run at one request rate`},
		{"date", minimal(map[string]string{"date": "20250101"}), `bench file run.json: key "date": expected a string, got "20250101"`},
		{"model_id", minimal(map[string]string{"model_id": "[]"}), `bench file run.json: key "model_id": expected a string, got a list`},
		{"no rate", minimal(map[string]string{"request_rate": ""}), `bench file run.json: no "request_rate": expected a number of requests/s or "inf"`},
		{"rate word", minimal(map[string]string{"request_rate": `"fast"`}), `bench file run.json: key "request_rate": expected a positive number of requests/s or "inf", got "fast"`},
		{"rate 0", minimal(map[string]string{"request_rate": "0"}), `bench file run.json: key "request_rate": expected a positive number of requests/s or "inf", got "0"`},
		{"rate NaN", minimal(map[string]string{"request_rate": "NaN"}), `bench file run.json: key "request_rate": expected a positive number of requests/s or "inf", got "nan"`},
		{"burstiness", minimal(map[string]string{"burstiness": "-1"}), `bench file run.json: key "burstiness": expected a positive number, got "-1"`},
		{"max_concurrency", minimal(map[string]string{"max_concurrency": "1.5"}), `bench file run.json: key "max_concurrency": expected a positive integer or null, got "1.5"`},
		{"no duration", minimal(map[string]string{"duration": ""}), `bench file run.json: no "duration": expected the benchmark's duration, s`},
		{"duration", minimal(map[string]string{"duration": `"4"`}), `bench file run.json: key "duration": expected a non-negative number of seconds, got "4"`},
		{"duration 0", minimal(map[string]string{"duration": "0"}), `bench file run.json: key "duration": 0 with 2 completed requests: expected a positive number of seconds`},
		{"input_lens type", minimal(map[string]string{"input_lens": "3"}), `bench file run.json: key "input_lens": expected a list of positive integers (prompt tokens), got "3"`},
		{"input_lens 0", minimal(map[string]string{"input_lens": "[10, 0, 30]"}), `bench file run.json: key "input_lens": entry 1 is "0": expected a list of positive integers (prompt tokens)`},
		{"output_lens", minimal(map[string]string{"output_lens": "[5, -1, 1]"}), `bench file run.json: key "output_lens": entry 1 is "-1": expected a list of non-negative integers (output tokens)`},
		{"no output_lens", minimal(map[string]string{"output_lens": ""}), `bench file run.json: no "output_lens": expected a list of non-negative integers (output tokens)`},
		{"ttfts type", minimal(map[string]string{"ttfts": `{"a": 1}`}), `bench file run.json: key "ttfts": expected a list of non-negative numbers (s), got an object`},
		{"ttfts negative", minimal(map[string]string{"ttfts": "[0.5, -0.25, 1.0]"}), `bench file run.json: key "ttfts": entry 1 is "-0.25": expected a list of non-negative numbers (s)`},
		{"ttfts bool", minimal(map[string]string{"ttfts": "[0.5, true, 1.0]"}), `bench file run.json: key "ttfts": entry 1 is true: expected a list of non-negative numbers (s)`},
		{"latencies Infinity", minimal(map[string]string{"latencies": "[Infinity, 0, 1]"}), `bench file run.json: key "latencies": entry 0 is "inf": expected a list of non-negative numbers (s)`},
		{"itls entry", minimal(map[string]string{"latencies": "", "itls": "[[0.5], 1, []]"}), `bench file run.json: key "itls": entry 1 is "1": expected a list of lists of non-negative numbers (s)`},
		{"itls item", minimal(map[string]string{"latencies": "", "itls": `[[0.5, "x"], [], []]`}), `bench file run.json: key "itls": entry 0, item 1 is "x": expected a list of lists of non-negative numbers (s)`},
		{"errors entry", minimal(map[string]string{"errors": `["", null, ""]`}), `bench file run.json: key "errors": entry 1 is null: expected a list of strings ("" for success)`},
		{"no latency", minimal(map[string]string{"latencies": ""}), `bench file run.json: no "latencies" or "itls": expected one of them to give each request's latency`},
		{"ttfts short", minimal(map[string]string{"ttfts": "[0.5, 0.25]"}), `bench file run.json: key "ttfts" has 2 entries, "input_lens" 3`},
		{"itls long", minimal(map[string]string{"itls": "[[], [], [], []]"}), `bench file run.json: key "itls" has 4 entries, "input_lens" 3`},
		{"errors short", minimal(map[string]string{"errors": `[""]`}), `bench file run.json: key "errors" has 1 entries, "input_lens" 3`},
		{"completed + failed", minimal(map[string]string{"failed": "2"}), `bench file run.json: key "input_lens" has 3 entries, "completed" + "failed" 2 + 2`},
		{"num_prompts", minimal(map[string]string{"failed": "", "num_prompts": "4"}), `bench file run.json: key "input_lens" has 3 entries, "num_prompts" 4`},
		{"failed alone", minimal(map[string]string{"completed": ""}), `bench file run.json: key "failed" without "completed": expected both`},
		{"completed count", minimal(map[string]string{"completed": "3", "failed": "0"}), `bench file run.json: key "completed" is 3, but 2 requests completed (a request failed when its "errors" entry is non-empty, or its latency and "output_lens" entry are 0)`},
		{"ttft after latency", minimal(map[string]string{"ttfts": "[3.0, 0, 1]"}), `bench file run.json: key "ttfts": entry 0 is 3.0, more than the request's latency 2.5 (from "latencies"): expected a TTFT at most the latency`},
		{"num_prompts type", minimal(map[string]string{"num_prompts": `"3"`}), `bench file run.json: key "num_prompts": expected a non-negative integer, got "3"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRun("run.json", tt.data)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "got %q, want %q", err, tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestReadRunFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := ReadRun(filepath.Join(dir, "missing.json"))
	require.Error(t, err)
	assert.Equal(t, "bench file "+filepath.Join(dir, "missing.json")+": no such file or directory", err.Error())
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxBenchFileBytes+1)) // sparse
	require.NoError(t, f.Close())
	_, err = ReadRun(big)
	require.Error(t, err)
	assert.Equal(t, "bench file "+big+": 256.0 MiB: larger than the 256 MiB cap", err.Error())
}

// TestReadRunRoundTrip reads what `servesim bench --save-result` writes
// (vllmbench's Document, encoded by jsonout) back to the same values.
func TestReadRunRoundTrip(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	records := []plant.RequestRecord{
		{RequestID: 0, ArrivalTimeS: 0.5, FirstTokenTimeS: 0.7, CompletionTimeS: 1.7, PromptTokens: 100, OutputTokens: 11},
		{RequestID: 1, ArrivalTimeS: 0.6, FirstTokenTimeS: 1.0, CompletionTimeS: 1.0, PromptTokens: 50, OutputTokens: 1},
		{RequestID: 2, ArrivalTimeS: 1.2, FirstTokenTimeS: 1.5, CompletionTimeS: 3.5, PromptTokens: 80, OutputTokens: 5},
		{RequestID: 3, ArrivalTimeS: 3.0, FirstTokenTimeS: 3.25, CompletionTimeS: nan, PromptTokens: 70, OutputTokens: 9}, // unfinished after its first token
		{RequestID: 4, ArrivalTimeS: 3.1, FirstTokenTimeS: nan, CompletionTimeS: nan, PromptTokens: 60, OutputTokens: 4},
	}
	for _, tt := range []struct {
		name string
		cfg  vllmbench.SaveConfig
	}{
		{"inf", vllmbench.SaveConfig{Date: "20250101-120000", Backend: "servesim", ModelID: "llama-3.1-8b", TokenizerID: "llama-3.1-8b",
			NumPrompts: 5, RequestRate: math.Inf(1), Burstiness: 1}},
		{"rate and concurrency", vllmbench.SaveConfig{Date: "20250102-130000", Backend: "servesim", ModelID: "servesim-proxy", TokenizerID: "servesim-proxy",
			NumPrompts: 5, RequestRate: 2.5, Burstiness: 0.25, MaxConcurrency: 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := vllmbench.ServeOf(&plant.Report{Result: plant.Result{Requests: records}},
				vllmbench.ServeOptions{Metrics: vllmbench.MetricNames, Percentiles: []float64{99}, MaxConcurrency: tt.cfg.MaxConcurrency, RequestRate: tt.cfg.RequestRate})
			require.NoError(t, err)
			chunks, err := jsonout.Chunks(s.Document(tt.cfg))
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), tt.cfg.FileName())
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(byteStrings(chunks), "")), 0o644))

			run, err := ReadRun(path)
			require.NoError(t, err)
			assert.Equal(t, tt.cfg.Date, run.Date)
			assert.Equal(t, tt.cfg.ModelID, run.ModelID)
			assert.Equal(t, tt.cfg.RequestRate, run.RequestRate)
			assert.Equal(t, tt.cfg.Burstiness, run.Burstiness)
			assert.Equal(t, tt.cfg.MaxConcurrency, run.MaxConcurrency)
			assert.Equal(t, s.DurationS, run.DurationS)
			want := make([]Request, len(records))
			for i := range records {
				r := &records[i]
				want[i] = Request{InputTokens: r.PromptTokens, Failed: !r.Completed()}
				if r.Completed() {
					want[i].OutputTokens, want[i].TTFTS, want[i].LatencyS = r.OutputTokens, r.TTFTS(), r.LatencyS()
				}
			}
			assert.Equal(t, want, run.Requests)
			// Measured agrees with the statistics servesim wrote.
			m := run.Measured()
			assert.InDelta(t, s.MeanTTFTMs/1000, m.MeanTTFTS, 1e-12)
			assert.InDelta(t, s.P99TTFTMs/1000, m.P99TTFTS, 1e-12)
			assert.InDelta(t, s.MeanTPOTMs/1000, m.MeanTPOTS, 1e-12)
			assert.InDelta(t, s.OutputThroughput, m.OutputThroughput, 1e-12)
		})
	}
}

// byteStrings are chunks as strings.
func byteStrings(chunks [][]byte) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = string(c)
	}
	return out
}

// TestMeasured checks Measured on a run computed by hand.
func TestMeasured(t *testing.T) {
	t.Parallel()
	run := &Run{DurationS: 10, Requests: []Request{
		{InputTokens: 10, OutputTokens: 11, TTFTS: 0.5, LatencyS: 1.5},  // TPOT 1/10 = 0.1
		{InputTokens: 10, OutputTokens: 5, TTFTS: 0.25, LatencyS: 1.25}, // TPOT 1/4 = 0.25
		{InputTokens: 10, OutputTokens: 1, TTFTS: 1.0, LatencyS: 1.0},   // no TPOT
		{InputTokens: 10, OutputTokens: 3, Failed: true},                // not counted
		{InputTokens: 10, OutputTokens: 3, TTFTS: 2.0, LatencyS: 2.5},   // TPOT 0.5/2 = 0.25
	}}
	m := run.Measured()
	// TTFTs 0.5, 0.25, 1, 2: mean 3.75/4; sorted 0.25 0.5 1 2, numpy's
	// linear p99 at index 0.99*3 = 2.97: 1 + 0.97*(2-1).
	assert.InDelta(t, 0.9375, m.MeanTTFTS, 1e-15)
	assert.InDelta(t, 1.97, m.P99TTFTS, 1e-12)
	assert.InDelta(t, 0.2, m.MeanTPOTS, 1e-15, "(0.1+0.25+0.25)/3")
	assert.InDelta(t, 2.0, m.OutputThroughput, 1e-15, "(11+5+1+3)/10: the failed request's tokens left out")
	assert.Nil(t, m.MeanPowerW)
	assert.Nil(t, m.EnergyPerTokenJ)
}

// FuzzParseRun: ParseRun never panics, its errors are one line naming the
// file first, and a parsed run has one request per entry of each
// per-request list, completed ones with 0 <= TTFT <= latency.
func FuzzParseRun(f *testing.F) {
	for _, name := range []string{"vllm-0.11.json", "vllm-0.6.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "bench", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add(minimal(nil))
	f.Add(minimal(map[string]string{"errors": `["", "", "x"]`, "itls": "[[0.5], [], []]", "latencies": ""}))
	f.Add([]byte(`{"input_lens": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := ParseRun("f.json", data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "bench file f.json: "), "%q", err)
			require.NotContains(t, err.Error(), "\n")
			return
		}
		v, err := pycompat.ParseJSON(data)
		require.NoError(t, err)
		obj := v.(*pycompat.Object)
		for _, key := range []string{"input_lens", "output_lens", "ttfts", "latencies", "itls", "errors"} {
			if list, ok := obj.Get(key); ok {
				require.Len(t, list, len(run.Requests), key)
			}
		}
		for _, q := range run.Requests {
			require.Positive(t, q.InputTokens)
			require.GreaterOrEqual(t, q.OutputTokens, 0)
			if !q.Failed {
				require.True(t, q.TTFTS >= 0 && q.TTFTS <= q.LatencyS, "%+v", q)
			}
		}
		m := run.Measured()
		require.False(t, math.IsNaN(m.MeanTTFTS) || math.IsNaN(m.P99TTFTS) || math.IsNaN(m.MeanTPOTS) || math.IsNaN(m.OutputThroughput))
	})
}
