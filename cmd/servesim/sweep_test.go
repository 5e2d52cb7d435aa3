package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/runparams"
	"servesim/internal/sharedtest"
	"servesim/internal/sweep"
	"servesim/internal/sweeprun"
)

// runCLI runs servesim in-process and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	s, out, errOut := testStreams("")
	code := run(context.Background(), args, s)
	return code, out.String(), errOut.String()
}

func TestSweepFlagParsing(t *testing.T) {
	t.Parallel()
	var got *sweepOptions
	cmd := newSweepCmd(&streams{}, func(o *sweepOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--scheduler", "static,chunked", "--controller", "max,fixed:660", "--normalize", "none,0.5",
		"--power-limit", "55,64.8", "--max-active", "32", "--shard", "2/3", "--jobs", "3"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	var names []string
	shard := got.sweep.Shard()
	for _, a := range shard.Axes {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{"profile", "trace", "scheduler", "controller", "normalize", "max-active", "power-limit"}, names)
	assert.Equal(t, sweep.Shard{Axes: shard.Axes, Lo: 5, Hi: 10, Cells: 16}, shard, "cells 5 to 9 of 16: the second of three contiguous shards")
	assert.Equal(t, 3, got.Jobs)
}

// TestJobsZeroIsAllCores: --jobs 0 means all cores for simulate, sweep
// and capacity alike, and is their default.
func TestJobsZeroIsAllCores(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--jobs", "0"}} {
		sw, code, _, stderr := parseFlags(t, "sweep", newSweepCmd, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, 0, sw.Jobs)
		capa, code, _, stderr := parseFlags(t, "capacity", newCapacityCmd, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, 0, capa.Jobs)
		sim, code, _, stderr := parseFlags(t, "simulate", newSimulateCmd, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, 0, sim.Fleet.Jobs)
	}
}

// TestSweepServiceFlags: --service-model is an axis, the other service
// flags one value each.
func TestSweepServiceFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		models []string
		axis   bool
		gpu    string
		seqs   int
	}{
		{"default", nil, []string{plant.ServiceReference}, false, "L4", 0},
		{"reference", []string{"--service-model", "reference"}, []string{plant.ServiceReference}, false, "L4", 0},
		{"batched", []string{"--service-model", "batched", "--gpu", "H100", "--max-num-seqs", "64"}, []string{plant.ServiceBatched}, true, "H100", 64},
		{"both", []string{"--service-model", "reference,batched"}, []string{plant.ServiceReference, plant.ServiceBatched}, true, "L4", 0},
		{"repeated", []string{"--service-model", "reference", "--service-model", "batched"}, []string{plant.ServiceReference, plant.ServiceBatched}, true, "L4", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got *sweepOptions
			cmd := newSweepCmd(&streams{}, func(o *sweepOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			require.NoError(t, cmd.Execute())
			require.NotNil(t, got)
			assert.Equal(t, tt.models, got.ServiceModels)
			var names []string
			for _, a := range got.sweep.Shard().Axes {
				names = append(names, a.Name)
			}
			assert.Equal(t, tt.axis, slices.Contains(names, sweeprun.AxisServiceModel), "%v", names)
			assert.Equal(t, len(tt.models), got.sweep.Shard().Len())
			assert.Equal(t, tt.gpu, got.Service.GPU)
			assert.Equal(t, tt.seqs, got.Service.MaxNumSeqs)
		})
	}
}

func TestSweepRejectsBadAxisValuesBeforeRunning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scheduler", []string{"--scheduler", "chunked,fifo"}, "--scheduler"},
		{"controller", []string{"--controller", "max,fixed:abc"}, "--controller"},
		{"normalize", []string{"--normalize", "0.5,1.5"}, `--normalize "1.5"`},
		{"plant number", []string{"--power-limit", "55,lots"}, `--power-limit "lots": expected a positive number of W`},
		{"plant rule", []string{"--time-step", "-1"}, "--time-step -1"},
		{"whole number", []string{"--max-active", "2.5"}, `--max-active "2.5": expected a positive whole number`},
		{"shard", []string{"--shard", "3/2"}, "--shard"},
		{"format", []string{"--format", "xml"}, "--format"},
		{"jobs", []string{"--jobs", "-1"}, "--jobs -1: expected a nonnegative number (0: all cores)"},
		{"empty profile", []string{"--profile", ""}, "--profile"},
		{"service model", []string{"--service-model", "reference,vllm"}, `--service-model "vllm": expected reference or batched`},
		{"card without batched", []string{"--gpu", "H100"}, "--gpu: needs --service-model batched"},
		{"unknown card", []string{"--service-model", "reference,batched", "--model", "gpt-5"}, `--model "gpt-5": expected a built-in card`},
		{"limit", []string{"--service-model", "batched", "--max-num-seqs", "0"}, "--max-num-seqs 0: expected a whole number of at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"sweep"}, tt.args...)...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")
		})
	}
}

