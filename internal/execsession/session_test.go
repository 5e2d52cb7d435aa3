package execsession_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/execsession"
	"servesim/internal/testsupport"
)

// who names the sessions of the tests in their errors.
const who = "test child"

// newSession returns a session of command that names its exchanges
// "step AT", as the exec: clock controller does.
func newSession(command string, timeout time.Duration) *execsession.Session {
	return &execsession.Session{Command: command, Timeout: timeout, Who: who,
		Where: func(at int) string { return "step " + strconv.Itoa(at) }}
}

// question is the line the tests write: a line of JSON of 1 KiB, so that
// a child that never reads fills its stdin's pipe within a few hundred
// lines.
var question = []byte(`{"pad": "` + strings.Repeat("x", 1013) + `"}` + "\n")

// exchange asks s question at 0, 1, ... up to n times and returns the
// first error, or nil after n answers.
func exchange(s *execsession.Session, n int) error {
	for at := range n {
		if _, err := s.Ask(question, at); err != nil {
			return err
		}
	}
	return nil
}

// TestSessionAnswers: each line written gets the child's answer line, its
// end of line included, a line longer than the reader's buffer too.
func TestSessionAnswers(t *testing.T) {
	long := strings.Repeat("y", 100_000)
	for _, answer := range []string{`{"clock_mhz": 1500}`, long} {
		s := newSession("while read l; do echo '"+answer+"'; done", 10*time.Second)
		for at := range 3 {
			line, err := s.Ask(question, at)
			require.NoError(t, err)
			assert.Equal(t, answer+"\n", string(line))
		}
		assert.False(t, s.Done())
		require.NoError(t, s.Close())
		assert.True(t, s.Done())
		_, err := s.Ask(question, 3)
		assert.EqualError(t, err, who+": closed")
	}
}

