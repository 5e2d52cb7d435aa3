//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schedulerEnv are the variables --shard auto reads; servesimProcess
// leaves them out of the environment it inherits.
var schedulerEnv = []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
	"SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX", "SERVESIM_SHARD_COUNT"}

// servesimProcess is servesim (the test binary TestMain puts in $PATH) as
// a process in dir, with env added to the test's environment less the
// scheduler variables.
func servesimProcess(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("servesim")
	require.NoError(t, err)
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(schedulerEnv, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// exitCode is the exit code of a finished process.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	return exit.ExitCode()
}

// requireCompleteRunLines checks that out is whole run records, one per
// line, each ending in a newline, and returns how many.
func requireCompleteRunLines(t *testing.T, out []byte) int {
	t.Helper()
	require.True(t, len(out) == 0 || out[len(out)-1] == '\n', "the last line is complete")
	ls := lines(out)
	for _, l := range ls {
		assert.Equal(t, "run", decodeLine(t, l)["kind"])
	}
	return len(ls)
}

// TestSweepInterruptedBySignal sends SIGINT or SIGTERM to a servesim
// process once it has written its first record: it writes the runs under
// way, says so in one line on stderr and exits 130 or 143; the partial
// file, resumed, gives the uninterrupted output.
func TestSweepInterruptedBySignal(t *testing.T) {
	t.Parallel()
	whole := runSweepTo(t, slowGrid...)
	args := append([]string{"sweep", "--jobs", "2"}, slowGrid...)

	t.Run("SIGINT, -o FILE", func(t *testing.T) {
		dir := t.TempDir()
		var stderr bytes.Buffer
		cmd := servesimProcess(t, dir, nil, append(args, "-o", "out.jsonl")...)
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		waitFor(t, "the first record in the temporary file", func() bool {
			tmp, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.tmp*"))
			if len(tmp) != 1 {
				return false
			}
			data, _ := os.ReadFile(tmp[0])
			return bytes.IndexByte(data, '\n') >= 0
		})
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, 130, exitCode(t, cmd.Wait()))

		partial, err := os.ReadFile(filepath.Join(dir, "out.jsonl.partial"))
		require.NoError(t, err)
		n := requireCompleteRunLines(t, partial)
		assert.Less(t, n, 40, "interrupted before the end")
		assert.Equal(t, fmt.Sprintf("servesim: sweep interrupted: %d of 40 runs written to out.jsonl.partial; rerun with --resume out.jsonl.partial\n", n), stderr.String())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "only the partial file: no out.jsonl, no temporary file")

		resume := servesimProcess(t, dir, nil, append(args, "-o", "out.jsonl", "--resume", "out.jsonl.partial")...)
		out, err := resume.CombinedOutput()
		require.NoError(t, err, string(out))
		got, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		require.NoError(t, err)
		assert.Equal(t, string(whole), string(got), "resumed, the output of an uninterrupted sweep")
	})

	t.Run("SIGTERM, stdout", func(t *testing.T) {
		var stderr bytes.Buffer
		cmd := servesimProcess(t, t.TempDir(), nil, args...)
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		r := bufio.NewReader(stdout)
		first, err := r.ReadBytes('\n')
		require.NoError(t, err)
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		rest, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, 143, exitCode(t, cmd.Wait()))
		out := append(first, rest...)
		n := requireCompleteRunLines(t, out)
		assert.Less(t, n, 40)
		assert.Equal(t, fmt.Sprintf("servesim: sweep interrupted: %d of 40 runs written to stdout\n", n), stderr.String())
		assert.Equal(t, string(whole[:len(out)]), string(out), "the records of an uninterrupted sweep, up to the signal")
	})
}

