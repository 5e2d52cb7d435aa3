// Package execsession is a child process that answers each line written
// to its stdin with one line on its stdout, within a deadline: the
// machinery of servesim's exec: protocols (the exec: clock controller, a
// fleet's exec: autoscaler). It starts /bin/sh -c COMMAND in a process
// group of its own, notices a child that exits while what it started holds
// its pipes open, kills and reaps the child and its group (on Linux the
// grandchildren too), and words every way a child fails. It imports none
// of the simulator's packages.
package execsession

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// DefaultTimeout is how long a child may take to take a line or to answer
// one unless told otherwise.
const DefaultTimeout = 5 * time.Second

// MaxAnswerBytes bounds one answer line, its end of line included.
const MaxAnswerBytes = 1 << 20

// QuoteBytes is how much of what a child wrote an error quotes.
const QuoteBytes = 80

// Session is a child process that answers each line of JSON written to
// its stdin with one line on its stdout, within Timeout. The first Ask
// starts Command with /bin/sh -c; the child's stderr goes to Stderr.
//
// A child that exits, takes longer than Timeout to take a line or to
// answer one, or answers what Reject refuses fails the session for good:
// it kills the child's process group and reaps the child (on Linux also
// the grandchildren it killed: see execChild); Err and Close then return
// the reason, one line naming Who and Where, quoting at most QuoteBytes of
// what the child wrote; a timeout is worded with --exec-timeout, the flag
// of every exec: protocol. A child that exits while what it started keeps
// its stdout open is noticed within execPoll, not after Timeout. Close
// must always be called once the session is started: after a successful
// exchange it closes the child's stdin, gives the child Timeout to exit
// and then kills its process group, the background processes of a child
// that exited included. KillChildren ends the children of every session
// at once.
type Session struct {
	Command string        // shell command, run with /bin/sh -c
	Timeout time.Duration // longest wait for each line written and answer
	Stderr  io.Writer     // the child's stderr; nil discards it
	// Who names the session in errors; it must be set.
	Who string
	// Where names the exchange at of an error; it must be set.
	Where func(at int) string

	child  *execChild
	stdin  *os.File      // write end of the child's stdin
	stdout *os.File      // read end of the child's stdout
	reader *bufio.Reader // over stdout
	line   []byte        // what readLine read, when longer than the reader's buffer or unfinished
	err    error         // why the session failed; sticky
	closed bool
	// ended says that a wait on a pipe found the child exited and its
	// process group killed: if the next wait brings nothing either, what
	// holds the pipe open is a process of another group (a daemon it
	// started with setsid), and the child's end is reported at once.
	ended bool
	// stdinClosed says that the child's stdin was found closed when an
	// line was written: fail words how it ended so.
	stdinClosed bool
}

// Ask writes out (one line, its end of line included) to the child,
// starting it first if need be, and returns its answer line (end of line
// included; valid until the next Ask) by Timeout, at naming the exchange
// in errors. Any failure fails the session: it kills the child, and Ask
// returns the error, as Err does from then on.
func (c *Session) Ask(out []byte, at int) ([]byte, error) {
	if c.err != nil || c.closed {
		if c.err == nil {
			return nil, errors.New(c.Who + ": closed")
		}
		return nil, c.err
	}
	if c.child == nil {
		if err := c.start(); err != nil {
			c.err = fmt.Errorf("%s: cannot start: %w", c.Who, err)
			return nil, c.err
		}
	}
	deadline := time.Now().Add(c.Timeout)
	if err := c.write(out, deadline); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.fail(at, fmt.Sprintf("did not take its observation within %v (--exec-timeout)", c.Timeout), nil)
			return nil, c.err
		}
		// Its stdin is closed: it exited, most likely. A whole line it
		// wrote before is its answer, as if it had exited a moment later,
		// so that the outcome does not depend on that moment.
		line, err := c.readLine(deadline)
		if err == nil {
			return line, nil
		}
		c.stdinClosed = true
		if len(line) == 0 {
			line = nil // fail reads what is left
		}
		c.fail(at, "", line)
		return nil, c.err
	}
	line, err := c.readLine(deadline)
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		c.fail(at, fmt.Sprintf("answer longer than %d bytes", MaxAnswerBytes), line)
		return nil, c.err
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.fail(at, fmt.Sprintf("no answer within %v (--exec-timeout)", c.Timeout), line)
		return nil, c.err
	case err != nil:
		c.fail(at, "", line) // end of file: it exited or closed its stdout
		return nil, c.err
	}
	return line, nil
}

// Reject fails the session for the answer line it gave at: why says what
// is wrong with it.
func (c *Session) Reject(at int, line []byte, why error) {
	c.fail(at, "answer "+QuoteAtMost(bytes.TrimRight(line, "\r\n"), QuoteBytes)+": "+why.Error(), nil)
}

// Err is why the session failed, or nil.
func (c *Session) Err() error { return c.err }

// Done reports whether the session has failed or is closed: Ask would
// only return an error.
func (c *Session) Done() bool { return c.err != nil || c.closed }

