package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/diagnose"
	"servesim/internal/jsonout"
	"servesim/internal/sharedtest"
)

func TestDiagnoseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    func(*diagnoseOptions)
		wantErr string
	}{
		{"defaults", []string{"a.csv", "b.jsonl"}, func(o *diagnoseOptions) {
			o.Files = []string{"a.csv", "b.jsonl"}
		}, ""},
		{"every flag", []string{"--window", "peak", "--gpu-hourly-cost", "2.5", "--effective-concurrency", "64",
			"--kv-watermark-pct", "90", "--hol-ttft-ratio", "4", "--cold-prefix-hit-pct", "10", "--cold-ttft-ms", "500",
			"--by-window", "60", "-o", "out.json", "-"}, func(o *diagnoseOptions) {
			o.Files, o.Window, o.ByWindowS, o.Output.Path = []string{"-"}, "peak", 60, "out.json"
			o.Diagnosis = diagnose.Options{GPUHourlyCostUSD: 2.5, EffectiveConcurrency: 64,
				Thresholds: diagnose.Thresholds{KVWatermarkPct: 90, HOLTTFTRatio: 4, ColdPrefixHitPct: 10, ColdTTFTMs: 500}}
		}, ""},
		{"demo", []string{"--demo"}, func(o *diagnoseOptions) { o.Demo, o.Files = true, []string{} }, ""},
		{"demo reads no files", []string{"--demo", "a.csv"}, nil, `--demo reads no files (got "a.csv")`},
		{"zero concurrency", []string{"--effective-concurrency", "0"}, nil, "--effective-concurrency 0: must be positive"},
		{"negative cost", []string{"--gpu-hourly-cost", "-1"}, nil, "--gpu-hourly-cost -1: must not be negative"},
		{"NaN threshold", []string{"--cold-ttft-ms", "NaN"}, nil, "--cold-ttft-ms NaN: must be a finite number"},
		{"zero window", []string{"--by-window", "0"}, nil, "--by-window 0: expected a positive number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := testStreams("")
			var got *diagnoseOptions
			cmd := newDiagnoseCmd(s, func(o *diagnoseOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				var coded codedError
				require.ErrorAs(t, err, &coded)
				assert.Equal(t, exitUsage, coded.ExitCode())
				return
			}
			require.NoError(t, err)
			want := &diagnoseOptions{Diagnosis: diagnose.DefaultOptions(), Format: "json"}
			tt.want(want)
			assert.Equal(t, want, got)
		})
	}
}

// runDiagnoseArgs runs `servesim diagnose args...` with stdin.
func runDiagnoseArgs(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	s, out, errOut := testStreams(stdin)
	code := run(context.Background(), append([]string{"diagnose"}, args...), s)
	return code, out.String(), errOut.String()
}

func TestDiagnoseDemoEqualsReference(t *testing.T) {
	t.Parallel()
	code, out, errOut := runDiagnoseArgs(t, "", "--demo")
	require.Equal(t, exitOK, code, errOut)
	var got, want map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	data, err := os.ReadFile(sharedtest.Reference(t, "golden", "seed000_main.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &want))
	assert.Equal(t, want, got)
}

const logHeader = "request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival"

func TestDiagnoseFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "a.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(logHeader+"\nr1,100,10,10,40,10,false,0,50,80\n"), 0o644))
	jsonPath := filepath.Join(dir, "b.jsonl")
	require.NoError(t, os.WriteFile(jsonPath, []byte(`{"request_id":"r2","prompt_tokens":100,"output_tokens":10,"queue_wait_ms":10,"prefill_ms":40,"decode_tpot_ms":10,"preempted":1,"recompute_penalty_ms":500,"prefix_cached_tokens":50,"kv_occupancy_pct_at_arrival":95}`+"\n"), 0o644))

	code, out, errOut := runDiagnoseArgs(t, "", csvPath, jsonPath)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	var s diagnose.Snapshot
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, "a.csv", s.WindowName)
	assert.Equal(t, 2, s.RequestCount)
	assert.Equal(t, diagnose.HypothesisKVThrashing, s.DiagnosticHypothesis)

	code, out, _ = runDiagnoseArgs(t, logHeader+"\nr1,100,10,10,40,10,false,0,50,80\n", "--window", "peak")
	require.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, "peak", s.WindowName)
	assert.Equal(t, 1, s.RequestCount)

	code, out, _ = runDiagnoseArgs(t, logHeader+"\nr1,100,10,10,40,10,false,0,50,80\n")
	require.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, "stdin", s.WindowName)
}

