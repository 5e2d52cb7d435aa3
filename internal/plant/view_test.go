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

func TestSimulateFigureOfAPlannerWithAnEndToEndObjective(t *testing.T) {
	w, err := DefaultTrace(60)
	require.NoError(t, err)
	ctrl, err := NewController("mpc")
	require.NoError(t, err)
	report, err := Run(w, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: ctrl,
		Options: Options{Stride: 1, SLO: SLO{E2ESeconds: 1}}})
	require.NoError(t, err)
	fig := report.Figure(&report.Result, 0, 60)
	require.Len(t, fig.Columns[1].Panels, 3, "TTFT, TPOT and end-to-end latency")
	figuretest.RequirePanelsDrawn(t, fig, 15*96, 12*96, 400)
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

func TestLatencyPanelsJudgeByTheSLOBlock(t *testing.T) {
	w, err := DefaultTrace(60)
	require.NoError(t, err)
	p := NewPlant(profile.Default())
	require.NotEqual(t, 0.3, p.Profile.TTFTSLOSeconds(), "the flags differ from the profile's objectives")
	e2e := 1.0
	tests := []struct {
		name string
		slo  SLO
		want []float64
	}{
		{"the profile's", SLO{}, []float64{p.Profile.TTFTSLOSeconds(), p.Profile.TPOTSLOSeconds()}},
		{"the flags', with an end-to-end objective", SLO{TTFTSeconds: 0.3, TPOTSeconds: 0.008, E2ESeconds: e2e}, []float64{0.3, 0.008, e2e}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report, err := Run(w, Config{Plant: p, Scheduler: ChunkedPrefill{}, Controller: MaxClock{},
				Options: Options{Stride: 1, SLO: tt.slo}})
			require.NoError(t, err)
			var got []float64
			for _, l := range judgedLatencies(report.Requests, new(report.SLO.Objectives())) {
				got = append(got, l.sloS)
				assert.NotEmpty(t, l.seconds, l.title)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPlanLevelsCompareBusyStepsUnderAPlan(t *testing.T) {
	nan := math.NaN()
	at := func(s float64) *float64 { return &s }
	dt := 1.0
	// Ten steps of 0.5 s. Plans for the periods [0,1), [1,2) and [4,5);
	// none for [2,4). The step ending at 1.0 is idle within a plan.
	busy, idle := profile.PhaseDecode, profile.PhaseIdle
	r := &Result{
		Trajectory: Trajectory{
			TimeS:            []float64{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5},
			RealizedClockMHz: []float64{1800, 400, 1000, 900, 400, 400, 2000, 2000, 1500, 1300},
			Phase:            []profile.Phase{busy, idle, busy, busy, busy, busy, busy, busy, busy, busy},
		},
		PlannedClockMHz:        [][]float64{{2000, 1000}, nil, {1000}, nil, nil, nil, nil, nil, {1500, 2000}, nil},
		PlannedClockStartTimeS: []*float64{at(0), nil, at(1), nil, nil, nil, nil, nil, at(4), nil},
		PlanDtS:                &dt,
	}
	b := r.PlanLevels(0.5)
	assert.Equal(t, 1.0, b.WidthS)
	assert.Equal(t, []float64{0, 1, 2, 3, 4, 5}, b.EdgesS)
	assertNaNOrEqual(t, []float64{2000, 1000, nan, nan, 1500}, b.PlanMHz, "the plan: levels over its periods, gaps without one")
	assertNaNOrEqual(t, []float64{1800, 950, nan, nan, 1400}, b.RealizedMHz, "realized on the same busy steps")
}

func TestPlanLevelsOfALongRunAreWholePeriods(t *testing.T) {
	dt := 0.3
	n := 18000 // 1800 s of 0.1 s steps, busy, planned throughout at 1000 then 2000 MHz
	r := &Result{PlanDtS: &dt}
	for i := range n {
		end := float64(i+1) * 0.1
		r.TimeS = append(r.TimeS, end)
		r.RealizedClockMHz = append(r.RealizedClockMHz, 1000)
		r.Phase = append(r.Phase, profile.PhaseDecode)
		r.PlannedClockMHz = append(r.PlannedClockMHz, nil)
		r.PlannedClockStartTimeS = append(r.PlannedClockStartTimeS, nil)
		if i%3 == 0 {
			start := float64(i/3) * dt
			r.PlannedClockMHz[i] = []float64{1000 + 1000*float64(i/3%2)}
			r.PlannedClockStartTimeS[i] = &start
		}
	}
	b := r.PlanLevels(0.1)
	assert.InDelta(t, 9.9, b.WidthS, 1e-9, "1800 s / 200 is 9 s, rounded to 10 s, held to whole 0.3 s periods")
	require.Len(t, b.PlanMHz, int(math.Ceil(1800/b.WidthS)))
	assert.InDelta(t, (17*1000+16*2000)/33.0, b.PlanMHz[0], 1e-9, "the mean over the busy steps of 33 periods, alternating")
	assert.InDelta(t, 1000, b.RealizedMHz[0], 1e-9)
	assert.Equal(t, 1800.0, b.EdgesS[len(b.EdgesS)-1], "the last bin ends with the run")
}

func TestPlanPeriodsCutShortByALaterPlan(t *testing.T) {
	at := func(s float64) *float64 { return &s }
	dt := 1.0
	r := &Result{
		PlannedClockMHz:        [][]float64{{2000}, {1000}, {1500}, {1200}},
		PlannedClockStartTimeS: []*float64{at(0), at(0.5), at(0.5), at(3)},
		PlanDtS:                &dt,
	}
	assert.Equal(t, []planPeriod{{0, 0.5, 2000}, {0.5, 1.5, 1500}, {3, 4, 1200}}, planPeriods(r))
}

// assertNaNOrEqual compares want and got element by element, a NaN
// matching a NaN.
func assertNaNOrEqual(t *testing.T, want, got []float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		if math.IsNaN(want[i]) {
			assert.True(t, math.IsNaN(got[i]), "%s: [%d] = %v, want a gap", msg, i, got[i])
			continue
		}
		assert.InDelta(t, want[i], got[i], 1e-9, "%s: [%d]", msg, i)
	}
}

// TestTableRoundsItsSettings: the table shows the values it prints once
// (the reporting horizon, an mpc control period) rounded for people, not
// as raw floats; the document keeps them exact.
func TestTableRoundsItsSettings(t *testing.T) {
	report := simulateForFigure(t, 60, 3600)
	report.Metrics.ReportingHorizonS = 0.1 + 0.2
	report.MPCDiagnostics = &MPCDiagnostics{SuccessfulSolves: 3, ControlPeriodS: 0.08558345566535629, HorizonSteps: 30}
	table := report.Table()
	tests := []struct{ name, want string }{
		{"the horizon", `(?m)^unfinished at horizon +[0-9]+  horizon 0\.3 s$`},
		{"the mpc period", `(?m)^mpc: 3 solves applied, 0 fell back to race-to-idle \(period 0\.08558 s, horizon 30 periods\)$`},
	}
	for _, tt := range tests {
		assert.Regexp(t, tt.want, table, tt.name)
	}
	assert.NotContains(t, table, "0.30000000000000004")
}
