package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/sweep"
)

// runSweepTo runs an in-process sweep that must succeed and returns its
// output.
func runSweepTo(t *testing.T, args ...string) []byte {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"sweep", "--quiet"}, args...)...)
	require.Equal(t, exitOK, code, errOut)
	return []byte(out)
}

// withoutGridMembers removes from each run record the members records
// gained with streaming (grid_sha256 to tpot_slo_s, see sweep.RunRecordKeys)
// and since (slo, mpc_diagnostics), leaving what a sweep wrote before
// them, byte for byte.
func withoutGridMembers(t *testing.T, out []byte) []byte {
	t.Helper()
	added := map[string]bool{"grid_sha256": true, "grid_cells": true, "trace_sha256": true, "profile_csv_sha256": true,
		"manifest_sha256": true, "ttft_slo_s": true, "tpot_slo_s": true, "slo": true, "mpc_diagnostics": true}
	var b []byte
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		members, err := sweep.ParseObject(line)
		require.NoError(t, err)
		var kept jsonout.Object
		for _, m := range members {
			if string(members[0].Value) == `"pareto"` || !added[m.Key] {
				kept = append(kept, jsonout.Member{Key: m.Key, Value: m.Value})
			}
		}
		b, err = jsonout.AppendLine(b, kept)
		require.NoError(t, err)
	}
	return b
}

// withoutAddedColumns removes from a sweep's table the columns added
// since the table of testdata/sweep_before_streaming_table.txt: the
// unfinished count after "done (%)", and the columns of the slo block
// before its error column ("SLO met (%)" to "p99 TPOT (ms)"). The other
// columns keep their widths, so what is left is the table as it was
// before them.
func withoutAddedColumns(t *testing.T, table string) string {
	t.Helper()
	lines := strings.SplitAfter(table, "\n")
	unfinished := strings.Index(lines[0], "  unfinished")
	from, to := strings.Index(lines[0], "  SLO met (%)"), strings.Index(lines[0], "  error")
	require.True(t, unfinished > 0 && from > unfinished && to > from, lines[0])
	cut := func(line string, from, to int) string {
		if len(line) > to {
			return line[:from] + line[to:]
		} else if len(line) > from {
			return line[:from]
		}
		return line
	}
	var b strings.Builder
	for i, line := range lines {
		if i > 0 && strings.TrimSpace(line) == "" {
			b.WriteString(strings.Join(lines[i:], "")) // the Pareto section
			break
		}
		line = strings.TrimSuffix(line, "\n")
		line = cut(cut(line, from, to), unfinished, unfinished+len("  unfinished"))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}

// TestSweepOutputIsWhatItWasBeforeStreaming compares a sweep with the
// output of servesim before records were streamed and the Pareto record
// kept online (commit fc4cc1f, the testdata files; they are that binary's
// output and must not be regenerated): the run records, less the members
// added since, and the Pareto record are byte-identical, also with failed
// runs, and so is the table, less the columns added since.
func TestSweepOutputIsWhatItWasBeforeStreaming(t *testing.T) {
	t.Parallel()
	grid := []string{"--max-elapsed", "60", "--scheduler", "static,chunked", "--controller", "max,min,reactive,fixed:1125", "--normalize", "none,0.7"}
	want, err := os.ReadFile("testdata/sweep_before_streaming.jsonl")
	require.NoError(t, err)
	code, out, errOut := runCLI(t, append([]string{"sweep", "--quiet", "--profile", "embedded,nosuch.csv"}, grid...)...)
	require.Equal(t, exitInput, code)
	// (0.7 is above the embedded trace's own load: those runs are not stretched.)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, "servesim: sweep: --normalize left the arrivals of 8 of the 32 runs it ran unchanged: their trace already offers less than the target "+
		"(normalization only stretches a trace, as the reference's does; dilation 1)\n"+
		"servesim: 16 of 32 runs failed (see their records' error); the first, cell 16: profile nosuch.csv: cannot read the profile: does not exist "+
		"(nosuch.csv is relative to the working folder "+wd+")\n", errOut)
	assert.Equal(t, string(want), string(withoutGridMembers(t, []byte(out))))

	want, err = os.ReadFile("testdata/sweep_before_streaming_table.txt")
	require.NoError(t, err)
	got := runSweepTo(t, append(grid, "--ttft-slo", "1", "--tpot-slo", "0.05", "--format", "table")...)
	assert.Equal(t, string(want), withoutAddedColumns(t, string(got)))
}