func TestDiagnoseByWindow(t *testing.T) {
	t.Parallel()
	input := "arrival_s," + logHeader + "\n" +
		"1,r1,100,10,10,40,10,false,0,50,80\n" +
		"59.9,r2,100,10,10,40,10,false,0,50,80\n" +
		"130,r3,100,10,3000,40,10,true,9000,50,99\n"
	code, out, errOut := runDiagnoseArgs(t, input, "--by-window", "60", "--window", "api")
	require.Equal(t, exitOK, code, errOut)
	var report diagnose.WindowReport
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	require.Len(t, report.Windows, 2, "the empty minute [60s, 120s) is left out")
	assert.Equal(t, "api [0s, 60s)", report.Windows[0].WindowName)
	assert.Equal(t, 2, report.Windows[0].RequestCount)
	assert.Equal(t, "api [120s, 180s)", report.Windows[1].WindowName)
	assert.Equal(t, diagnose.HypothesisKVThrashing, report.Windows[1].DiagnosticHypothesis)
	assert.Equal(t, "api [120s, 180s)", report.WorstWindow)
}

func TestDiagnoseErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte(logHeader+"\nr1,100,10,10,40,10,false,0,50,80\nr2,100,10,10,40,10,false,0,101,80\n"), 0o644))
	noArrival := filepath.Join(dir, "plain.csv")
	require.NoError(t, os.WriteFile(noArrival, []byte(logHeader+"\nr1,100,10,10,40,10,false,0,50,80\n"), 0o644))
	tests := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{"seed validation names file, line and field", "", []string{bad},
			"servesim: request log " + bad + ` line 3: prefix_cached_tokens "101": invalid completed request token counts: must be between 0 and prompt_tokens (100)` + "\n"},
		{"empty stdin", "", nil, "servesim: request logs stdin: no requests: expected a CSV header row followed by rows, or JSON Lines\n"},
		{"header only", logHeader + "\n", []string{"-"}, "servesim: request logs stdin: no requests: expected a CSV header row followed by rows, or JSON Lines\n"},
		{"missing file", "", []string{filepath.Join(dir, "nope.csv")}, "servesim: request log: open " + filepath.Join(dir, "nope.csv") + ": no such file or directory\n"},
		{"by-window without arrival times", "", []string{"--by-window", "60", noArrival},
			"servesim: request log " + noArrival + " line 1: arrival_s: missing column: splitting into windows needs an arrival_s or timestamp column\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.json")
			code, stdout, stderr := runDiagnoseArgs(t, tt.stdin, append(tt.args, "-o", out)...)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tt.wantErr, stderr)
			assert.NoFileExists(t, out)
		})
	}
}

func TestDiagnoseOnATerminalWithoutFilesPrintsAHint(t *testing.T) {
	t.Parallel()
	log := "request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival\n" +
		"1,100,10,5,20,10,0,0,0,40\n"
	dir := t.TempDir()
	file := filepath.Join(dir, "log.csv")
	require.NoError(t, os.WriteFile(file, []byte(log), 0o644))
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"no file: the hint", nil, exitUsage},
		{"a file is read", []string{file}, exitOK},
		{"- asks for stdin", []string{"-"}, exitOK},
		{"the demo reads nothing", []string{"--demo"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams(log)
			s.InIsTerminal = true
			assert.Equal(t, tt.wantCode, run(context.Background(), append([]string{"diagnose"}, tt.args...), s), errOut.String())
			if tt.wantCode == exitUsage {
				assert.Equal(t, "servesim: diagnose: no request log given and stdin is a terminal: name the log files "+
					"(servesim diagnose requests.csv), pipe a log in (... | servesim diagnose), give - to type it, or run --demo\n", errOut.String())
				assert.Empty(t, out.String())
			} else {
				assert.Empty(t, errOut.String())
				assert.NotEmpty(t, out.String())
			}
		})
	}
}

// commitCase is a run of a command with several outputs, in a temporary
// folder that holds a regular file named "file": an output under it
// cannot be made (root may write any folder, so a read-only one would
// not stop the run).
type commitCase struct {
	name string
	args func(dir string) []string
	// stdout replaces the captured standard output when not nil.
	stdout io.Writer
	// wantErr is the one stderr line of a failing run (after
	// "servesim: "); "" for a run that succeeds.
	wantErr func(dir string) string
	// want lists what dir holds after the run besides "file": nothing
	// after a failure, every output after a success.
	want []string
}

