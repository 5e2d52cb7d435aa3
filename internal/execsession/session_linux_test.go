package execsession_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/execsession"
	"servesim/internal/testsupport"
)

// readPid waits (up to 10 s, for a loaded machine) for a shell to write a
// pid to path and returns it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile(path)
		if s := strings.TrimSpace(string(data)); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(s)
			require.NoError(t, err)
			return pid
		}
		require.True(t, time.Now().Before(deadline), "no pid in %s", path)
	}
}

// requireReaped checks that process pid is gone, not even a zombie: on
// Linux servesim reaps what it kills before it returns.
func requireReaped(t *testing.T, pid int) {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.True(t, os.IsNotExist(err), "process %d is still there: %s", pid, stat)
}

// TestSessionSuccessEndsTheChildsBackgroundProcesses: after a successful
// exchange the child exits at the end of its input, and what it left
// running in the background, its output detached or not, is killed and
// reaped too.
func TestSessionSuccessEndsTheChildsBackgroundProcesses(t *testing.T) {
	for name, bg := range map[string]string{
		"background": "sleep 98761 &",
		"detached":   "sleep 98761 </dev/null >/dev/null 2>&1 &",
	} {
		t.Run(name, func(t *testing.T) {
			bgPid := filepath.Join(t.TempDir(), "bg")
			command := bg + " echo $! > " + testsupport.ShellQuote(bgPid) + `; while read l; do echo '{"clock_mhz": 1500}'; done`
			s := newSession(command, 10*time.Second)
			require.NoError(t, exchange(s, 100))
			require.NoError(t, s.Close())
			requireReaped(t, readPid(t, bgPid))
		})
	}
}

// TestSessionFailureReapsTheGrandchildren: the shell runs the real child
// as its child; a failure kills it with its group and reaps it, instead of
// leaving a zombie for init.
func TestSessionFailureReapsTheGrandchildren(t *testing.T) {
	grandchild := filepath.Join(t.TempDir(), "grandchild")
	// "; true": the shell cannot exec the inner one, which execs sleep.
	command := "sh -c 'echo $$ > " + grandchild + "; exec sleep 98762'; true"
	// 2 s: the grandchild must have written its pid before the timeout
	// kills it, also on a loaded machine.
	err := exchange(newSession(command, 2*time.Second), 100)
	require.ErrorContains(t, err, "step 0: no answer within 2s (--exec-timeout); it wrote nothing")
	requireReaped(t, readPid(t, grandchild))
}

// TestSessionChildThatExitsWhileItsBackgroundHoldsStdout: a child that exits
// is reported as exited, with its status, also when a process it started
// keeps its stdout open, and without waiting for --exec-timeout; that
// process is killed and reaped.
func TestSessionChildThatExitsWhileItsBackgroundHoldsStdout(t *testing.T) {
	const timeout = 20 * time.Second
	for _, tt := range []struct{ name, script, want string }{
		{"at once", "exit 0", "step 0: exited with status 0 before answering; it wrote nothing"},
		{"mid-run", `i=0; while [ $i -lt 5 ] && read l; do echo '{"clock_mhz": 1500}'; i=$((i+1)); done; exit 4`,
			"step 5: exited with status 4 before answering; it wrote nothing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bgPid := filepath.Join(t.TempDir(), "bg")
			command := "sleep 98763 & echo $! > " + testsupport.ShellQuote(bgPid) + "; " + tt.script
			start := time.Now()
			err := exchange(newSession(command, timeout), 100)
			require.Error(t, err)
			assert.Less(t, time.Since(start), timeout/2, "the exit is noticed, not the timeout waited for")
			assert.True(t, strings.HasSuffix(err.Error(), tt.want), err.Error())
			requireReaped(t, readPid(t, bgPid))
		})
	}
}

// TestSessionChildThatExitsWhileADaemonHoldsStdout: a process the child
// started in a session of its own (setsid) is out of the child's process
// group, so killing the group leaves the child's stdout open; the child's
// exit is still reported within a poll or two, not after the timeout.
func TestSessionChildThatExitsWhileADaemonHoldsStdout(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid (util-linux) is needed: %v", err)
	}
	const timeout = 20 * time.Second
	bgPid := filepath.Join(t.TempDir(), "daemon")
	command := "setsid sleep 98766 & echo $! > " + testsupport.ShellQuote(bgPid) + "; exit 5"
	start := time.Now()
	err := exchange(newSession(command, timeout), 100)
	elapsed := time.Since(start)
	pid := readPid(t, bgPid)
	_ = syscall.Kill(pid, syscall.SIGKILL) // not the controller's to end: it left the group
	require.Error(t, err)
	assert.Less(t, elapsed, time.Second, "the exit is noticed, not the timeout waited for")
	assert.True(t, strings.HasSuffix(err.Error(), "step 0: exited with status 5 before answering; it wrote nothing"), err.Error())
}

// TestKillChildrenEndsEveryChild: what an interrupted servesim calls ends
// the children of every session, waiting for an answer or not, with their
// grandchildren, and reaps them all before it returns.
func TestKillChildrenEndsEveryChild(t *testing.T) {
	dir := t.TempDir()
	type run struct {
		child, grandchild string
		done              chan error
	}
	runs := make([]run, 2)
	for i := range runs {
		r := run{filepath.Join(dir, "child"+strconv.Itoa(i)), filepath.Join(dir, "grandchild"+strconv.Itoa(i)), make(chan error, 1)}
		runs[i] = r
		command := "echo $$ > " + r.child + "; sh -c 'echo $$ > " + r.grandchild + "; exec sleep 98764'; true"
		s := newSession(command, time.Minute)
		go func() { r.done <- exchange(s, 100) }()
	}
	pids := []int{}
	for _, r := range runs {
		pids = append(pids, readPid(t, r.child), readPid(t, r.grandchild))
	}
	execsession.KillChildren()
	for _, pid := range pids {
		requireReaped(t, pid)
	}
	for _, r := range runs {
		select {
		case err := <-r.done:
			assert.ErrorContains(t, err, "step 0: closed its stdout before answering")
		case <-time.After(30 * time.Second):
			t.Fatal("the exchange did not end")
		}
	}
}