// slowGrid is a grid of 40 runs of about 50 ms each (a 2 ms time step).
var slowGrid = []string{"--time-step", "0.002", "--power-limit", "40,50,55,60,64.8", "--controller", "max,min,reactive,fixed:1125", "--normalize", "none,0.1"}

func TestSweepWritesEachRecordAsItsCellFinishes(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	s, _, errOut := testStreams("")
	s.Out = w
	done := make(chan int)
	go func() {
		done <- run(context.Background(), append([]string{"sweep", "--quiet", "--jobs", "1"}, slowGrid...), s)
		w.Close()
	}()
	first, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	select {
	case code := <-done:
		t.Fatalf("the first record came only at the end (exit %d, %s)", code, errOut)
	default:
	}
	assert.True(t, strings.HasPrefix(first, `{"kind":"run","cell":0,`), first)
	go io.Copy(io.Discard, r)
	assert.Equal(t, exitOK, <-done)
}

func TestSweepRecordsIdentifyTheirGridAndInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.csv")
	traceCSV := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.0,1000,200\n"
	require.NoError(t, os.WriteFile(trace, []byte(traceCSV), 0o644))
	sum := sha256.Sum256([]byte(traceCSV))

	records := func(args ...string) []map[string]any {
		runs, _ := decodeRecords(t, string(runSweepTo(t, append([]string{"--trace", trace, "--controller", "max,min,reactive"}, args...)...)))
		return runs
	}
	whole := records()
	require.Len(t, whole, 3)
	for i, r := range whole {
		assert.Equal(t, float64(i), r["cell"])
		assert.Equal(t, float64(3), r["grid_cells"])
		assert.Equal(t, whole[0]["grid_sha256"], r["grid_sha256"])
		assert.Equal(t, hex.EncodeToString(sum[:]), r["trace_sha256"], "the trace file's SHA-256")
		assert.Len(t, r["profile_csv_sha256"], 64)
		assert.Equal(t, 0.5, r["ttft_slo_s"], "the embedded profile's SLO")
	}
	assert.Equal(t, whole[0]["grid_sha256"], records("--shard", "2/3")[0]["grid_sha256"], "a shard is of the same grid")
	assert.Equal(t, 2.0, records("--ttft-slo", "2")[0]["ttft_slo_s"])
	for _, other := range [][]string{{"--max-elapsed", "2"}, {"--ttft-slo", "2"}, {"--max-steps", "1e8"}, {"--exec-timeout", "3"}} {
		assert.NotEqual(t, whole[0]["grid_sha256"], records(other...)[0]["grid_sha256"], "%v", other)
	}
	require.NoError(t, os.WriteFile(trace, []byte(traceCSV+"2023-11-16 18:15:51.0,10,20\n"), 0o644))
	assert.NotEqual(t, whole[0]["grid_sha256"], records()[0]["grid_sha256"], "another trace")

	code, out, _ := runCLI(t, "sweep", "--quiet", "--profile", "nosuch.csv")
	assert.Equal(t, exitInput, code)
	runs, _ := decodeRecords(t, out)
	assert.Nil(t, runs[0]["profile_csv_sha256"], "a profile that did not load has no digest")
	assert.Nil(t, runs[0]["ttft_slo_s"])
}

