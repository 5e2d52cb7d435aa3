package testsupport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CountingReader counts the bytes read from R: how far a reader of capped
// input got before it failed.
type CountingReader struct {
	R io.Reader // the input
	N int64     // bytes read so far
}

// Read reads from R and counts what it got.
func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// endless repeats a pattern forever.
type endless struct {
	pattern []byte
	at      int
}

// Endless returns a reader that repeats pattern forever: /dev/zero is
// Endless("\x00"), an endless line Endless("1,"), endless rows a row.
func Endless(pattern string) io.Reader {
	return &endless{pattern: []byte(pattern)}
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pattern[e.at]
		e.at = (e.at + 1) % len(e.pattern)
	}
	return len(p), nil
}

// FailingWriter accepts Limit bytes in whole writes, then fails every
// write that does not fit with Err, as a full device does.
type FailingWriter struct {
	Limit int   // bytes accepted before the device is full
	Err   error // the error of a write past Limit
}

// Write writes p whole if it fits in what is left of Limit, else nothing.
func (w *FailingWriter) Write(p []byte) (int, error) {
	if len(p) > w.Limit {
		return 0, w.Err
	}
	w.Limit -= len(p)
	return len(p), nil
}

// SparseFile writes head to path and extends the file to size bytes
// without writing them (a sparse file): a 30 GiB input costs no disk.
func SparseFile(t testing.TB, path string, head []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatalf("a sparse %d-byte file: %v", size, err)
	}
}

// PidFile is where a shell child writes its pid ($$), in t's temporary
// folder, and gone checks that the process no longer exists (not even as
// a zombie) once the child's session or run is over.
func PidFile(t *testing.T) (path string, gone func()) {
	path = filepath.Join(t.TempDir(), "pid")
	return path, func() {
		t.Helper()
		data, err := os.ReadFile(path)
		require.NoError(t, err, "the child wrote its pid")
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
		assert.True(t, os.IsNotExist(err), "child %d is still there: %v", pid, err)
	}
}

// ShellQuote quotes s for /bin/sh.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// FailingChild is the /bin/sh command of a child that writes its pid to a
// file of t's and runs script, for a case of an exec: child's failure
// whose message is want, with the timeout that case gets: 300 ms for the
// cases about the timeout (want says "within 300ms"), and otherwise one
// no loaded machine reaches, so that a slow shell start cannot turn their
// failure into a timeout. gone checks that the child is reaped.
func FailingChild(t *testing.T, script, want string) (command string, timeout time.Duration, gone func()) {
	pids, gone := PidFile(t)
	command = "echo $$ > " + ShellQuote(pids) + "; " + script
	timeout = 10 * time.Second
	if strings.Contains(want, "within 300ms") {
		timeout = 300 * time.Millisecond
	}
	return command, timeout, gone
}
