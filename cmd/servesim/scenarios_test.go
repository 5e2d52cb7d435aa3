package main

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/scenario"
	"servesim/internal/sharedtest"
)

// parseScenarios runs the scenarios flag parsing only: the registered
// command is swapped for one that records its options instead of running.
func parseScenarios(t *testing.T, args ...string) (*scenariosOptions, int, string) {
	t.Helper()
	o, code, _, stderr := parseFlags(t, "scenarios", newScenariosCmd, args...)
	return o, code, stderr
}

func TestScenariosFlags(t *testing.T) {
	t.Parallel()
	o, code, _ := parseScenarios(t)
	require.Equal(t, exitOK, code)
	assert.Equal(t, 80, o.Requests)
	assert.Equal(t, "42", o.Seed.String())
	assert.Equal(t, 8.5, o.RPS)
	assert.Equal(t, scenario.DefaultBenchmarkOptions(), o.Benchmark)
	assert.Equal(t, "json", o.Format)

	o, code, _ = parseScenarios(t, "--requests", "500", "--seed", "-123456789012345678901234567890", "--rps", "12.5",
		"--ttft-slo-ms", "250", "--tpot-slo-ms", "20", "--closed-loop", "--profiles", "p.json", "--format", "table", "-o", "out.txt")
	require.Equal(t, exitOK, code)
	assert.Equal(t, 500, o.Requests)
	want, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	assert.Equal(t, 0, want.Cmp(o.Seed.Int))
	assert.Equal(t, 12.5, o.RPS)
	assert.Equal(t, scenario.BenchmarkOptions{WorkloadName: scenario.DefaultWorkloadName, TTFTSLOMilliseconds: 250, TPOTSLOMilliseconds: 20, ClosedLoop: true}, o.Benchmark)
	assert.Equal(t, "p.json", o.ProfilesPath)
	assert.Equal(t, "table", o.Format)
	assert.Equal(t, "out.txt", o.Output.Path)

	o, code, _ = parseScenarios(t, "--trace", "t.csv", "--shared-prefix-tokens", "1024")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "t.csv", o.TracePath)
	assert.Equal(t, 1024, o.SharedPrefixTokens)
}

func TestScenariosUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--requests", "0"}, "servesim: --requests 0: expected at least 1\n"},
		{[]string{"--rps", "0"}, "servesim: --rps 0: expected a positive, finite rate\n"},
		{[]string{"--rps", "NaN"}, "servesim: --rps NaN: expected a positive, finite rate\n"},
		{[]string{"--ttft-slo-ms", "-1"}, "servesim: --ttft-slo-ms -1: expected a positive, finite time\n"},
		{[]string{"--tpot-slo-ms", "+Inf"}, "servesim: --tpot-slo-ms +Inf: expected a positive, finite time\n"},
		{[]string{"--format", "csv"}, "servesim: --format \"csv\": expected json or table\n"},
		{[]string{"--seed", "1.5"}, "servesim: --seed \"1.5\": expected a whole number\n"},
		{[]string{"--trace", "t.csv", "--rps", "3"}, "servesim: --rps shapes the synthetic agent trace: it cannot be combined with --trace\n"},
		{[]string{"--shared-prefix-tokens", "5"}, "servesim: --shared-prefix-tokens applies to a replayed trace: use it with --trace\n"},
		{[]string{"--trace", "t.csv", "--shared-prefix-tokens", "-5"}, "servesim: --shared-prefix-tokens -5: expected 0 or more\n"},
		{[]string{"--trace", "-", "--profiles", "-"}, "servesim: --trace and --profiles cannot both read stdin\n"},
		{[]string{"extra"}, "servesim: unknown command \"extra\" for \"servesim scenarios\"\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o, code, errOut := parseScenarios(t, tt.args...)
			assert.Equal(t, exitUsage, code)
			assert.Nil(t, o, "the command must not run")
			assert.Equal(t, tt.want, errOut)
		})
	}
}

// runScenariosArgs runs the real command.
func runScenariosArgs(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	s, out, errOut := testStreams(stdin)
	code := run(context.Background(), append([]string{"scenarios"}, args...), s)
	return code, out.String(), errOut.String()
}

// jsonKeys returns the keys of a JSON object in document order.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	var ordered []string
	dec := json.NewDecoder(strings.NewReader(string(data)))
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		ordered = append(ordered, key.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return ordered
}