// lines splits output into its lines, newlines kept.
func lines(out []byte) [][]byte {
	ls := bytes.SplitAfter(out, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// writeLines writes the lines to a new file in dir and returns its path.
func writeLines(t *testing.T, dir, name string, ls ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, bytes.Join(ls, nil), 0o644))
	return path
}

func TestSweepResumeCompletesToTheUninterruptedOutput(t *testing.T) {
	t.Parallel()
	grid := []string{"--max-elapsed", "30", "--controller", "max,min,reactive,fixed:1125", "--normalize", "none,0.05,0.1"}
	full := runSweepTo(t, grid...)
	runs := lines(full)
	runs = runs[:len(runs)-1] // the Pareto record
	require.Len(t, runs, 12)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	subset := func(keep func(i int) bool) [][]byte {
		var out [][]byte
		for i, l := range runs {
			if keep(i) {
				out = append(out, l)
			}
		}
		return out
	}
	tests := []struct {
		name string
		have [][]byte
	}{
		{"a prefix, as an interrupted sweep leaves", subset(func(i int) bool { return i < 5 })},
		{"gaps, as the records held back at an interruption leave", subset(func(i int) bool { return i%3 != 1 })},
		{"in any order", func() [][]byte {
			s := subset(func(i int) bool { return i%2 == 0 })
			r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			return s
		}()},
		{"nothing", nil},
		{"everything, with the Pareto record", lines(full)},
		{"a last line cut short", append(subset(func(i int) bool { return i < 4 }), runs[4][:100])},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			partial := writeLines(t, dir, "runs.partial", tt.have...)
			out := filepath.Join(dir, "runs.jsonl")
			code, stdout, errOut := runCLI(t, append([]string{"sweep", "--quiet", "--resume", partial, "-o", out}, grid...)...)
			require.Equal(t, exitOK, code, errOut)
			assert.Empty(t, stdout)
			if k == len(tests)-1 {
				assert.Equal(t, "servesim: warning: "+partial+" line 5: the last line has no newline (its run was cut short while it was written); it is left out\n", errOut)
			} else {
				assert.Empty(t, errOut)
			}
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, string(full), string(got))
		})
	}
	t.Run("to stdout, in a shard", func(t *testing.T) {
		shard := runSweepTo(t, append(grid, "--shard", "2/3")...)
		shardRuns := lines(shard)
		partial := writeLines(t, dir, "shard.partial", shardRuns[1])
		assert.Equal(t, string(shard), string(runSweepTo(t, append(grid, "--shard", "2/3", "--resume", partial)...)))
	})
}

