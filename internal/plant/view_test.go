package plant

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure/figuretest"
	"servesim/internal/profile"
)

// simulateForFigure runs the embedded defaults for maxElapsed seconds of
// the trace, keeping every step, as simulate --plot does.
func simulateForFigure(t *testing.T, maxElapsed, maxSimTime float64) *Report {
	t.Helper()
	w, err := DefaultTrace(maxElapsed)
	require.NoError(t, err)
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = maxSimTime
	ctrl, err := NewController("reactive")
	require.NoError(t, err)
	report, err := Run(w, Config{Plant: p, Scheduler: ChunkedPrefill{}, Controller: ctrl,
		Normalize: 0.8, Options: Options{Stride: 1}})
	require.NoError(t, err)
	return report
}

func TestSimulateFigure(t *testing.T) {
	report := simulateForFigure(t, 120, 3600)
	fig := report.Figure(&report.Result, 0.8, 120)
	figuretest.RequirePanelsDrawn(t, fig, 15*96, 12*96, 800)
}

func TestSimulateFigureWithNothingCompleted(t *testing.T) {
	report := simulateForFigure(t, 120, 0.1)
	require.Equal(t, 0.0, report.Metrics.CompletedFraction)
	fig := report.Figure(&report.Result, 0.8, 120)
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

func TestSimulateTitleNamesTheLoadFlags(t *testing.T) {
	dilation := 3.3712
	report := &Report{
		Result: Result{SchedulerName: "chunked_prefill_scheduler", ControllerName: "maximum_clock_controller",
			ProfileStatus: "measured"},
		Provenance: Provenance{TracePath: "/data/azure/code.csv"},
	}
	tests := []struct {
		name                   string
		normalize, maxElapsedS float64
		dilation               *float64
		want                   string
	}{
		{"neither flag", 0, NoElapsedLimit, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller\nprofile measured, trace code.csv"},
		{"both flags", 0.8, 900, &dilation,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --normalize 0.8 (arrival times x3.37), --max-elapsed 900 s\nprofile measured, trace code.csv"},
		{"--max-elapsed 0", 0, 0, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --max-elapsed 0 s\nprofile measured, trace code.csv"},
		{"--normalize without dilation", 0.5, NoElapsedLimit, nil,
			"simulate: chunked_prefill_scheduler, maximum_clock_controller, --normalize 0.5\nprofile measured, trace code.csv"},
	}
	for _, tt := range tests {
		report.Dilation = tt.dilation
		assert.Equal(t, tt.want, report.figureTitle(&report.Result, tt.normalize, tt.maxElapsedS), tt.name)
	}
}

func TestSummaryCSVValuesFollowTheColumns(t *testing.T) {
	t.Parallel()
	report := simulateForFigure(t, 60, 3600)
	columns := SummaryColumns()
	values := report.Summary.CSVValues()
	require.Len(t, values, len(columns))
	assert.Equal(t, "controller", columns[0])
	assert.Contains(t, columns, "p95_ttft_s", "the embedded metrics are flattened")
	s := report.Summary
	s.P95TTFTS = math.NaN()
	for i, c := range columns {
		if c == "p95_ttft_s" {
			assert.Empty(t, s.CSVValues()[i], "an undefined number is an empty cell")
		}
	}
}
