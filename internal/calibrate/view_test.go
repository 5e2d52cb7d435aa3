package calibrate

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/testsupport"
)

// viewReport is a report with every part the table shows: fitted and
// held-out runs, power measured on one, the powers and the thermal fit.
func viewReport(t *testing.T) *Report {
	t.Helper()
	gpu, ok := cards.BuiltinGPU("L4")
	require.True(t, ok)
	model, ok := cards.BuiltinModel("Qwen2.5-7B-Instruct")
	require.True(t, ok)
	gpu.Name = CalibratedName(gpu.Name)
	w := func(x float64) *float64 { return &x }
	runs := []RunFit{
		{File: "c1.json", Measured: Metrics{MeanTTFTS: 0.3, P99TTFTS: 0.33, MeanTPOTS: 0.06, OutputThroughput: 16, MeanPowerW: w(60)},
			Simulated: Metrics{MeanTTFTS: 0.31, P99TTFTS: 0.32, MeanTPOTS: 0.059, OutputThroughput: 16.2, MeanPowerW: w(61.2)}},
		{File: "c8.json", Measured: Metrics{MeanTTFTS: 0.7, P99TTFTS: 2.6, MeanTPOTS: 0.074, OutputThroughput: 96},
			Simulated: Metrics{MeanTTFTS: 0.69, P99TTFTS: 2.7, MeanTPOTS: 0.075, OutputThroughput: 95}},
		{File: "c32.json", HeldOut: true, Measured: Metrics{MeanTTFTS: 3.6, P99TTFTS: 10.6, MeanTPOTS: 0.118, OutputThroughput: 211},
			Simulated: Metrics{MeanTTFTS: 3.5, P99TTFTS: 10.9, MeanTPOTS: 0.12, OutputThroughput: 205}},
	}
	rep := &Report{GPU: gpu, Model: model, Fitted: ParamNames, Cost: 1.5e-3, Evaluations: 123,
		Power:   []LevelPower{{ClockMHz: 2040, IdleW: 26.8, PrefillW: 70, DecodeW: 72.5, Samples: 900}},
		Thermal: &ThermalFit{AmbientC: 28.1, ResistanceCPerW: 0.52, TimeConstantS: 95.2, RSquared: 0.987}}
	for _, r := range runs {
		rep.Runs = append(rep.Runs, RunReport{RunFit: r, Errors: errorsOf(r.Measured, r.Simulated)})
	}
	rep.MedianErrors.Fitted = medianErrors(rep.Runs, false)
	held := medianErrors(rep.Runs, true)
	rep.MedianErrors.HeldOut = &held
	return rep
}

func TestReportTable(t *testing.T) {
	t.Parallel()
	rep := viewReport(t)
	withoutPower := *viewReport(t)
	withoutPower.Power, withoutPower.Thermal = nil, nil
	withoutPower.Runs[0].Measured.MeanPowerW = nil
	withoutPower.MedianErrors.HeldOut = nil
	for _, tt := range []struct {
		name   string
		report *Report
	}{
		{"table_power.txt", rep},
		{"table_latency.txt", &withoutPower},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testsupport.CheckGolden(t, filepath.Join("testdata", "golden", tt.name), []byte(tt.report.Table()))
		})
	}
}

func TestReportTableLeavesOutWhatWasNotMeasured(t *testing.T) {
	t.Parallel()
	rep := viewReport(t)
	assert.Contains(t, rep.Table(), "mean power (W)")
	assert.Contains(t, rep.Table(), "--thermal-tau 95.2 --thermal-resistance 0.52 --ambient 28.1")
	rep.Runs[0].Measured.MeanPowerW = nil
	rep.Power, rep.Thermal = nil, nil
	assert.NotContains(t, rep.Table(), "power")
	assert.NotContains(t, rep.Table(), "thermal")
	assert.Empty(t, rep.ThermalFlags())
}

func TestReportFigure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		power   bool
		columns int
	}{{"with power", true, 2}, {"latency only", false, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			rep := viewReport(t)
			if !tt.power {
				rep.Runs[0].Measured.MeanPowerW = nil
			}
			fig := rep.Figure()
			require.Len(t, fig.Columns, tt.columns)
			panels := 0
			for _, c := range fig.Columns {
				panels += len(c.Panels)
			}
			assert.Equal(t, tt.columns+map[bool]int{true: 2, false: 0}[tt.power], panels)
			data, err := fig.Render("svg")
			require.NoError(t, err)
			assert.Contains(t, string(data), "3 c32.json (held out)", "the title lists the runs by number")
			assert.Contains(t, string(data), ">3 (held out)<", "the axes name them by number")
		})
	}
}