// runCommitCases runs each case and checks that a failing output leaves
// none of the others (nor a temporary file) behind, and that a run that
// succeeds writes them all.
func runCommitCases(t *testing.T, cases []commitCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
			s, stdout, stderr := testStreams("")
			if tc.stdout != nil {
				s.Out = tc.stdout
			}
			code := run(context.Background(), tc.args(dir), s)
			if tc.wantErr != nil {
				assert.Equal(t, exitInput, code)
				assert.Equal(t, "servesim: "+tc.wantErr(dir)+"\n", stderr.String())
				assert.Empty(t, stdout.String())
			} else {
				assert.Equal(t, exitOK, code, stderr.String())
			}
			assert.ElementsMatch(t, append([]string{"file"}, tc.want...), dirNames(t, dir), "no temporary file, and every output or none")
		})
	}
}

// notAFolder is the error line of an output path under dir's regular
// file.
func notAFolder(flag, name string) func(dir string) string {
	return func(dir string) string {
		return flag + " " + filepath.Join(dir, "file", name) + ": " + filepath.Join(dir, "file") + " is not a folder"
	}
}

func TestDiagnoseCommitsItsOutputsTogether(t *testing.T) {
	t.Parallel()
	args := func(plot, out string) func(dir string) []string {
		return func(dir string) []string {
			return []string{"diagnose", "--demo", "--plot", filepath.Join(dir, plot), "-o", filepath.Join(dir, out)}
		}
	}
	runCommitCases(t, []commitCase{
		{name: "-o fails", args: args("fig.svg", "file/d.json"), wantErr: notAFolder("-o", "d.json")},
		{name: "--plot fails", args: args("file/fig.svg", "d.json"), wantErr: notAFolder("--plot", "fig.svg")},
		{name: "stdout fails", args: func(dir string) []string {
			return []string{"diagnose", "--demo", "--format", "table", "--plot", filepath.Join(dir, "fig.png")}
		}, stdout: fullDevice(), wantErr: func(string) string { return "stdout: no space left on device" }},
		{name: "all written", args: args("fig.svg", "d.json"), want: []string{"fig.svg", "d.json"}},
	})
}

// TestDiagnoseCarriesEvidence: the document keeps the seed's fields in
// the seed's order and adds the evidence, the p99 TTFT breakdown and the
// findings after them, for the whole log and for every window (issue 30,
// item 10); the types stream.
func TestDiagnoseCarriesEvidence(t *testing.T) {
	t.Parallel()
	log := filepath.Join("..", "..", "internal", "diagnose", "testdata", "logs", "overload.csv")
	seedKeys := []string{"window_name", "request_count", "mean_e2e_ms", "p50_e2e_ms", "p95_e2e_ms", "p99_e2e_ms",
		"p99_to_p50_ratio", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms", "p99_queue_wait_ms",
		"peak_kv_occupancy_pct", "preemption_count", "estimated_recompute_tokens", "prefix_cache_hit_rate_pct",
		"modeled_cost_per_1k_requests_usd", "diagnostic_hypothesis"}
	wantKeys := append(slices.Clone(seedKeys), "evidence", "p99_ttft_breakdown", "findings")

	code, out, errOut := runDiagnoseArgs(t, "", log)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, wantKeys, objectKeys(t, []byte(out)))
	var d diagnose.Diagnosis
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, diagnose.HypothesisColdPrefix, d.DiagnosticHypothesis)
	require.Len(t, d.Evidence, 3)
	assert.True(t, d.Evidence[2].Verdict)
	assert.True(t, *d.Findings.Overload.Present)
	assert.True(t, d.Findings.NoPrefixCache.Present)

	code, out, errOut = runDiagnoseArgs(t, "", "--by-window", "60", log)
	require.Equal(t, exitOK, code, errOut)
	var raw struct{ Windows []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	require.Len(t, raw.Windows, 3)
	var overloaded []bool
	for _, w := range raw.Windows {
		assert.Equal(t, wantKeys, objectKeys(t, w))
		var d diagnose.Diagnosis
		require.NoError(t, json.Unmarshal(w, &d))
		require.Len(t, d.Evidence, 3)
		overloaded = append(overloaded, *d.Findings.Overload.Present)
	}
	assert.Equal(t, []bool{true, true, false}, overloaded)

	code, out, errOut = runDiagnoseArgs(t, "", "--by-window", "60", "--format", "table", log)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 3, strings.Count(out, "\n  p99 TTFT breakdown: "), "every window's evidence")

	for _, v := range []any{diagnose.Diagnosis{}, diagnose.WindowReport{}} {
		assert.True(t, jsonout.Streamable(reflect.TypeOf(v)), "%T", v)
	}
}

// objectKeys lists the keys of a JSON object in their order.
func objectKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}