// start runs the child with its stdin and stdout on pipes of our own, whose
// ends here support deadlines.
func (c *Session) start() error {
	inChild, in, err := os.Pipe()
	if err != nil {
		return err
	}
	out, outChild, err := os.Pipe()
	if err != nil {
		inChild.Close()
		in.Close()
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", c.Command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inChild, outChild, c.Stderr
	// Copying the child's stderr into a writer that is not a file ends
	// when the child's whole process group has closed it; do not wait for
	// a straggler longer than for an answer.
	cmd.WaitDelay = c.Timeout
	cmd.SysProcAttr = childProcAttr()
	child, err := startExecChild(cmd)
	inChild.Close()
	outChild.Close()
	if err != nil {
		in.Close()
		out.Close()
		return err
	}
	c.child, c.stdin, c.stdout = child, in, out
	c.reader = bufio.NewReaderSize(out, 64<<10)
	c.line = make([]byte, 0, 256) // never nil: readLine's result is what the child wrote
	return nil
}

// execPoll is how often a session waiting for its child to take a line
// or to answer looks whether the child has exited.
const execPoll = 50 * time.Millisecond

// pollDeadline is the deadline of one wait on a pipe: deadline, or
// execPoll from now when that is sooner.
func pollDeadline(deadline time.Time) time.Time {
	if next := time.Now().Add(execPoll); next.Before(deadline) {
		return next
	}
	return deadline
}

// errChildEnded stands for the end of a pipe that a process outside the
// child's group holds open after the child exited.
var errChildEnded = errors.New("the child exited")

// orphaned looks, when a wait on a pipe ran out before deadline, whether
// the child has exited (what it started may hold its pipes open): if so,
// it kills the child's process group, so that the pipes close and the
// child's end is seen there. When a wait after that brings nothing either,
// a process that left the group (setsid) holds the pipe: orphaned returns
// errChildEnded, which reads as the pipe's end, rather than wait for the
// deadline. It reports whether to wait again, and the error to return
// when not.
func (c *Session) orphaned(err error, deadline time.Time) (bool, error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(deadline) {
		return false, err
	}
	if c.ended {
		return false, errChildEnded
	}
	if c.child.exited() {
		c.child.kill()
		c.ended = true
	}
	return true, nil
}

// write writes out by deadline.
func (c *Session) write(out []byte, deadline time.Time) error {
	for {
		if err := c.stdin.SetWriteDeadline(pollDeadline(deadline)); err != nil {
			return err
		}
		n, err := c.stdin.Write(out)
		out = out[n:]
		if err == nil {
			return nil
		}
		if again, err := c.orphaned(err, deadline); !again {
			return err
		}
	}
}

// readLine reads one line, its end of line included, of at most
// MaxAnswerBytes by deadline. It returns what it read with
// bufio.ErrBufferFull for a longer line, and with the read error (end of
// file or the deadline) otherwise.
func (c *Session) readLine(deadline time.Time) ([]byte, error) {
	c.line = c.line[:0]
	for {
		if err := c.stdout.SetReadDeadline(pollDeadline(deadline)); err != nil {
			return c.line, err
		}
		chunk, err := c.reader.ReadSlice('\n')
		if err == nil && len(c.line) == 0 {
			return chunk, nil
		}
		if len(c.line)+len(chunk) > MaxAnswerBytes {
			c.line = append(c.line, chunk[:MaxAnswerBytes-len(c.line)]...)
			return c.line, bufio.ErrBufferFull
		}
		c.line = append(c.line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if again, err := c.orphaned(err, deadline); !again {
			return c.line, err
		}
	}
}

// fail records why the session stops at at, kills the child and reaps
// it. An empty reason means that the child's stdin or stdout closed: the
// reason becomes how the child ended. wrote is what the child wrote of an
// unfinished answer, quoted in the error; nil when there is nothing to
// quote, or, for a child that ended, when its last words are still unread.
func (c *Session) fail(at int, reason string, wrote []byte) {
	c.closed = true
	c.stdin.Close()
	waitErr := c.child.end(0)
	if reason == "" {
		reason = endedHow(waitErr, wrote == nil || c.stdinClosed) + " before answering"
		if wrote == nil {
			wrote = c.rest()
		}
	}
	c.stdout.Close()
	switch {
	case wrote == nil:
	case len(wrote) == 0:
		reason += "; it wrote nothing"
	default:
		reason += "; it wrote " + QuoteAtMost(wrote, QuoteBytes)
	}
	c.err = fmt.Errorf("%s: %s: %s", c.Who, c.Where(at), reason)
}

// endedHow says how a child ended from its Wait error; closedStdin says
// that servesim noticed when writing to it, not when reading.
func endedHow(waitErr error, closedStdin bool) string {
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		return "exited with status 0"
	case !errors.As(waitErr, &exit):
		return "ended (" + waitErr.Error() + ")"
	case exit.Exited():
		return "exited with status " + strconv.Itoa(exit.ExitCode())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		// It lived on until killed.
		if closedStdin {
			return "closed its stdin"
		}
		return "closed its stdout"
	}
	return "ended (" + exit.String() + ")"
}

// rest is what the child left unread on its stdout, at most
// MaxAnswerBytes, after it ended.
func (c *Session) rest() []byte {
	line, _ := c.readLine(time.Now().Add(c.Timeout))
	return line
}

// Close ends the child: after a failure it is already gone; otherwise its
// stdin is closed and it has Timeout to exit before its process group is
// killed (what it left running in the background too). It returns why the
// session failed, or nil. Close is idempotent.
func (c *Session) Close() error {
	if c.child == nil || c.closed {
		return c.err
	}
	c.closed = true
	c.stdin.Close()
	_ = c.child.end(c.Timeout) // its exit status after its last answer does not matter
	c.stdout.Close()
	return c.err
}

// QuoteAtMost quotes the first n bytes of b as a Go string literal, with
// "..." after it when b is longer.
func QuoteAtMost(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:n])) + "..."
}
