//go:build unix

package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSameFile compares files, not strings: names of one regular file, or
// of one file not there yet, are the same file; devices and FIFOs never.
func TestSameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	require.NoError(t, os.MkdirAll(in("rl"), 0o755))
	require.NoError(t, os.WriteFile(in("f.json"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("f.json", in("link.json")))
	require.NoError(t, os.Link(in("f.json"), in("hard.json")))
	require.NoError(t, os.Symlink("new.svg", in("dangling.svg")))
	require.NoError(t, os.Symlink("rl", in("rl-link")))
	require.NoError(t, syscall.Mkfifo(in("fifo"), 0o600))
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{in("rl/./p.jsonl"), in("rl/p.jsonl"), true},
		{in("rl/../rl/p.jsonl"), in("rl/p.jsonl"), true},
		{in("rl-link/p.jsonl"), in("rl/p.jsonl"), true},
		{in("f.json"), in("link.json"), true},
		{in("f.json"), in("hard.json"), true},
		{in("dangling.svg"), in("new.svg"), true},
		{in("f.json"), in("f.json"), true},
		{in("f.json"), in("g.json"), false},
		{in("rl/p.jsonl"), in("rl/p.csv"), false},
		{in("fifo"), in("fifo"), false},
		{in("nodir/x"), in("nodir/x"), false},
	} {
		assert.Equal(t, tc.want, SameFile(tc.a, tc.b), "%s %s", tc.a, tc.b)
	}
}

// TestSameFileRelativeAndAbsolute names one file relative to the working
// folder and absolutely (not parallel: it changes the working folder).
func TestSameFileRelativeAndAbsolute(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(dir)
	assert.True(t, SameFile("p.jsonl", filepath.Join(dir, "p.jsonl")))
	require.NoError(t, os.WriteFile("p.jsonl", nil, 0o644))
	assert.True(t, SameFile("./p.jsonl", filepath.Join(dir, "p.jsonl")))
}

// TestStageCommitAndDiscard: a staged file is not there until Commit, and
// Discard leaves the old file; no temporary file is left either way.
func TestStageCommitAndDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.json")
	dropped := filepath.Join(dir, "dropped.json")
	require.NoError(t, os.WriteFile(dropped, []byte("old"), 0o644))
	a, err := Stage(kept, text("new"))
	require.NoError(t, err)
	b, err := Stage(dropped, text("new"))
	require.NoError(t, err)
	assert.False(t, a.InPlace())
	assert.NoFileExists(t, kept, "a staged file is not in place")
	require.NoError(t, a.Commit())
	assert.True(t, a.InPlace())
	b.Discard()
	assert.False(t, b.InPlace())
	data, err := os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, "new", string(data))
	data, err = os.ReadFile(dropped)
	require.NoError(t, err)
	assert.Equal(t, "old", string(data))
	assert.ElementsMatch(t, []string{"kept.json", "dropped.json"}, names(t, dir))

	boom := errors.New("boom")
	_, err = Stage(filepath.Join(dir, "x.json"), func(io.Writer) error { return boom })
	assert.ErrorIs(t, err, boom)
	_, err = Stage(filepath.Join(dir, "kept.json", "x"), text("x"))
	assert.EqualError(t, err, filepath.Join(dir, "kept.json", "x")+": "+filepath.Join(dir, "kept.json")+" is not a folder")
	assert.ElementsMatch(t, []string{"kept.json", "dropped.json"}, names(t, dir))
}

// TestCommitAllSaysWhatWasWritten makes the second of three renames fail
// (its folder is gone): the first output stays, the third is discarded,
// and the error names both groups.
func TestCommitAllSaysWhatWasWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	var staged []*Staged
	for _, path := range []string{filepath.Join(dir, "a.json"), filepath.Join(sub, "b.csv"), filepath.Join(dir, "c.svg")} {
		st, err := Stage(path, text("x"))
		require.NoError(t, err)
		staged = append(staged, st)
	}
	require.NoError(t, os.RemoveAll(sub))
	err := CommitAll(staged, []string{"-o a.json", "--request-log sub/b.csv", "--plot c.svg"})
	var ce *CommitError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"-o a.json"}, ce.Written)
	assert.Equal(t, []string{"--request-log sub/b.csv", "--plot c.svg"}, ce.NotWritten)
	assert.EqualError(t, err, filepath.Join(sub, "b.csv")+": no such file or directory; written: -o a.json; not written: --request-log sub/b.csv, --plot c.svg")
	assert.Equal(t, []string{"a.json"}, names(t, dir))
}