// TestSweepInterruptClearsTheProgressLineFirst signals the test process
// itself while an in-process sweep draws its progress bar: the bar is
// erased before the one line that says what was written.
func TestSweepInterruptClearsTheProgressLineFirst(t *testing.T) {
	r, w := io.Pipe()
	s, _, errOut := testStreams("")
	s.Out = w
	s.ErrIsTerminal = true
	done := make(chan int)
	go func() {
		done <- run(context.Background(), append([]string{"sweep", "--jobs", "1"}, slowGrid...), s)
		w.Close()
	}()
	// Once a record is out, the sweep has taken SIGINT over.
	_, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, r)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	assert.Equal(t, 130, <-done)
	stderr := errOut.String()
	i := strings.Index(stderr, "servesim: sweep interrupted: ")
	require.Positive(t, i, stderr)
	assert.True(t, strings.HasSuffix(stderr[:i], "\r\x1b[K"), "the bar is erased just before the message: %q", stderr)
	assert.True(t, strings.HasSuffix(stderr, " runs written to stdout\n"), stderr)
}

// TestSweepShardsOnSchedulersMergeToTheWholeGrid runs the shards of a
// grid as separate processes with the environment a Slurm job array
// (sbatch --array=1-3) and a Kubernetes Indexed Job (completions: 4) give
// their tasks, each with --shard auto, merges them with servesim sweep
// merge, and compares with the whole grid run at once, byte for byte.
func TestSweepShardsOnSchedulersMergeToTheWholeGrid(t *testing.T) {
	t.Parallel()
	grid := []string{"--max-elapsed", "20", "--scheduler", "static,chunked", "--controller", "max,min,reactive,fixed:1125,sampled-reactive", "--normalize", "none,0.1"}
	whole := runSweepTo(t, grid...)
	schedulers := []struct {
		name  string
		tasks [][]string // each task's environment
	}{
		{"slurm --array=1-3", func() [][]string {
			var tasks [][]string
			for id := 1; id <= 3; id++ {
				tasks = append(tasks, []string{"SLURM_ARRAY_JOB_ID=4242", "SLURM_ARRAY_TASK_ID=" + strconv.Itoa(id),
					"SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=3", "SLURM_ARRAY_TASK_STEP=1"})
			}
			return tasks
		}()},
		{"kubernetes indexed job, completions 4", func() [][]string {
			var tasks [][]string
			for index := range 4 {
				tasks = append(tasks, []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(index), "SERVESIM_SHARD_COUNT=4"})
			}
			return tasks
		}()},
	}
	for _, sched := range schedulers {
		t.Run(sched.name, func(t *testing.T) {
			dir := t.TempDir()
			var wg sync.WaitGroup
			outputs := make([][]byte, len(sched.tasks))
			errs := make([]error, len(sched.tasks))
			var files []string
			for k, env := range sched.tasks {
				file := fmt.Sprintf("shard-%d.jsonl", k)
				files = append(files, file)
				cmd := servesimProcess(t, dir, env, append([]string{"sweep", "--shard", "auto", "--jobs", "1", "-o", file}, grid...)...)
				wg.Go(func() { outputs[k], errs[k] = cmd.CombinedOutput() })
			}
			wg.Wait()
			for k := range sched.tasks {
				require.NoError(t, errs[k], string(outputs[k]))
				assert.Empty(t, outputs[k])
			}
			merge := servesimProcess(t, dir, nil, append([]string{"sweep", "merge", "-o", "sweep.jsonl"}, files...)...)
			out, err := merge.CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Empty(t, out)
			got, err := os.ReadFile(filepath.Join(dir, "sweep.jsonl"))
			require.NoError(t, err)
			assert.Equal(t, string(whole), string(got))
		})
	}
}

// TestSweepOutputTargets: -o goes through the output rules of every
// command: an existing file keeps its mode, and a FIFO is written directly,
// each record as it is done.
func TestSweepOutputTargets(t *testing.T) {
	t.Parallel()
	grid := []string{"--max-elapsed", "20", "--controller", "max,min,reactive"}
	whole := runSweepTo(t, grid...)
	dir := t.TempDir()

	file := filepath.Join(dir, "runs.jsonl")
	require.NoError(t, os.WriteFile(file, []byte("old\n"), 0o600))
	runSweepTo(t, append(grid, "-o", file)...)
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the file's mode is kept")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(whole), string(got))

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	read := make(chan []byte)
	go func() {
		data, _ := os.ReadFile(fifo) // opening waits for the writer
		read <- data
	}()
	runSweepTo(t, append(grid, "-o", fifo)...)
	assert.Equal(t, string(whole), string(<-read))
	info, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&os.ModeNamedPipe, "the FIFO is still a FIFO")
}
