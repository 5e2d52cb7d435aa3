package main

import (
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/benchload"
	"servesim/internal/plant"
	"servesim/internal/vllmbench"
)

// parseBench runs `servesim bench args` with a runF that captures the
// options instead of benchmarking.
func parseBench(t *testing.T, args ...string) (*benchOptions, int, string) {
	t.Helper()
	o, code, _, stderr := parseFlags(t, "bench", newBenchCmd, args...)
	return o, code, stderr
}

func TestBenchFlagDefaultsAreVLLMs(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseBench(t)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, benchload.Options{
		DatasetName: "random", NumPrompts: 1000, RandomInputLen: 1024, RandomOutputLen: 128,
		CustomOutputLen: 256, RequestRate: math.Inf(1), Burstiness: 1,
	}, o.Load)
	assert.Zero(t, o.MaxConcurrency, "no --max-concurrency: an open loop")
	assert.Equal(t, vllmbench.ServeOptions{Metrics: []string{"ttft", "tpot", "itl"}, Percentiles: []float64{99}, Goodput: vllmbench.Goodput{},
		RequestRate: math.Inf(1)}, o.Report)
	assert.False(t, o.SaveResult)
	assert.False(t, o.SaveDetailed)
	assert.Empty(t, o.ResultDir)
	assert.Empty(t, o.ResultFilename)
	assert.True(t, o.Requests && o.Summary, "records kept for the report, no trajectory")
	assert.Equal(t, plant.NewPlant(nil), o.Plant)
	assert.Equal(t, "chunked", o.Scheduler)
	assert.Equal(t, "max", o.Controller)
	assert.Equal(t, plant.ServiceReference, o.Service.Kind)
}

func TestBenchFlagsSetEveryField(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseBench(t,
		"--dataset-name", "sharegpt", "--dataset-path", "sg.json", "--num-prompts", "50", "--seed", "7",
		"--sharegpt-output-len", "64", "--request-rate", "2.5", "--burstiness", "0.5", "--max-concurrency", "8",
		"--goodput", "ttft:500", "tpot:50", "--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99.9",
		"--save-result", "--result-dir", "out", "--result-filename", "r.json", "--ignore-eos", "--save-detailed",
		"--replicas", "2", "--controller", "min", "-o", "summary.txt")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, benchload.Options{
		DatasetName: "sharegpt", DatasetPath: "sg.json", NumPrompts: 50, Seed: 7, RandomInputLen: 1024, RandomOutputLen: 128,
		CustomOutputLen: 256, ShareGPTOutputLen: 64, RequestRate: 2.5, Burstiness: 0.5,
	}, o.Load)
	assert.Equal(t, 8, o.MaxConcurrency)
	assert.Equal(t, vllmbench.ServeOptions{Metrics: []string{"ttft", "e2el"}, Percentiles: []float64{50, 99.9},
		Goodput: vllmbench.Goodput{"ttft": 500, "tpot": 50}, MaxConcurrency: 8, RequestRate: 2.5}, o.Report)
	assert.True(t, o.SaveResult && o.IgnoreEOS && o.SaveDetailed)
	assert.Equal(t, "out", o.ResultDir)
	assert.Equal(t, "r.json", o.ResultFilename)
	assert.True(t, o.Fleet.Enabled)
	assert.Equal(t, "min", o.Controller)
	assert.Equal(t, "summary.txt", o.Output.Path)
}

func TestBenchUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--dataset-name", "sonnet"}, `--dataset-name "sonnet": expected random, sharegpt or custom`},
		{[]string{"--dataset-path", "x.json"}, `--dataset-path "x.json": cannot be used with --dataset-name random (give --dataset-name sharegpt or custom)`},
		{[]string{"--dataset-name", "custom"}, `--dataset-name custom: needs --dataset-path`},
		{[]string{"--dataset-name", "custom", "--dataset-path", "c.json"}, `--dataset-path "c.json": expected a .jsonl file for --dataset-name custom (JSON Lines)`},
		{[]string{"--num-prompts", "0"}, `--num-prompts 0: expected a whole number from 1 to 10000000`},
		{[]string{"--num-prompts", "x"}, `--num-prompts "x": expected a whole number of at least 1`},
		{[]string{"--random-range-ratio", "1"}, `--random-range-ratio 1: expected a number in [0, 1)`},
		{[]string{"--random-input-len", "0"}, `--random-input-len 0: too small: with --random-range-ratio 0 and --random-prefix-len 0 the shortest prompt has 0 tokens (expected at least 1)`},
		{[]string{"--random-output-len", "0"}, `--random-output-len 0: expected a whole number of tokens of at least 1`},
		{[]string{"--request-rate", "0"}, `--request-rate 0: expected a positive number of requests per second, or inf`},
		{[]string{"--request-rate", "-inf"}, `--request-rate -Inf: expected a positive number of requests per second, or inf`},
		{[]string{"--burstiness", "0"}, `--burstiness 0: expected a positive number (1: Poisson arrivals)`},
		{[]string{"--max-concurrency", "0"}, `--max-concurrency 0: expected a whole number of at least 1`},
		{[]string{"--goodput", "ttft"}, `--goodput "ttft": expected a KEY:VALUE pair, KEY ttft, tpot or e2el and VALUE a number of ms`},
		{[]string{"--goodput", "ttft:1", "itl:2"}, `--goodput "itl:2": unknown metric "itl": expected ttft, tpot or e2el`},
		{[]string{"--goodput", "e2el:-5"}, `--goodput "e2el:-5": expected a nonnegative number of ms`},
		{[]string{"--percentile-metrics", "ttft,latency"}, `--percentile-metrics "ttft,latency": unknown metric "latency": expected a comma-separated list of ttft, tpot, itl, e2el`},
		{[]string{"--metric-percentiles", "99,100.5"}, `--metric-percentiles "99,100.5": "100.5": expected a comma-separated list of percentiles in [0, 100]`},
		{[]string{"tpot:50"}, `unexpected argument "tpot:50": bench takes flags only (arguments may only follow --goodput)`},
		{[]string{"--scheduler", "fifo"}, `--scheduler: `},
		{[]string{"--gpu", "h100"}, `--gpu: needs --service-model batched`},
		{[]string{"--replicas", "0"}, `--replicas 0: expected a whole number from 1 to 4096`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			o, code, stderr := parseBench(t, tt.args...)
			assert.Nil(t, o, "refused before running")
			assert.Equal(t, exitUsage, code)
			assert.Regexp(t, "^servesim: "+regexp.QuoteMeta(tt.want), stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
		})
	}
}