func TestSweepResumeRefusesRecordsOfAnotherGrid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.csv")
	traceCSV := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.0,1000,200\n"
	require.NoError(t, os.WriteFile(trace, []byte(traceCSV), 0o644))
	grid := []string{"--trace", trace, "--controller", "max,min,reactive,fixed:1125"}
	full := lines(runSweepTo(t, grid...))
	partial := writeLines(t, dir, "runs.partial", full[:3]...)
	tests := []struct {
		name  string
		file  string
		args  []string
		code  int
		want  string
		setup func()
	}{
		{"other axis values", writeLines(t, dir, "cell1.partial", full[1]), []string{"--trace", trace, "--controller", "max,reactive,min,fixed:1125"}, exitInput,
			`--resume ` + dir + `/cell1.partial line 1: cell 1 has controller "min", this grid's cell 1 has controller "reactive"`, nil},
		{"the same cell of another grid", partial, []string{"--trace", trace, "--controller", "max,reactive,min,fixed:1125"}, exitInput,
			`--resume ` + partial + ` line 1: the record is of another grid (grid_sha256 `, nil},
		{"another grid size", partial, []string{"--trace", trace, "--controller", "max,min,reactive"}, exitInput,
			"line 1: cell 0 is of a grid of 4 cells, this one has 3", nil},
		{"a cell outside the shard", partial, append(grid, "--shard", "2/2"), exitInput,
			"line 1: cell 0 is not in this shard (cells 2 to 3)", nil},
		{"other options", partial, append(grid, "--max-elapsed", "3"), exitInput,
			"line 1: the record is of another grid (grid_sha256 ", nil},
		{"a cell twice", writeLines(t, dir, "twice.partial", full[0], full[1], full[0]), grid, exitInput,
			"twice.partial: cell 0 is there twice, lines 1 and 3", nil},
		{"not a record", writeLines(t, dir, "text.partial", []byte("hello\n")), grid, exitInput,
			"text.partial line 1: expected a JSON object", nil},
		{"a JSON line that is not a run record", writeLines(t, dir, "json.partial", []byte(`{"kind":"run","cell":0}`+"\n")), grid, exitInput,
			"json.partial line 1: expected a sweep run record with the members kind, cell, grid_sha256, grid_cells,", nil},
		{"no such file", filepath.Join(dir, "nosuch"), grid, exitInput, "nosuch: no such file or directory", nil},
		{"CSV", partial, append(grid, "--format", "csv"), exitUsage, "--resume reads and writes JSON Lines: expected --format jsonl, not csv", nil},
		// Last, as it changes the trace.
		{"another trace", partial, grid, exitInput, "line 1: cell 0 ran on trace " + trace + " with trace_sha256 \"", func() {
			require.NoError(t, os.WriteFile(trace, []byte(traceCSV+"2023-11-16 18:15:51.0,10,20\n"), 0o644))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			out := filepath.Join(dir, "out.jsonl")
			code, stdout, errOut := runCLI(t, append([]string{"sweep", "--quiet", "--resume", tt.file, "-o", out}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, stdout)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.NoFileExists(t, out)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				assert.False(t, strings.HasPrefix(e.Name(), ".out.jsonl"), "no temporary file left: %s", e.Name())
			}
		})
	}
}

func TestSweepShardAuto(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	runEnv := func(args ...string) (int, string, string) {
		s, out, errOut := testStreams("")
		s.Getenv = func(name string) string { return env[name] }
		code := run(context.Background(), args, s)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := runEnv("sweep", "--shard", "auto")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "servesim: --shard auto: found neither a Slurm job array (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX) nor a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with SERVESIM_SHARD_COUNT)\n", errOut)

	grid := []string{"--max-elapsed", "20", "--controller", "max,min,reactive,fixed:1125,sampled-reactive"}
	env["JOB_COMPLETION_INDEX"], env["SERVESIM_SHARD_COUNT"] = "1", "2"
	_, whole, _ := runEnv(append([]string{"sweep", "--quiet"}, append(grid, "--shard", "2/2")...)...)
	code, auto, errOut := runEnv(append([]string{"sweep", "--quiet"}, append(grid, "--shard", "auto")...)...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, whole, auto)
	env["SERVESIM_SHARD_COUNT"] = ""
	code, _, errOut = runEnv(append([]string{"sweep", "--shard", "auto"}, grid...)...)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "servesim: --shard auto: JOB_COMPLETION_INDEX is set, but not SERVESIM_SHARD_COUNT (set it to the Job's completions)\n", errOut)
}

