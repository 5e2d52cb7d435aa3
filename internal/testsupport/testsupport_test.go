package testsupport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps what a check reports instead of
// failing the test; Fatalf stops the check as FailNow would.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	panic(r)
}

// check runs CheckGolden on a recorder named after t.
func check(t *testing.T, path string, got []byte) (rec *recorder) {
	rec = &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil && v != rec {
			panic(v)
		}
	}()
	CheckGolden(rec, path, got)
	return rec
}

func TestCheckGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	rec := check(t, path, []byte("a\n"))
	require.True(t, rec.fatal, "a missing golden file fails")
	assert.Contains(t, rec.errors[0], "go test -run '^TestCheckGolden$' -update writes it")

	require.NoError(t, os.WriteFile(path, []byte("a\nb\nc\n"), 0o644))
	assert.Empty(t, check(t, path, []byte("a\nb\nc\n")).errors, "the same bytes pass")

	rec = check(t, path, []byte("a\nB\nc\n"))
	require.Len(t, rec.errors, 1)
	assert.False(t, rec.fatal, "a mismatch lets the test go on")
	assert.Equal(t, "golden "+path+" differs from the output (go test -run '^TestCheckGolden$' -update rewrites it):\n"+
		"first difference at line 2, byte 1 (want 3 lines, got 3)\n- \"b\\n\"\n+ \"B\\n\"\n", rec.errors[0])
}

func TestCheckGoldenUpdateRewritesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "testdata", "golden")
	path := filepath.Join(dir, "out.txt")
	*update = true
	t.Cleanup(func() { *update = false })
	require.True(t, Updating())
	assert.Empty(t, check(t, path, []byte("first\n")).errors, "-update creates the folder and the file")
	assert.Empty(t, check(t, path, []byte("second\n")).errors)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(data))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	*update = false
	assert.Empty(t, check(t, path, []byte("second\n")).errors, "what -update wrote passes")
}

func TestDiff(t *testing.T) {
	for _, tt := range []struct {
		name, want, got, diff string
	}{
		{"a changed line", "a\nb\nc\n", "a\nx\nc\n", "first difference at line 2, byte 1 (want 3 lines, got 3)\n- \"b\\n\"\n+ \"x\\n\"\n"},
		{"a line added", "a\nc\n", "a\nb\nc\n", "first difference at line 2, byte 1 (want 2 lines, got 3)\n+ \"b\\n\"\n"},
		{"a last newline lost", "a\n", "a", "first difference at line 1, byte 2 (want 1 lines, got 1)\n- \"a\\n\"\n+ \"a\"\n"},
		{"a long line cut around the difference", strings.Repeat("x", 300) + "1" + strings.Repeat("y", 300), strings.Repeat("x", 300) + "2" + strings.Repeat("y", 300),
			"first difference at line 1, byte 301 (want 1 lines, got 1)\n- \"" + strings.Repeat("x", 80) + "1" + strings.Repeat("y", 79) + "\"\n+ \"" + strings.Repeat("x", 80) + "2" + strings.Repeat("y", 79) + "\"\n"},
		{"many lines cut", "a\n", strings.Repeat("b\n", 20), "first difference at line 1, byte 1 (want 1 lines, got 20)\n- \"a\\n\"\n" + strings.Repeat("+ \"b\\n\"\n", 12) + "+ ... 8 more lines\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.diff, Diff(tt.want, tt.got))
		})
	}
}

func TestEndlessAndCountingReader(t *testing.T) {
	in := &CountingReader{R: io.LimitReader(Endless("ab\n"), 10)}
	data, err := io.ReadAll(in)
	require.NoError(t, err)
	assert.Equal(t, "ab\nab\nab\na", string(data))
	assert.Equal(t, int64(10), in.N)
}

func TestFailingWriter(t *testing.T) {
	full := errors.New("disk full")
	w := &FailingWriter{Limit: 5, Err: full}
	n, err := w.Write([]byte("abc"))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	n, err = w.Write([]byte("def"))
	assert.Equal(t, 0, n, "a write that does not fit writes nothing")
	assert.Equal(t, full, err)
	n, err = w.Write([]byte("de"))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = w.Write([]byte("f"))
	assert.Equal(t, full, err)
}

func TestSparseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse.csv")
	SparseFile(t, path, []byte("head\n"), 1<<30)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), info.Size())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	head := make([]byte, 6)
	_, err = io.ReadFull(f, head)
	require.NoError(t, err)
	assert.Equal(t, "head\n\x00", string(head))
}
