//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubbornController is an exec: child that starts a background process
// (sleep %[1]d) and a grandchild that never answers (sleep %[2]d), and
// writes the pids of all three to files named after its own pid.
const stubbornController = `sleep %[1]d &
echo $! > bg.$$.tmp && mv bg.$$.tmp bg.$$
echo $$ > sh.$$.tmp && mv sh.$$.tmp sh.$$
sh -c 'echo $$ > fg.tmp.$PPID && mv fg.tmp.$PPID fg.$PPID; exec sleep %[2]d'
true
`

// TestInterruptedExecRunsLeaveNoProcess sends SIGINT or SIGTERM to
// servesim while exec: children wait to answer, in simulate, a fleet on
// both paths, capacity and sweep: it ends with the signal's code, and
// every child, with what it started, was killed and reaped before servesim
// exited (none is left, not even a zombie).
func TestInterruptedExecRunsLeaveNoProcess(t *testing.T) {
	t.Parallel()
	ctl := []string{"--exec-timeout", "100", "--controller", "exec:sh ctl.sh"}
	for i, tc := range []struct {
		name     string
		args     []string
		children int
		signals  []syscall.Signal
		code     int
		stderr   string
	}{
		{"simulate", []string{"simulate", "--max-elapsed", "60", "-o", "out.json"}, 1,
			[]syscall.Signal{syscall.SIGINT}, 130, "servesim: interrupted by SIGINT\n"},
		{"fleet in parallel", []string{"simulate", "--max-elapsed", "60", "--replicas", "2", "--jobs", "2", "--summary"}, 2,
			[]syscall.Signal{syscall.SIGTERM}, 143, "servesim: interrupted by SIGTERM\n"},
		{"fleet in lock-step", []string{"simulate", "--max-elapsed", "60", "--replicas", "2", "--router", "least-outstanding", "--summary"}, 1,
			[]syscall.Signal{syscall.SIGINT}, 130, "servesim: interrupted by SIGINT\n"},
		{"capacity", []string{"capacity", "--max-elapsed", "60", "--max-replicas", "2", "--attainment", "0.5", "--jobs", "1"}, 1,
			[]syscall.Signal{syscall.SIGINT}, 130, "servesim: interrupted by SIGINT\n"},
		// The second signal ends the wait for the runs under way.
		{"sweep", []string{"sweep", "--max-elapsed", "60", "--jobs", "2", "--power-limit", "40,64.8"}, 2,
			[]syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130, "servesim: sweep interrupted: 0 of 2 runs written to stdout\n"},
	} {
		// Markers of this case's processes, unlike those of the others.
		markers := []string{strconv.Itoa(98771 + 2*i), strconv.Itoa(98772 + 2*i)}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			script := fmt.Sprintf(stubbornController, 98771+2*i, 98772+2*i)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ctl.sh"), []byte(script), 0o644))
			// A file, not a pipe: Wait does not wait for a process left
			// holding servesim's stderr.
			stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			require.NoError(t, err)
			defer stderr.Close()
			cmd := servesimProcess(t, dir, nil, append(tc.args, ctl...)...)
			cmd.Stderr = stderr
			require.NoError(t, cmd.Start())
			pids := func(kind string) []int {
				names, err := filepath.Glob(filepath.Join(dir, kind+".[0-9]*"))
				require.NoError(t, err)
				var out []int
				for _, name := range names {
					data, err := os.ReadFile(name)
					require.NoError(t, err)
					pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
					require.NoError(t, err)
					out = append(out, pid)
				}
				return out
			}
			waitFor(t, "the children's grandchildren", func() bool { return len(pids("fg")) == tc.children })
			for i, sig := range tc.signals {
				if i > 0 {
					time.Sleep(200 * time.Millisecond) // not merged with the first
				}
				require.NoError(t, cmd.Process.Signal(sig))
			}
			assert.Equal(t, tc.code, exitCode(t, cmd.Wait()))
			said, err := os.ReadFile(stderr.Name())
			require.NoError(t, err)
			assert.Equal(t, tc.stderr, string(said))
			all := append(append(pids("sh"), pids("bg")...), pids("fg")...)
			require.Len(t, all, 3*tc.children)
			for _, pid := range all {
				stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				assert.True(t, os.IsNotExist(err), "process %d is still there: %s", pid, stat)
			}
			for _, marker := range markers {
				assert.Empty(t, processesRunning(t, "sleep\x00"+marker+"\x00"), "sleep %s", marker)
			}
			_, err = os.Stat(filepath.Join(dir, "out.json"))
			assert.True(t, os.IsNotExist(err), "no output file")
		})
	}
}

// processesRunning lists the processes whose command line is cmdline.
func processesRunning(t *testing.T, cmdline string) []string {
	t.Helper()
	files, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	var found []string
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && string(data) == cmdline {
			found = append(found, filepath.Dir(f))
		}
	}
	return found
}