// summaryValue is the value of a label's line of the summary block.
func summaryValue(t *testing.T, text, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +(\S+) *$`).FindStringSubmatch(text)
	require.NotNil(t, m, "%q in\n%s", label, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

func TestBenchRunIsConsistentWithItsWorkload(t *testing.T) {
	t.Parallel()
	args := []string{"--num-prompts", "40", "--request-rate", "4", "--random-range-ratio", "0.5",
		"--random-input-len", "200", "--random-output-len", "20", "--random-prefix-len", "10", "--seed", "3"}
	w, err := benchload.Generate(benchload.Options{DatasetName: "random", NumPrompts: 40, Seed: 3, RandomInputLen: 200,
		RandomOutputLen: 20, RandomRangeRatio: 0.5, RandomPrefixLen: 10, RequestRate: 4, Burstiness: 1})
	require.NoError(t, err)
	prompt, output := 0, 0
	for _, r := range w.Requests {
		prompt, output = prompt+r.PromptTokens, output+r.OutputTokens
	}
	s, out, errOut := testStreams("")
	require.Equal(t, exitOK, run(context.Background(), append([]string{"bench"}, args...), s), errOut.String())
	text := out.String()
	assert.Regexp(t, `^============ Serving Benchmark Result ============\n`, text)
	assert.Regexp(t, `\n==================================================\n$`, text)
	assert.Equal(t, 40.0, summaryValue(t, text, "Successful requests:"))
	assert.Equal(t, float64(prompt), summaryValue(t, text, "Total input tokens:"))
	assert.Equal(t, float64(output), summaryValue(t, text, "Total generated tokens:"))
	duration := summaryValue(t, text, "Benchmark duration (s):")
	assert.InEpsilon(t, 40/duration, summaryValue(t, text, "Request throughput (req/s):"), 0.02)
	assert.NotContains(t, text, "Maximum request concurrency:")
	assert.NotContains(t, text, "Request goodput")
	for _, header := range []string{"---------------Time to First Token----------------", "-----Time per Output Token (excl. 1st token)------",
		"---------------Inter-token Latency----------------"} {
		assert.Contains(t, text, header+"\n")
	}
	assert.Positive(t, summaryValue(t, text, "P99 ITL (ms):"))
}

func TestBenchRequestRateRow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string // the row's value; "" for no row
	}{
		{[]string{"--request-rate", "4"}, "4.00"},
		{[]string{"--request-rate", "0.5", "--max-concurrency", "2"}, "0.50"},
		{nil, ""}, // inf
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			s, out, errOut := testStreams("")
			args := append([]string{"bench", "--num-prompts", "4", "--random-input-len", "64", "--random-output-len", "8"}, tt.args...)
			require.Equal(t, exitOK, run(context.Background(), args, s), errOut.String())
			if tt.want == "" {
				assert.NotContains(t, out.String(), "Request rate configured")
				return
			}
			assert.Regexp(t, `\nRequest rate configured \(RPS\):           `+regexp.QuoteMeta(tt.want)+` +\nBenchmark duration`, out.String())
		})
	}
}

func TestBenchWarnsOfFailedRequests(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string // the stderr line; "" for none
	}{
		{"all finish", []string{"--num-prompts", "10", "--request-rate", "5"}, ""},
		{"some cut off", []string{"--num-prompts", "50", "--max-sim-time", "5"},
			`^servesim: (\d+) of 50 requests failed: unfinished when the simulation stopped at --max-sim-time 5 s \(raise --max-sim-time to let them finish\)\n$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, out, errOut := testStreams("")
			require.Equal(t, exitOK, run(context.Background(), append([]string{"bench"}, tt.args...), s), "exit 0 with failures, as vLLM")
			if tt.want == "" {
				assert.Empty(t, errOut.String())
				return
			}
			m := regexp.MustCompile(tt.want).FindStringSubmatch(errOut.String())
			require.NotNil(t, m, errOut.String())
			failed, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			assert.Positive(t, failed)
			assert.Equal(t, float64(50-failed), summaryValue(t, out.String(), "Successful requests:"))
		})
	}
}

func TestBenchModelID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	card := `"weight_gb": 2.5, "layers": 16, "hidden_size": 2048, "attention_heads": 16, "kv_heads": 4, "head_size": 128, "dtype": "float16"`
	named, unnamed := filepath.Join(dir, "mymodel.json"), filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(named, []byte(`{"name": "acme/My-Model-7B", `+card+`}`), 0o644))
	require.NoError(t, os.WriteFile(unnamed, []byte(`{`+card+`}`), 0o644))
	for _, tt := range []struct {
		name, kind, model string
		want, wantFile    string
	}{
		{"the proxy", plant.ServiceReference, "", "servesim-proxy", "servesim-proxy"},
		{"a built-in card as given", plant.ServiceBatched, "Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"},
		{"a Hugging Face id as given", plant.ServiceBatched, "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"},
		{"a card file's name", plant.ServiceBatched, named, "acme/My-Model-7B", "My-Model-7B"},
		{"a card file without one: its base name", plant.ServiceBatched, unnamed, "other", "other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := &benchOptions{}
			o.Service.Kind, o.Service.ModelCard = tt.kind, tt.model
			got, err := o.modelID()
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			cfg := vllmbench.SaveConfig{Backend: "servesim", ModelID: got, RequestRate: math.Inf(1), Date: "20250101-120000"}
			assert.Equal(t, "servesim-infqps-"+tt.wantFile+"-20250101-120000.json", cfg.FileName())
		})
	}
}

func TestBenchResultDirErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	tests := []struct {
		name, resultDir, want string
	}{
		{"a regular file", file, file + ": not a folder"},
		{"a file with a slash", file + "/", file + "/: not a folder"},
		{"under a regular file", filepath.Join(file, "sub"), filepath.Join(file, "sub") + ": " + file + " is not a folder"},
		{"a FIFO", fifo, fifo + ": not a folder"},
	}
	// A private character device (as /dev/null's numbers), where the
	// process may make one.
	if dev := filepath.Join(dir, "null"); syscall.Mknod(dev, syscall.S_IFCHR|0o600, 1<<8|3) == nil {
		tests = append(tests, struct{ name, resultDir, want string }{"a device", dev, dev + ": not a folder"})
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o555))
		tests = append(tests, struct{ name, resultDir, want string }{"in a read-only folder", filepath.Join(ro, "a", "b"),
			filepath.Join(ro, "a", "b") + ": folder " + ro + " is not writable"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, out, errOut := testStreams("")
			code := run(context.Background(), []string{"bench", "--num-prompts", "2", "--save-result", "--result-dir", tt.resultDir}, s)
			assert.Equal(t, exitInput, code)
			assert.Equal(t, "servesim: --result-dir "+tt.want+"\n", errOut.String(), "one line")
			assert.Empty(t, out.String(), "nothing printed")
		})
	}
}

func TestResultDirErrorWording(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "mkdir", Path: "out", Err: syscall.ENOTDIR}, "--result-dir out: not a folder"},
		{&fs.PathError{Op: "mkdir", Path: "out/", Err: syscall.EEXIST}, "--result-dir out/: not a folder"},
		{&fs.PathError{Op: "mkdir", Path: "a", Err: syscall.ENOTDIR}, "--result-dir a/b/out: a is not a folder"},
		{&fs.PathError{Op: "mkdir", Path: "ro/a", Err: syscall.EACCES}, "--result-dir ro/a/out: folder ro is not writable"},
		{&fs.PathError{Op: "mkdir", Path: "ro/out", Err: syscall.EPERM}, "--result-dir ro/out: folder ro is not writable"},
		{&fs.PathError{Op: "mkdir", Path: "ro/out", Err: syscall.EROFS}, "--result-dir ro/out: folder ro is on a read-only file system"},
		{&fs.PathError{Op: "mkdir", Path: "full/out", Err: syscall.ENOSPC}, "--result-dir full/out: cannot create folder full/out: no space left on device"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			dir := strings.TrimPrefix(strings.SplitN(tt.want, ":", 2)[0], "--result-dir ")
			assert.EqualError(t, resultDirError(dir, tt.err), tt.want)
		})
	}
}

// TestBenchCommitsItsOutputsTogether: the saved result and the result
// block appear together or not at all, and a failed run removes the
// folders --result-dir made.
func TestBenchCommitsItsOutputsTogether(t *testing.T) {
	t.Parallel()
	args := func(resultDir, resultFile, out string) func(dir string) []string {
		return func(dir string) []string {
			a := []string{"bench", "--num-prompts", "2", "--save-result", "--result-dir", filepath.Join(dir, resultDir), "--result-filename", resultFile}
			if out != "" {
				a = append(a, "-o", filepath.Join(dir, out))
			}
			return a
		}
	}
	cases := []commitCase{
		{name: "-o fails", args: args("new/sub", "r.json", "file/run.txt"), wantErr: notAFolder("-o", "run.txt")},
		{name: "--save-result fails", args: args(".", "file/r.json", "run.txt"), wantErr: notAFolder("--save-result", "r.json")},
		{name: "stdout fails", args: args("new", "r.json", ""), stdout: fullDevice(),
			wantErr: func(string) string { return "stdout: no space left on device" }},
		{name: "all written", args: args("new", "r.json", "run.txt"), want: []string{"new", "run.txt"}},
	}
	// A private character device (as /dev/null's numbers), where the
	// process may make one, receives the saved result at once: a failing
	// -o says so.
	devDir := t.TempDir()
	if dev := filepath.Join(devDir, "null"); syscall.Mknod(dev, syscall.S_IFCHR|0o600, 1<<8|3) == nil {
		cases = append(cases, commitCase{name: "-o fails after a device", args: func(dir string) []string {
			return []string{"bench", "--num-prompts", "2", "--save-result", "--result-dir", devDir, "--result-filename", "null",
				"-o", filepath.Join(dir, "file", "run.txt")}
		}, wantErr: func(dir string) string {
			return notAFolder("-o", "run.txt")(dir) + " (written already: --save-result " + dev + ")"
		}})
	}
	runCommitCases(t, cases)
	data, err := os.ReadFile(filepath.Join(devDir, "null"))
	if err == nil {
		assert.Empty(t, data, "a device read as /dev/null")
	}
}
