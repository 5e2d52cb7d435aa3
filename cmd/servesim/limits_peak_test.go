package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

var limitPeaks = flag.Bool("limitpeaks", false, "run the real binary ($SERVESIM_BIN) at each memory limit and check its peak RSS (make limit-peaks)")

// peakCase is one run at a limit of the Limits table of docs/performance.md,
// and the peak resident size the table promises for it.
type peakCase struct {
	name   string
	args   string // servesim's arguments; {big} is the 5e7-row trace
	stdin  string // a shell pipeline feeding stdin, or ""
	peakGB float64
	exit   int    // the exit code expected
	stderr string // a line stderr must hold, or ""
}

// peakCases are the limits and their documented peaks (GB = 1e9 bytes).
// {big} has plant.MaxHeldRequests rows, 10 ms apart: as many as a command
// holds; {half1} and {half2} are links to it.
var peakCases = []peakCase{
	{name: "one run keeps 1e7 trajectory samples", args: "simulate --trace {two} --max-sim-time 999990 -o {out}", peakGB: 2.8},
	{name: "277 replicas keep 9.97e6 samples together", args: "simulate --replicas 277 -o {out}", peakGB: 1.0},
	{name: "16 replicas hold 2^25 prefix-cache blocks", args: "simulate --replicas 16 --prefix-cache --kv-capacity 33554432 --summary -o {out}", peakGB: 1.8},
	{name: "capacity holds 2^25 blocks in its largest fleet", args: "capacity --max-replicas 16 --prefix-cache --kv-capacity 33554432 --max-elapsed 600 --jobs 2 -o {out}", peakGB: 1.8},
	{name: "trace stats holds 5e7 requests", args: "trace stats {big} -o {out}", peakGB: 2.6},
	{name: "from stdin, whose size is not known, it refuses the next", args: "trace stats -", stdin: "cat {big}; echo 2023-11-22 00:00:00.00,1,1", peakGB: 5.0, exit: 1,
		stderr: "servesim: trace stdin: more than 50000000 requests, the most servesim holds at once (cut it with --max-elapsed, or split it)"},
	{name: "a streamed summary of 5e7 requests", args: "simulate --trace {big} --summary --max-sim-time 500001 -o {out}", peakGB: 1.5},
	{name: "a sweep holds 5e7 requests over two traces", args: "sweep --trace {half1},{half2} --max-elapsed 249999.995 --controller max --max-sim-time 1 -o {out}", peakGB: 2.6},
	{name: "a sweep refuses traces past 5e7 together", args: "sweep --trace {half1},{half2} --max-elapsed 250000 --controller max --max-sim-time 1 -o {out}", peakGB: 2.6, exit: 1,
		stderr: "servesim: --trace: the 2 traces hold more than 50000000 requests together"},
}

// TestPeaksAtTheLimits runs the real binary at each memory limit, on
// inputs made in a temporary folder, and checks that its peak resident size
// stays under the table's figure. It takes about three minutes (two runs
// at a time) and 1.4 GB of disk, so it runs with -limitpeaks (make limit-peaks; CI runs it).
func TestPeaksAtTheLimits(t *testing.T) {
	if !*limitPeaks {
		t.Skip("runs with -limitpeaks (make limit-peaks)")
	}
	bin := os.Getenv("SERVESIM_BIN")
	require.NotEmpty(t, bin, "SERVESIM_BIN names the binary to measure")
	dir := t.TempDir()
	paths := map[string]string{
		"{two}":   filepath.Join(dir, "two.csv"),
		"{big}":   filepath.Join(dir, "big.csv"),
		"{half1}": filepath.Join(dir, "half1.csv"),
		"{half2}": filepath.Join(dir, "half2.csv"),
	}
	require.NoError(t, os.WriteFile(paths["{two}"], []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00.00,100,10\n2023-11-27 13:00:00.00,100,10\n"), 0o644))
	writeShortRows(t, paths["{big}"], workload.MaxHeldRequests)
	require.NoError(t, os.Link(paths["{big}"], paths["{half1}"]))
	require.NoError(t, os.Link(paths["{big}"], paths["{half2}"]))
	for i, c := range peakCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // two at a time with -parallel 2, as make limit-peaks runs them
			expand := func(s string) string {
				for k, v := range paths {
					s = strings.ReplaceAll(s, k, v)
				}
				return strings.ReplaceAll(s, "{out}", filepath.Join(dir, fmt.Sprintf("out%d", i)))
			}
			cmd := exec.Command(bin, strings.Fields(expand(c.args))...)
			if c.stdin != "" {
				feed := exec.Command("sh", "-c", expand(c.stdin))
				pipe, err := feed.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, feed.Start())
				defer func() { _ = feed.Wait() }()
				cmd.Stdin = pipe
			}
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
			start := time.Now()
			err := cmd.Run()
			if c.exit == 0 {
				require.NoError(t, err, stderr.String())
			} else {
				require.Error(t, err)
				assert.Equal(t, c.exit, cmd.ProcessState.ExitCode(), stderr.String())
				assert.Contains(t, stderr.String(), expand(c.stderr))
			}
			peak := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024 / 1e9
			t.Logf("%s: %.2f s, peak RSS %.2f GB (documented: under %.1f GB)", c.args, time.Since(start).Seconds(), peak, c.peakGB)
			assert.Less(t, peak, c.peakGB, "peak RSS over the documented figure")
		})
	}
}

// writeShortRows writes an Azure trace of n rows of one token each, 10 ms
// apart: the shortest rows the format has, so the most requests per byte.
func writeShortRows(t *testing.T, path string, n int) {
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = w.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	require.NoError(t, err)
	t0 := time.Date(2023, 11, 16, 0, 0, 0, 0, time.UTC)
	line := make([]byte, 0, 64)
	for i := range n {
		line = t0.Add(time.Duration(i)*10*time.Millisecond).AppendFormat(line[:0], "2006-01-02 15:04:05.00")
		line = append(line, ",1,1\n"...)
		if _, err := w.Write(line); err != nil {
			require.NoError(t, err)
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
}