func TestScenariosDefaultEqualsReferenceGolden(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(sharedtest.Reference(t, "golden", "seed001_main.json"))
	require.NoError(t, err)
	code, out, errOut := runScenariosArgs(t, "")
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	var want, got any
	require.NoError(t, json.Unmarshal(golden, &want))
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, want, got, "same keys, every number equal")
	assert.Equal(t, jsonKeys(t, golden), jsonKeys(t, []byte(out)), "same key order")
	var comparisons map[string]json.RawMessage
	var doc struct {
		Comparisons json.RawMessage `json:"scenario_comparisons"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NoError(t, json.Unmarshal(doc.Comparisons, &comparisons))
	assert.Equal(t, []string{"baseline", "prefix_reuse", "faster_decode"}, jsonKeys(t, doc.Comparisons), "profile order kept")
}

func TestScenariosCustomRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	profiles := filepath.Join(dir, "p.json")
	require.NoError(t, os.WriteFile(profiles, []byte(`[{"name": "z_first", "prefill_tokens_per_ms": 30, "prefix_cache_hit_efficiency": 0.5,
 "base_tpot_ms": 15, "batch_tpot_slope_ms": 0.5, "max_batch_slots": 8},
 {"name": "a_second", "prefill_tokens_per_ms": 60, "prefix_cache_hit_efficiency": 0.9, "base_tpot_ms": 10, "batch_tpot_slope_ms": 0.2, "max_batch_slots": 32}]`), 0o644))
	code, out, errOut := runScenariosArgs(t, "", "--profiles", profiles, "--requests", "200", "--seed", "9", "--rps", "11", "--ttft-slo-ms", "800", "--closed-loop")
	require.Equal(t, exitOK, code, errOut)
	var doc struct {
		Assumptions json.RawMessage                      `json:"scenario_assumptions"`
		SLO         scenario.SLOTargets                  `json:"slo_targets"`
		Requests    int                                  `json:"trace_requests"`
		Comparisons map[string]scenario.BenchmarkSummary `json:"scenario_comparisons"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, []string{"z_first", "a_second"}, jsonKeys(t, doc.Assumptions))
	assert.Equal(t, scenario.SLOTargets{TTFTSLOMilliseconds: 800, TPOTSLOMilliseconds: 35}, doc.SLO)
	assert.Equal(t, 200, doc.Requests)
	trace, err := scenario.BuildAgentTrace(200, big.NewInt(9), 11)
	require.NoError(t, err)
	want, err := scenario.EvaluateEngineBenchmark(trace,
		scenario.EngineProfile{Name: "a_second", PrefillTokensPerMS: 60, PrefixCacheHitEfficiency: 0.9, BaseTPOTMS: 10, BatchTPOTSlopeMS: 0.2, MaxBatchSlots: 32},
		scenario.BenchmarkOptions{WorkloadName: scenario.DefaultWorkloadName, TTFTSLOMilliseconds: 800, TPOTSLOMilliseconds: 35, ClosedLoop: true})
	require.NoError(t, err)
	assert.Equal(t, want, doc.Comparisons["a_second"])
}

func TestScenariosInputErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"name": "x", "prefill_tokens_per_ms": 26, "prefix_cache_hit_efficiency": 0.45,
  "base_tpot_ms": 17.5, "batch_tpot_slope_ms": 0.62, "max_batch_slots": 0}]`), 0o644))
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"zero capacity", "", []string{"--profiles", bad, "-o", out}, `servesim: profiles ` + bad + ` line 2: profile 1 "x": max_batch_slots 0: capacity must be at least 1` + "\n"},
		{"missing profiles file", "", []string{"--profiles", filepath.Join(dir, "nope.json")}, "servesim: profiles " + filepath.Join(dir, "nope.json") + ": no such file or directory\n"},
		{"profiles from stdin", `[{"name": "x"}]`, []string{"--profiles", "-"}, `servesim: profiles stdin line 1: profile 1 "x": missing field "prefill_tokens_per_ms"` + "\n"},
		{"bad trace", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,10,-3\r\n", []string{"--trace", "-"}, `servesim: trace stdin line 2: GeneratedTokens "-3": token counts must be positive` + "\n"},
		{"unsorted trace", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,1,1\n2023-11-16 18:17:03.9999999,1,1\n", []string{"--trace", "-", "-o", out}, `servesim: trace stdin line 3: TIMESTAMP "2023-11-16 18:17:03.9999999": earlier than the previous row: the trace must be sorted by time` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, errOut := runScenariosArgs(t, tt.stdin, tt.args...)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tt.want, errOut)
			assert.NoFileExists(t, out)
		})
	}
}

func TestScenariosTraceReplay(t *testing.T) {
	t.Parallel()
	code, out, errOut := runScenariosArgs(t, "", "--trace", sharedtest.CodeTrace(t), "--shared-prefix-tokens", "1024", "--format", "table")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "scenario comparisons: 8819 requests")
	assert.Contains(t, out, "AzureLLMInferenceTrace_code.csv")
}

func TestScenariosCommitsItsOutputsTogether(t *testing.T) {
	t.Parallel()
	args := func(plot, out string) func(dir string) []string {
		return func(dir string) []string {
			return []string{"scenarios", "--plot", filepath.Join(dir, plot), "-o", filepath.Join(dir, out)}
		}
	}
	runCommitCases(t, []commitCase{
		{name: "-o fails", args: args("fig.svg", "file/s.json"), wantErr: notAFolder("-o", "s.json")},
		{name: "--plot fails", args: args("file/fig.svg", "s.json"), wantErr: notAFolder("--plot", "fig.svg")},
		{name: "stdout fails", args: func(dir string) []string {
			return []string{"scenarios", "--plot", filepath.Join(dir, "fig.png")}
		}, stdout: fullDevice(), wantErr: func(string) string { return "stdout: no space left on device" }},
		{name: "all written", args: args("fig.svg", "s.json"), want: []string{"fig.svg", "s.json"}},
	})
}