// decodeRecords splits JSON Lines into the run records and the final record.
func decodeRecords(t *testing.T, out string) ([]map[string]any, map[string]any) {
	t.Helper()
	var runs []map[string]any
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		if rec["kind"] == "run" {
			runs = append(runs, rec)
		} else {
			last = rec
		}
	}
	require.Equal(t, "pareto", last["kind"])
	return runs, last
}

func TestSweepRunsEqualSimulate(t *testing.T) {
	t.Parallel()
	trace := sharedtest.CodeTrace(t)
	slo := []string{"--ttft-slo", "2", "--tpot-slo", "0.05", "--e2e-slo", "20"}
	args := append([]string{"sweep", "--trace", trace, "--max-elapsed", "120", "--scheduler", "static,chunked",
		"--controller", "reactive,fixed:660,sampled-reactive:2", "--normalize", "none,0.6", "--kv-capacity", "65536"}, slo...)
	code, out, errOut := runCLI(t, args...)
	require.Equal(t, exitOK, code, errOut)
	runs, _ := decodeRecords(t, out)
	require.Len(t, runs, 12)
	for _, i := range []int{0, 5, 7, 11} {
		rec := runs[i]
		simArgs := append([]string{"simulate", "--summary", "--trace", trace, "--max-elapsed", "120",
			"--scheduler", rec["scheduler"].(string), "--controller", rec["controller"].(string), "--kv-capacity", "65536"}, slo...)
		if u, ok := rec["normalize"].(float64); ok {
			simArgs = append(simArgs, "--normalize", jsonNumber(u))
		}
		code, simOut, simErr := runCLI(t, simArgs...)
		require.Equal(t, exitOK, code, simErr)
		var sim map[string]any
		require.NoError(t, json.Unmarshal([]byte(simOut), &sim))
		assert.Equal(t, sim["summary"], rec["summary"], "cell %d", i)
		assert.Equal(t, sim["metrics"], rec["metrics"], "cell %d", i)
		assert.Equal(t, sim["slo"], rec["slo"], "cell %d", i)
		require.NotNil(t, rec["slo"], "cell %d", i)
	}
}

func jsonNumber(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// runSweepOK runs a sweep that must succeed: exit 0, nothing on stderr,
// and every one of its want records a run with metrics and no error. It
// returns stdout.
func runSweepOK(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"sweep"}, args...)...)
	require.Equal(t, exitOK, code, errOut)
	require.Empty(t, errOut)
	runs, _ := decodeRecords(t, out)
	require.Len(t, runs, want)
	for _, r := range runs {
		require.Nil(t, r["error"], "cell %v", r["cell"])
		require.NotNil(t, r["metrics"], "cell %v", r["cell"])
		require.Positive(t, r["metrics"].(map[string]any)["completed_fraction"], "cell %v", r["cell"])
	}
	return out
}

func TestSweepOutputIsIdenticalWhateverTheJobs(t *testing.T) {
	t.Parallel()
	args := []string{"--max-elapsed", "60", "--scheduler", "static,continuous,chunked",
		"--controller", "max,min,reactive", "--normalize", "none,0.1"}
	one := runSweepOK(t, 18, append(args, "--jobs", "1")...)
	two := runSweepOK(t, 18, append(args, "--jobs", "2")...)
	many := runSweepOK(t, 18, append(args, "--jobs", "7")...)
	assert.Equal(t, one, two)
	assert.Equal(t, one, many)
}

