package calibrate

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/texttable"
)

// metricView is one metric of a run as the table and the figure show it:
// its name, unit, scale from the Metrics' unit, and how to read it (nil:
// not known) from the metrics and from the errors.
type metricView struct {
	name, unit string
	scale      float64
	plot       bool // drawn by Figure
	value      func(*Metrics) *float64
	err        func(*Errors) *float64
}

func ptr(x float64) *float64 { return &x }

// metricViews are the metrics of the table, in its order.
var metricViews = []metricView{
	{"mean TTFT", "ms", 1e3, true, func(m *Metrics) *float64 { return ptr(m.MeanTTFTS) }, func(e *Errors) *float64 { return e.MeanTTFT }},
	{"p99 TTFT", "ms", 1e3, false, func(m *Metrics) *float64 { return ptr(m.P99TTFTS) }, func(e *Errors) *float64 { return e.P99TTFT }},
	{"mean TPOT", "ms", 1e3, true, func(m *Metrics) *float64 { return ptr(m.MeanTPOTS) }, func(e *Errors) *float64 { return e.MeanTPOT }},
	{"throughput", "tok/s", 1, true, func(m *Metrics) *float64 { return ptr(m.OutputThroughput) }, func(e *Errors) *float64 { return e.Throughput }},
	{"mean power", "W", 1, true, func(m *Metrics) *float64 { return m.MeanPowerW }, func(e *Errors) *float64 { return e.MeanPower }},
}

// powerMeasured reports whether a run's power was measured (a power log
// matched it).
func (r *Report) powerMeasured() bool {
	for i := range r.Runs {
		if r.Runs[i].Measured.MeanPowerW != nil {
			return true
		}
	}
	return false
}

// views are the metrics the report has: the power only when measured.
func (r *Report) views() []metricView {
	if r.powerMeasured() {
		return metricViews
	}
	return metricViews[:len(metricViews)-1]
}

// fixedOr is x times scale with decimals, "-" when unknown; a value
// that rounds to zero is 0, not -0.
func fixedOr(x *float64, scale float64, decimals int) string {
	if x == nil {
		return "-"
	}
	s := texttable.Fixed(*x*scale, decimals)
	if s != "-" && strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	return s
}

// setName is how the table names a run's set.
func setName(heldOut bool) string {
	if heldOut {
		return "held out"
	}
	return "fitted"
}

// Table renders the report for people: the fitted card's parameters; one
// row per run of its measured and simulated metrics and their errors (%),
// then the median absolute errors of the fitted and held-out runs; with
// power logs, the fitted powers per clock level and the thermal constants
// with the plant flags that use them.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "calibrated GPU card %s for %s: fitted %s in %d evaluations, cost %s\n",
		r.GPU.Name, r.Model.Name, strings.Join(r.Fitted, ", "), r.Evaluations, strconv.FormatFloat(r.Cost, 'g', 4, 64))
	card := texttable.Table{Columns: []texttable.Column{{Header: "parameter", Text: true}, {Header: "value"}}}
	card.AddRow(ParamMemoryEfficiency, texttable.Fixed(r.GPU.MemoryEfficiency, 4))
	card.AddRow(ParamComputeEfficiency, texttable.Fixed(r.GPU.ComputeEfficiency, 4))
	card.AddRow(ParamIterationOverheadS, strconv.FormatFloat(r.GPU.IterationOverheadS, 'g', 4, 64))
	b.WriteString(card.String())

	views := r.views()
	b.WriteString("\nper run: measured, simulated, error (simulated / measured - 1)\n")
	runs := texttable.Table{Columns: []texttable.Column{{Header: "bench file", Text: true}, {Header: "set", Text: true}}}
	for _, v := range views {
		runs.Columns = append(runs.Columns, texttable.Column{Header: fmt.Sprintf("%s (%s)", v.name, v.unit)},
			texttable.Column{Header: "sim"}, texttable.Column{Header: "err (%)"})
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		row := []string{run.File, setName(run.HeldOut)}
		for _, v := range views {
			row = append(row, fixedOr(v.value(&run.Measured), v.scale, 1), fixedOr(v.value(&run.Simulated), v.scale, 1),
				fixedOr(v.err(&run.Errors), 100, 1))
		}
		runs.AddRow(row...)
	}
	medians := []struct {
		heldOut bool
		errors  *Errors
	}{{false, &r.MedianErrors.Fitted}, {true, r.MedianErrors.HeldOut}}
	for _, m := range medians {
		if m.errors == nil {
			continue
		}
		row := []string{"median |error|", setName(m.heldOut)}
		for _, v := range views {
			row = append(row, "", "", fixedOr(v.err(m.errors), 100, 1))
		}
		runs.AddRow(row...)
	}
	b.WriteString(runs.String())

	if len(r.Power) > 0 {
		b.WriteString("\npower per clock level (simulate with the profile of --out-profile)\n")
		power := texttable.Table{Columns: []texttable.Column{{Header: "clock (MHz)"}, {Header: "idle (W)"}, {Header: "prefill (W)"},
			{Header: "decode (W)"}, {Header: "samples"}}}
		for _, lp := range r.Power {
			power.AddRow(texttable.Fixed(lp.ClockMHz, 0), texttable.Fixed(lp.IdleW, 1), texttable.Fixed(lp.PrefillW, 1),
				texttable.Fixed(lp.DecodeW, 1), strconv.Itoa(lp.Samples))
		}
		b.WriteString(power.String())
	}
	if t := r.Thermal; t != nil {
		fmt.Fprintf(&b, "\nthermal: time constant %s s, resistance %s C/W, ambient %s C (R^2 %s): simulate with %s\n",
			texttable.Fixed(t.TimeConstantS, 1), strconv.FormatFloat(t.ResistanceCPerW, 'g', 4, 64), texttable.Fixed(t.AmbientC, 1),
			texttable.Fixed(t.RSquared, 3), r.ThermalFlags())
	}
	return b.String()
}

