package sharedtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirResolvesARelativePathFromTheRepositoryRoot(t *testing.T) {
	abs := Dir(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	rel, err := filepath.Rel(root, abs)
	require.NoError(t, err)
	require.False(t, filepath.IsAbs(rel))
	t.Setenv(EnvVar, rel)
	assert.Equal(t, abs, Dir(t), "%s=%s from %s", EnvVar, rel, mustGetwd(t))
	assert.FileExists(t, CodeTrace(t))
}

// TestSharedDataReport says whether the shared-data tests run: with -v its
// one "shared data: ..." line is what `make test` prints after the tests.
func TestSharedDataReport(t *testing.T) {
	dir := Dir(t) // skips (or, with SERVESIM_SHARED set, fails) saying why
	t.Logf("shared data: ran (%s)", dir)
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

func TestNoteSkippedAppendsOneLineATest(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skipped")
	t.Setenv(SkippedLogVar, log)
	noteSkipped(t)
	noteSkipped(t)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	line := "sharedtest.TestNoteSkippedAppendsOneLineATest\n"
	assert.Equal(t, line+line, string(data))

	t.Setenv(SkippedLogVar, "")
	noteSkipped(t) // no file named: nothing written, nothing fails
}