func TestSweepShardsConcatenateToTheWholeGrid(t *testing.T) {
	t.Parallel()
	args := []string{"sweep", "--max-elapsed", "30", "--scheduler", "static,chunked", "--controller", "max,min,reactive"}
	wholeRuns, _ := decodeRecords(t, runSweepOK(t, 6, args[1:]...))
	var joined []map[string]any
	for _, shard := range []string{"1/4", "2/4", "3/4", "4/4"} {
		code, out, errOut := runCLI(t, append(args, "--shard", shard)...)
		require.Equal(t, exitOK, code, errOut)
		runs, _ := decodeRecords(t, out)
		joined = append(joined, runs...)
	}
	assert.Equal(t, wholeRuns, joined)
}

func TestSweepFailingCellIsReportedWhileOthersComplete(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nosuch.csv")
	code, out, errOut := runCLI(t, "sweep", "--max-elapsed", "30", "--profile", "embedded,"+missing, "--controller", "max,min")
	assert.Equal(t, exitInput, code)
	assert.Contains(t, errOut, "2 of 4 runs failed")
	runs, pareto := decodeRecords(t, out)
	require.Len(t, runs, 4)
	for i, rec := range runs {
		if i < 2 {
			assert.Nil(t, rec["error"])
			assert.NotNil(t, rec["metrics"])
		} else {
			assert.Contains(t, rec["error"], "nosuch.csv")
			assert.Nil(t, rec["metrics"])
		}
	}
	groups := pareto["groups"].([]any)
	require.Len(t, groups, 2)
	assert.Empty(t, groups[1].(map[string]any)["pareto_front"])
}

func TestSweepParetoAndBest(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "sweep", "--max-elapsed", "60", "--normalize", "0.05,0.1", "--controller", "max,min,reactive,fixed:1200",
		"--ttft-slo", "5", "--tpot-slo", "1")
	require.Equal(t, exitOK, code, errOut)
	runs, pareto := decodeRecords(t, out)
	group := pareto["groups"].([]any)[0].(map[string]any)
	front := group["pareto_front"].([]any)
	require.NotEmpty(t, front)
	// No run dominates a front member.
	for _, f := range front {
		fm := f.(map[string]any)
		for _, r := range runs {
			m := r["metrics"].(map[string]any)
			e, ttft := m["energy_per_output_token_j"].(float64), m["p95_ttft_s"].(float64)
			fe, fttft := fm["energy_per_output_token_j"].(float64), fm["p95_ttft_s"].(float64)
			assert.False(t, e <= fe && ttft <= fttft && (e < fe || ttft < fttft), "cell %v dominates front cell %v", r["cell"], fm["cell"])
		}
	}
	best := group["best_under_slo"].(map[string]any)
	assert.LessOrEqual(t, best["p95_ttft_s"].(float64), 5.0)
	assert.Equal(t, 5.0, group["ttft_slo_s"])
	for _, r := range runs {
		m := r["metrics"].(map[string]any)
		if m["p95_ttft_s"].(float64) <= 5 && m["p95_tpot_s"].(float64) <= 1 && m["unfinished_requests_at_end"].(float64) == 0 {
			assert.GreaterOrEqual(t, m["energy_per_output_token_j"].(float64), best["energy_per_output_token_j"].(float64))
		}
	}
}

func TestSweepCSVAndTable(t *testing.T) {
	t.Parallel()
	args := []string{"sweep", "--max-elapsed", "30", "--controller", "max,min", "--power-limit", "50,64.8"}
	code, out, errOut := runCLI(t, append(args, "--format", "csv")...)
	require.Equal(t, exitOK, code, errOut)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 5)
	assert.Equal(t, []string{"cell", "profile", "trace", "scheduler", "controller", "normalize", "power_limit_w", "error", "controller_name", "scheduler_name"}, rows[0][:10])
	assert.Contains(t, rows[0], "p95_ttft_s")
	assert.Equal(t, "chunked", rows[1][3])
	assert.Equal(t, "chunked_prefill_scheduler", rows[1][9])
	assert.Equal(t, "64.8", rows[4][6])

	code, out, errOut = runCLI(t, append(args, "--format", "table")...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "p95 TTFT (s)")
	assert.Contains(t, out, "Pareto front")
}

