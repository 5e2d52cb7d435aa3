package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/diagnose"
	"servesim/internal/figure"
	"servesim/internal/figure/figuretest"
	"servesim/internal/plant"
	"servesim/internal/profile"
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

func TestDiagnoseFigure(t *testing.T) {
	report, err := diagnose.Demo(diagnose.DefaultOptions())
	require.NoError(t, err)
	snapshots := []diagnose.Snapshot{report.BeforeRemediation, report.AfterRemediation}
	fig := diagnoseFigure("demo", snapshots)
	requirePanelsDrawn(t, fig, 12*96, 6*96, 5000)
}

func TestBarLabel(t *testing.T) {
	tests := []struct{ log, window, want string }{
		{"a.csv", "a.csv [60s, 80s)", "[60s, 80s)"},
		{"h.jsonl", "h.jsonl [2023-11-16T18:17:10Z, 2023-11-16T18:17:20Z)", "18:17:10"},
		{"x", "unbounded_98pct_kv_watermark", "unbounded_98pct_kv_watermark"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, barLabel(tt.log, tt.window))
	}
}

// simulateForFigure runs the embedded defaults for maxElapsed seconds of
// the trace, keeping every step, as simulate --plot does.
func simulateForFigure(t *testing.T, maxElapsed, maxSimTime float64) *plant.Report {
	t.Helper()
	w, err := plant.DefaultTrace(maxElapsed)
	require.NoError(t, err)
	p := plant.NewPlant(profile.Default())
	p.MaxSimulationTimeS = maxSimTime
	ctrl, err := plant.NewController("reactive")
	require.NoError(t, err)
	report, err := plant.Run(w, plant.Config{Plant: p, Scheduler: plant.ChunkedPrefill{}, Controller: ctrl,
		Normalize: 0.8, Options: plant.Options{Stride: 1}})
	require.NoError(t, err)
	return report
}

func TestSimulateFigure(t *testing.T) {
	report := simulateForFigure(t, 120, 3600)
	fig := simulateFigure(report, &report.Result, &simulateOptions{Normalize: 0.8, MaxElapsedS: 120})
	requirePanelsDrawn(t, fig, 15*96, 12*96, 800)
}

func TestSimulateFigureWithNothingCompleted(t *testing.T) {
	report := simulateForFigure(t, 120, 0.1)
	require.Equal(t, 0.0, report.Metrics.CompletedFraction)
	fig := simulateFigure(report, &report.Result, &simulateOptions{Normalize: 0.8, MaxElapsedS: 120})
	data, err := fig.Render("png")
	require.NoError(t, err)
	counts := figuretest.ColoredPixels(figuretest.DecodePNG(t, data, 15*96, 12*96), fig)
	for p, n := range counts[0] {
		assert.Greater(t, n, 50, "time panel %d still draws the few steps", p)
	}
	for p, n := range counts[1] {
		assert.Less(t, n, 20, "distribution panel %d says nothing completed instead of drawing", p)
	}
}

func TestSimulatePlotLeavesTheDocumentUnchanged(t *testing.T) {
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

func TestSimulateTitleNamesTheLoadFlags(t *testing.T) {
	dilation := 3.3712
	report := &plant.Report{
		Result: plant.Result{SchedulerName: "chunked_prefill_scheduler", ControllerName: "maximum_clock_controller",
			ProfileStatus: "measured"},
		Provenance: plant.Provenance{TracePath: "/data/azure/code.csv"},
	}
	tests := []struct {
		name     string
		opts     simulateOptions
		dilation *float64
		want     string
	}{
		{"neither flag", simulateOptions{MaxElapsedS: plant.NoElapsedLimit}, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller\nprofile measured, trace code.csv"},
		{"both flags", simulateOptions{Normalize: 0.8, MaxElapsedS: 900}, &dilation,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --normalize 0.8 (arrival times x3.37), --max-elapsed 900 s\nprofile measured, trace code.csv"},
		{"--max-elapsed 0", simulateOptions{MaxElapsedS: 0}, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --max-elapsed 0 s\nprofile measured, trace code.csv"},
		{"--normalize without dilation", simulateOptions{Normalize: 0.5, MaxElapsedS: plant.NoElapsedLimit}, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --normalize 0.5\nprofile measured, trace code.csv"},
	}
	for _, tt := range tests {
		report.Dilation = tt.dilation
		assert.Equal(t, tt.want, simulateTitle(report, &report.Result, &tt.opts), tt.name)
	}
}