func TestSweepMerge(t *testing.T) {
	t.Parallel()
	grid := []string{"--max-elapsed", "20", "--profile", "embedded,nosuch.csv", "--controller", "max,min,reactive,fixed:1125,sampled-reactive", "--normalize", "none,0.1"}
	code, whole, _ := runCLI(t, append([]string{"sweep", "--quiet"}, grid...)...)
	require.Equal(t, exitInput, code, "half the runs fail: their profile does not exist")
	dir := t.TempDir()
	var shards []string
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		code, out, _ := runCLI(t, append([]string{"sweep", "--quiet", "--shard", shard}, grid...)...)
		require.NotEqual(t, exitUsage, code)
		shards = append(shards, writeLines(t, dir, "shard"+shard[:1]+".jsonl", []byte(out)))
	}
	merge := func(files ...string) (int, string, string) {
		return runCLI(t, append([]string{"sweep", "merge"}, files...)...)
	}
	t.Run("the shards, in any order, are the whole grid", func(t *testing.T) {
		code, out, errOut := merge(shards[2], shards[0], shards[1])
		assert.Equal(t, exitInput, code)
		assert.Equal(t, "servesim: 10 of 20 runs failed (see their records' error); the first, cell 10: profile nosuch.csv: cannot read the profile: does not exist\n",
			errOut, "as the sweep of the whole grid says, less the folder a relative path is taken from")
		assert.Equal(t, whole, out)
	})
	t.Run("to a file", func(t *testing.T) {
		path := filepath.Join(dir, "merged.jsonl")
		code, out, _ := merge(shards[0], shards[1], shards[2], "-o", path)
		assert.Equal(t, exitInput, code)
		assert.Empty(t, out)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, whole, string(got))
	})
	all := lines([]byte(whole))
	t.Run("partial files, records in any order", func(t *testing.T) {
		a := writeLines(t, dir, "a.partial", all[7], all[0], all[3])
		var rest [][]byte
		for i, l := range all[:20] {
			if i != 0 && i != 3 && i != 7 {
				rest = append(rest, l)
			}
		}
		b := writeLines(t, dir, "b.partial", rest...)
		_, out, _ := merge(b, a)
		assert.Equal(t, whole, out)
	})
	tests := []struct {
		name  string
		files func() []string
		want  string
	}{
		{"a shard missing", func() []string { return []string{shards[0], shards[2]} },
			"servesim: sweep merge: the files do not hold each of the grid's 20 cells once: 7 missing (cells 6-12)\n"},
		{"missing and repeated cells", func() []string {
			return []string{writeLines(t, dir, "holes.jsonl", all[0], all[2], all[3], all[4], all[9], all[19]), shards[0]}
		}, "servesim: sweep merge: the files do not hold each of the grid's 20 cells once: 12 missing (cells 6-8, 10-18); 4 more than once (cells 0, 2-4)\n"},
		{"a shard twice", func() []string { return []string{shards[0], shards[1], shards[1], shards[2]} },
			"7 more than once (cells 6-12)\n"},
		{"another grid", func() []string {
			_, other, _ := runCLI(t, "sweep", "--quiet", "--max-elapsed", "20", "--controller", "max,min")
			return []string{shards[0], writeLines(t, dir, "other.jsonl", []byte(other))}
		}, "other.jsonl line 1: cell 0 is of another grid than " + shards[0] + " line 1 (grid_sha256 "},
		{"no run record", func() []string { return []string{writeLines(t, dir, "empty.jsonl")} }, "servesim: sweep merge: no run record in "},
		{"no file", func() []string { return nil }, "servesim: sweep merge: expected the sweep output files to join\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := merge(tt.files()...)
			if tt.name == "no file" {
				assert.Equal(t, exitUsage, code)
			} else {
				assert.Equal(t, exitInput, code)
			}
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")
		})
	}
}

func TestCellRanges(t *testing.T) {
	t.Parallel()
	var rs []sweep.CellRange
	for _, c := range []int{0, 1, 2, 5, 7, 8, 8, 9, 12} {
		rs = sweep.AddCells(rs, c, c)
	}
	assert.Equal(t, "0-2, 5, 7-9, 12", sweep.FormatRanges(rs, 10))
	assert.Equal(t, "0-2, 5, and 2 more ranges", sweep.FormatRanges(rs, 2))
	assert.Equal(t, 8, sweep.CountCells(rs))
	assert.Empty(t, sweep.FormatRanges(nil, 3))
}

// decodeLine decodes one JSON line, for tests.
func decodeLine(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(line, &v), string(line))
	return v
}

// waitFor polls cond every 10 ms for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