// TestSessionFailures: every way a child can fail the exchange ends the
// session with one line that says what happened at which exchange and
// quotes at most 80 bytes of what the child wrote; the child is reaped.
func TestSessionFailures(t *testing.T) {
	// answerThen answers n lines, then runs rest.
	answerThen := func(n int, rest string) string {
		return fmt.Sprintf(`i=0; while [ $i -lt %d ] && read l; do echo '{"clock_mhz": 1500}'; i=$((i+1)); done; %s`, n, rest)
	}
	tests := []struct{ name, script, want string }{
		{"exits at once", `exit 3`,
			`step 0: exited with status 3 before answering; it wrote nothing`},
		{"exits after writing", `printf 'usage: ctl [-v]'; exit 2`,
			`step 0: exited with status 2 before answering; it wrote "usage: ctl [-v]"`},
		{"exits with 0 mid-run", answerThen(5, `exit 0`),
			`step 5: exited with status 0 before answering; it wrote nothing`},
		{"closes its stdout", `read l; exec >&-; sleep 30`,
			`step 0: closed its stdout before answering; it wrote nothing`},
		{"timeout", answerThen(2, `sleep 30`),
			`step 2: no answer within 300ms (--exec-timeout); it wrote nothing`},
		{"timeout mid-line", `read l; printf '{"clock_mhz": 15'; sleep 30`,
			`step 0: no answer within 300ms (--exec-timeout); it wrote "{\"clock_mhz\": 15"`},
		{"huge line", `read l; head -c 2000000 /dev/zero | tr '\0' x; sleep 30`,
			`step 0: answer longer than 1048576 bytes; it wrote "` + strings.Repeat("x", 80) + `"...`},
		{"never reads", `while :; do echo '{"clock_mhz": 1500}'; done`,
			`did not take its observation within 300ms (--exec-timeout)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command, timeout, gone := testsupport.FailingChild(t, tt.script, tt.want)
			s := newSession(command, timeout)
			err := exchange(s, 10_000)
			require.Error(t, err)
			msg := err.Error()
			assert.NotContains(t, msg, "\n", "one line")
			assert.True(t, strings.HasPrefix(msg, who+": step "), msg)
			assert.Contains(t, msg, tt.want)
			gone()
			// The failure sticks; closing changes nothing.
			assert.True(t, s.Done())
			assert.Equal(t, err, s.Err())
			_, again := s.Ask(question, 99)
			assert.Equal(t, err, again)
			assert.Equal(t, err, s.Close())
			assert.Equal(t, err, s.Close())
		})
	}
}

// TestSessionReject: an answer the protocol refuses fails the session,
// quoting the answer line without its end of line, cut to 80 bytes.
func TestSessionReject(t *testing.T) {
	pids, gone := testsupport.PidFile(t)
	answer := strings.Repeat("z", 100)
	s := newSession("echo $$ > "+testsupport.ShellQuote(pids)+"; while read l; do echo '"+answer+"'; done", 10*time.Second)
	line, err := s.Ask(question, 7)
	require.NoError(t, err)
	s.Reject(7, line, fmt.Errorf("not a number"))
	require.EqualError(t, s.Err(), who+": step 7: answer "+strconv.Quote(answer[:80])+"...: not a number")
	gone()
	assert.Equal(t, s.Err(), s.Close())
}

// TestSessionCannotStart: a command that cannot be started fails the
// session at once, named by Who.
func TestSessionCannotStart(t *testing.T) {
	s := newSession("true\x00", time.Second) // exec refuses an argument with a NUL byte
	_, err := s.Ask(question, 0)
	require.ErrorContains(t, err, who+": cannot start: ")
	assert.Equal(t, err, s.Close())
}

// TestSessionChildIsReapedAfterSuccess: after a successful exchange, Close
// closes the child's stdin and the child exits; one that ignores the end
// of its input is killed after the timeout (2 s: long enough for a loaded
// machine's shell to answer every line), with what it started.
func TestSessionChildIsReapedAfterSuccess(t *testing.T) {
	serve := `while read l; do echo '{"clock_mhz": 2040}'; done`
	for name, tail := range map[string]string{
		"exits at the end of its input": "",
		"lingers":                       "; sleep 30 & echo $! > " + "SLEEP_PID" + "; wait",
	} {
		t.Run(name, func(t *testing.T) {
			pids, gone := testsupport.PidFile(t)
			sleepPid := filepath.Join(t.TempDir(), "sleep")
			command := "echo $$ > " + testsupport.ShellQuote(pids) + "; " + serve + strings.ReplaceAll(tail, "SLEEP_PID", testsupport.ShellQuote(sleepPid))
			s := newSession(command, 2*time.Second)
			require.NoError(t, exchange(s, 100))
			require.NoError(t, s.Close())
			gone()
			if tail != "" {
				data, err := os.ReadFile(sleepPid)
				require.NoError(t, err)
				assertNotRunning(t, strings.TrimSpace(string(data)))
			}
		})
	}
}

// assertNotRunning checks that process pid is gone or a zombie: a child of
// the child, killed with its process group, may wait for init to reap it.
// A SIGKILL is delivered asynchronously, so the process gets two seconds to
// die.
func assertNotRunning(t *testing.T, pid string) {
	t.Helper()
	state := ""
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if os.IsNotExist(err) {
			return
		}
		require.NoError(t, err)
		state = strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[0]
		if state == "Z" {
			return
		}
	}
	assert.Equal(t, "Z", state, "process %s state", pid)
}

// TestSessionNeverStartedNeedsNoClose: a session starts nothing before its
// first Ask.
func TestSessionNeverStartedNeedsNoClose(t *testing.T) {
	s := newSession("true", time.Second)
	assert.False(t, s.Done())
	assert.NoError(t, s.Close(), "nothing started, nothing to end")
}

// TestSessionAskAllocatesNothing: an exchange costs one write and one read
// through reused buffers.
func TestSessionAskAllocatesNothing(t *testing.T) {
	s := newSession(`while read l; do echo '{"clock_mhz": 1500}'; done`, 10*time.Second)
	defer s.Close()
	require.NoError(t, exchange(s, 1))
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Ask(question, 1); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestQuoteAtMost(t *testing.T) {
	tests := []struct {
		b    string
		n    int
		want string
	}{
		{"", 3, `""`},
		{"abc", 3, `"abc"`},
		{"abcd", 3, `"abc"...`},
		{"a\"\n", 80, `"a\"\n"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, execsession.QuoteAtMost([]byte(tt.b), tt.n), "%q", tt.b)
	}
}