// TestSweepCSVHeaderNamesEveryColumnOnce gives every axis, so that every
// axis column and every summary column is in the header.
func TestSweepCSVHeaderNamesEveryColumnOnce(t *testing.T) {
	t.Parallel()
	args := []string{"sweep", "--max-elapsed", "10", "--format", "csv"}
	for _, pp := range runparams.Params {
		p := plant.NewPlant(nil)
		args = append(args, "--"+pp.Name, strconv.FormatFloat(pp.Get(&p), 'g', -1, 64))
	}
	code, out, errOut := runCLI(t, args...)
	require.Equal(t, exitOK, code, errOut)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 2)
	seen := map[string]bool{}
	for _, name := range rows[0] {
		assert.False(t, seen[name], "column %q appears twice", name)
		seen[name] = true
	}
	sloColumns := []string{"ttft_slo_s", "tpot_slo_s", "e2e_slo_s", "requests_meeting_slo", "attainment", "goodput_requests_per_s",
		"p50_ttft_s", "p90_ttft_s", "p99_ttft_s", "p50_tpot_s", "p90_tpot_s", "p99_tpot_s", "p50_e2e_s", "p90_e2e_s", "p99_e2e_s",
		"mpc_successful_solves", "mpc_fallback_count"}
	assert.Len(t, rows[0], 1+5+len(runparams.Params)+1+len(plant.SummaryColumns())+len(sloColumns))
	assert.Equal(t, sloColumns, rows[0][len(rows[0])-len(sloColumns):], "the slo block's columns come last")
}

func TestSweepRefusesGridsPastTheLimits(t *testing.T) {
	t.Parallel()
	many := func(v string, n int) string { return strings.TrimSuffix(strings.Repeat(v+",", n), ",") }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"1e12 cells", []string{"--power-limit", many("60", 1000), "--kv-capacity", many("1", 1000), "--horizon", many("1", 1000), "--max-active", many("1", 1000)},
			"servesim: sweep: the grid of --profile x --trace x --scheduler x --controller x --normalize x --kv-capacity x --max-active x --power-limit x --horizon = 1 x 1 x 1 x 1 x 1 x 1000 x 1000 x 1000 x 1000 = 1000000000000 cells: more than --max-cells 100000 (raise --max-cells or run it in shards with --shard I/N)\n"},
		{"a cell count that overflows", []string{"--power-limit", many("60", 65536), "--kv-capacity", many("1", 65536), "--horizon", many("1", 65536), "--max-active", many("1", 65536), "--shard", "1/9000000000000000000"},
			"= 1.84e+19 cells: more than a sweep can index (9.2e+18)\n"},
		{"a lowered limit", []string{"--controller", "max,min,reactive", "--max-cells", "2"}, "= 3 cells: more than --max-cells 2"},
		{"a shard past the limit", []string{"--controller", "max,min,reactive,fixed:660", "--shard", "1/2", "--max-cells", "1"}, "shard 1/2 of the grid of"},
		{"--max-cells 0", []string{"--max-cells", "0"}, "--max-cells 0: expected at least 1"},
		{"steps of the longest run", []string{"--max-sim-time", "3600,1e18", "--time-step", "1,0.1"},
			"servesim: --max-sim-time 1e+18 / --time-step 0.1 = 1e+19 simulation steps: more than --max-steps 1e+09"},
		{"--max-steps lowered", []string{"--max-sim-time", "100", "--max-steps", "1000"}, "= 1001 simulation steps: more than --max-steps 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"sweep"}, tt.args...)...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")
		})
	}
	// Raised, the same limits let the run go.
	runSweepOK(t, 3, "--max-elapsed", "10", "--controller", "max,min,reactive", "--max-cells", "3")
	runSweepOK(t, 1, "--max-elapsed", "10", "--max-sim-time", "100", "--max-steps", "1001")
}

func TestSweepOutputFileIsAtomic(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	code, out, _ := runCLI(t, "sweep", "--max-elapsed", "30", "-o", path)
	require.Equal(t, exitOK, code)
	assert.Empty(t, out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 2, bytes.Count(data, []byte("\n")))
}

func TestSweepProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		terminal bool
		args     []string
		wantBar  bool
	}{
		{"terminal", true, nil, true},
		{"terminal, quiet", true, []string{"--quiet"}, false},
		{"pipe", false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams("")
			s.ErrIsTerminal = tt.terminal
			code := run(context.Background(), append([]string{"sweep", "--max-elapsed", "20", "--controller", "max,min"}, tt.args...), s)
			require.Equal(t, exitOK, code)
			assert.Equal(t, tt.wantBar, strings.Contains(errOut.String(), "sweep"), errOut.String())
			assert.NotContains(t, out.String(), "sweep ", "progress never goes to stdout")
		})
	}
}
