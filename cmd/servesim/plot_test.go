package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/scenario"
)

func TestPlotOptionsWriteAtomically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report, err := scenario.DefaultReport()
	require.NoError(t, err)
	fig := report.Figure()
	for _, name := range []string{"f.png", "f.svg"} {
		path := filepath.Join(dir, name)
		require.NoError(t, plotOptions{Path: path}.write(fig))
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Greater(t, info.Size(), int64(1000))
	}
	assert.Error(t, plotOptions{Path: filepath.Join(dir, "f.jpg")}.check())
	assert.NoError(t, plotOptions{}.check())
	require.Error(t, plotOptions{Path: filepath.Join(dir, "missing", "f.png")}.write(fig))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary files left behind")
}

func TestSimulatePlotLeavesTheDocumentUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--stride", "50"}, {"--summary"}, {"--stride", "7", "--controller", "sampled-reactive"}, {"--format", "table"},
	} {
		base := append([]string{"simulate", "--max-elapsed", "300", "--normalize", "0.7"}, args...)
		code, want, errOut := runCLI(t, base...)
		require.Equal(t, exitOK, code, errOut)
		path := filepath.Join(dir, "run.png")
		code, got, errOut := runCLI(t, append(base, "--plot", path)...)
		require.Equal(t, exitOK, code, errOut)
		assert.Equal(t, want, got, "%v", args)
		assert.FileExists(t, path)
	}
}
