package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure"
	"servesim/internal/figure/figuretest"
	"servesim/internal/scenario"
)

// requirePanelsDrawn renders fig as PNG and checks its size and that every
// panel holds at least minColored coloured pixels.
func requirePanelsDrawn(t *testing.T, fig figure.Figure, width, height, minColored int) {
	t.Helper()
	data, err := fig.Render("png")
	require.NoError(t, err)
	img := figuretest.DecodePNG(t, data, width, height)
	for c, col := range figuretest.ColoredPixels(img, fig) {
		for p, n := range col {
			assert.GreaterOrEqual(t, n, minColored, "column %d panel %d is empty", c, p)
		}
	}
}

func TestScenariosFigure(t *testing.T) {
	report, err := scenario.DefaultReport()
	require.NoError(t, err)
	requirePanelsDrawn(t, scenariosFigure(report), 14*96, 5*96, 2000)
}

func TestPlotOptionsWriteAtomically(t *testing.T) {
	dir := t.TempDir()
	report, err := scenario.DefaultReport()
	require.NoError(t, err)
	fig := scenariosFigure(report)
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