// ThermalFlags are the plant flags that set the fitted thermal constants
// ("--thermal-tau 95.2 --thermal-resistance 0.52 --ambient 28.1"); empty
// without a thermal fit.
func (r *Report) ThermalFlags() string {
	t := r.Thermal
	if t == nil {
		return ""
	}
	return fmt.Sprintf("--thermal-tau %s --thermal-resistance %s --ambient %s",
		strconv.FormatFloat(t.TimeConstantS, 'g', 4, 64), strconv.FormatFloat(t.ResistanceCPerW, 'g', 4, 64), strconv.FormatFloat(t.AmbientC, 'g', 4, 64))
}

// Figure draws measured against simulated per run, one bar chart each
// for mean TTFT, mean TPOT, output throughput and, when measured, mean
// power (calibrate --plot): a run's measured bar beside its simulated
// one, coloured apart for the fitted and the held-out runs, which are
// labelled "(held out)" too.
func (r *Report) Figure() figure.Figure {
	// Runs go by number on the axes (file names do not fit under a bar);
	// the title lists them.
	labels := make([]string, len(r.Runs))
	names := make([]string, len(r.Runs))
	for i, run := range r.Runs {
		labels[i] = strconv.Itoa(i + 1)
		names[i] = fmt.Sprintf("%d %s", i+1, filepath.Base(run.File))
		if run.HeldOut {
			labels[i] += " (held out)"
			names[i] += " (held out)"
		}
	}
	var panels []*figure.Panel
	for _, v := range r.views() {
		if !v.plot {
			continue
		}
		measured := make([]float64, len(r.Runs))
		simulated := make([]float64, len(r.Runs))
		for i := range r.Runs {
			run := &r.Runs[i]
			measured[i], simulated[i] = math.NaN(), math.NaN() // no bar
			if m := v.value(&run.Measured); m != nil {
				measured[i] = *m * v.scale
			}
			if sim := v.value(&run.Simulated); sim != nil {
				simulated[i] = *sim * v.scale
			}
		}
		panels = append(panels, figure.Bars(v.name, fmt.Sprintf("%s (%s)", v.name, v.unit), labels, []figure.BarGroup{
			{Name: "measured", Values: measured}, {Name: "simulated", Values: simulated},
		}))
	}
	fig := figure.Figure{
		Title: fmt.Sprintf("calibrate: %s for %s, measured against simulated per run\nruns: %s", r.GPU.Name, r.Model.Name,
			strings.Join(names, ", ")),
		Width:  14 * vg.Inch,
		Height: 5 * vg.Inch,
	}
	if len(panels) == 4 {
		fig.Height = 9 * vg.Inch
		fig.Columns = []figure.Column{{Panels: panels[:2]}, {Panels: panels[2:]}}
		return fig
	}
	for _, p := range panels {
		fig.Columns = append(fig.Columns, figure.Column{Panels: []*figure.Panel{p}})
	}
	return fig
}
