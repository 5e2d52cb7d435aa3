package plant

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/texttable"
)

// leastSmoothingS is the shortest rolling window of the queue, KV, clock and
// power panels, in simulated seconds: those series change every step, so
// each is drawn as its rolling mean over the min-max band of the same window.
const leastSmoothingS = 10

// Figure draws a run (simulate --plot): five aligned panels over simulated
// time (queues, KV cache, clocks, power, temperature, each against its
// limit) and the TTFT and TPOT distributions against the SLOs. full must
// hold every step and every request record; normalize and maxElapsedS are
// the run's --normalize (0: not given) and --max-elapsed (NoElapsedLimit:
// not given), which the title names.
func (r *Report) Figure(full *Result, normalize, maxElapsedS float64) figure.Figure {
	t := full.Trajectory
	ints := func(v []int) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	span := 0.0
	if n := len(t.TimeS); n > 0 {
		span = t.TimeS[n-1] - t.TimeS[0]
	}
	window, width := figure.SmoothingWindow(span, r.Plant.TimeStepS, leastSmoothingS)
	mean := fmt.Sprintf(": %s s mean", strconv.FormatFloat(width, 'g', -1, 64))
	band := fmt.Sprintf(": %s s min-max", strconv.FormatFloat(width, 'g', -1, 64))
	prof := r.Plant.Profile
	return figure.Figure{
		Title:  r.figureTitle(full, normalize, maxElapsedS),
		Width:  15 * vg.Inch,
		Height: 12 * vg.Inch,
		Columns: []figure.Column{
			{Weight: 2, Panels: []*figure.Panel{
				figure.TimeSeries("queues", "requests", []figure.Series{
					{Name: "prefill queue" + mean, X: t.TimeS, Y: ints(t.PrefillQueue), Window: window, Band: "prefill queue" + band},
					{Name: "active decodes" + mean, X: t.TimeS, Y: ints(t.DecodeActive), Window: window, Band: "active decodes" + band},
				}, nil),
				figure.TimeSeries("KV cache", "tokens", []figure.Series{
					{Name: "KV tokens" + mean, X: t.TimeS, Y: t.KVTokens, Window: window, Band: "KV tokens" + band},
				}, &figure.Line{Name: "capacity", Value: r.Plant.KVCapacityTokens}),
				figure.TimeSeries("GPU clock", "MHz", plannedUnder(full, []figure.Series{
					{Name: "realized" + mean, X: t.TimeS, Y: t.RealizedClockMHz, Window: window, Band: "realized" + band},
					{Name: "requested" + mean, X: t.TimeS, Y: t.RequestedClockMHz, Window: window, Dashed: true},
				}), nil),
				figure.TimeSeries("board power", "W", []figure.Series{
					{Name: "power" + mean, X: t.TimeS, Y: t.PowerW, Window: window, Band: "power" + band},
				}, &figure.Line{Name: "power limit", Value: r.Plant.PowerLimitW}),
				figure.TimeSeries("GPU temperature", "°C", []figure.Series{{Name: "temperature", X: t.TimeS, Y: t.TemperatureC}},
					&figure.Line{Name: "thermal limit", Value: r.Plant.ThermalLimitC}),
			}},
			{Weight: 1, Panels: latencyPanels(full.Requests, prof.TTFTSLOSeconds(), prof.TPOTSLOSeconds())},
		},
	}
}

// plannedUnder puts a planning controller's plans under the clock series:
// the first period of each plan, at the clock it planned for it.
func plannedUnder(r *Result, clocks []figure.Series) []figure.Series {
	if r.PlanDtS == nil {
		return clocks
	}
	var x, y []float64
	for i, plan := range r.PlannedClockMHz {
		if start := r.PlannedClockStartTimeS[i]; len(plan) > 0 && start != nil {
			x = append(x, *start, *start+*r.PlanDtS)
			y = append(y, plan[0], plan[0])
		}
	}
	return append([]figure.Series{{Name: "planned (first period of each plan)", X: x, Y: y}}, clocks...)
}

// figureTitle names what the run simulated: scheduler, controller, the
// load flags that were given, profile and trace, on two lines.
func (r *Report) figureTitle(full *Result, normalize, maxElapsedS float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulate: %s, %s", full.SchedulerName, full.ControllerName)
	if normalize != 0 {
		fmt.Fprintf(&b, ", --normalize %s", strconv.FormatFloat(normalize, 'g', -1, 64))
		if r.Dilation != nil {
			fmt.Fprintf(&b, " (arrival times x%s)", strconv.FormatFloat(*r.Dilation, 'g', 3, 64))
		}
	}
	if !math.IsInf(maxElapsedS, 1) {
		fmt.Fprintf(&b, ", --max-elapsed %s s", strconv.FormatFloat(maxElapsedS, 'g', -1, 64))
	}
	fmt.Fprintf(&b, "\nprofile %s, trace %s", full.ProfileStatus, filepath.Base(r.Provenance.TracePath))
	return b.String()
}

// latencyPanels draws the TTFT and TPOT distributions of the completed
// requests against their SLOs, each in ms when all its values are below a
// second and in s otherwise.
func latencyPanels(records RequestRecords, ttftSLOSeconds, tpotSLOSeconds float64) []*figure.Panel {
	ttft, tpot := records.CompletedLatencies()
	const empty = "no request completed"
	panel := func(title, name string, seconds []float64, sloS float64) *figure.Panel {
		unit := figure.DurationUnit(seconds, []float64{sloS})
		return figure.CDF(title, name+" ("+unit.Name+")", unit.Of(seconds),
			&figure.Line{Name: "SLO", Value: sloS * unit.PerSecond}, empty)
	}
	return []*figure.Panel{
		panel("time to first token", "TTFT", ttft, ttftSLOSeconds),
		panel("time per output token", "TPOT", tpot, tpotSLOSeconds),
	}
}

// CompletedLatencies returns the TTFT and TPOT of every completed request,
// in seconds, as the metrics define them.
func (records RequestRecords) CompletedLatencies() (ttft, tpot []float64) {
	for i := range records {
		if rec := &records[i]; rec.Completed() {
			ttft = append(ttft, rec.TTFTS())
			tpot = append(tpot, rec.TPOTS())
		}
	}
	return ttft, tpot
}

// Table renders a run's metrics for terminals (simulate --format table):
// one metric per row with its unit, and the limit or objective it is held
// against; then the slo block.
func (r *Report) Table() string {
	m, slo := r.Metrics, r.SLO
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s; profile %s: %s; trace %s: %d requests\n\n",
		r.SchedulerName, r.ControllerName, r.ProfileStatus, r.Provenance.ProfilePath,
		r.Provenance.TracePath, r.Provenance.RequestsLoaded)
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "metric", Text: true}, {Header: "value"}, {Header: "limit or SLO", Text: true},
	}}
	pct := func(x float64) string { return texttable.Fixed(100*x, 2) }
	t.AddRow("completed (%)", pct(m.CompletedFraction), "")
	t.AddRow("mean TTFT (s)", texttable.Fixed(m.MeanTTFTS, 4), "")
	t.AddRow("p95 TTFT (s)", texttable.Fixed(m.P95TTFTS, 4), "SLO "+texttable.Fixed(slo.TTFTSLOSeconds, 4))
	t.AddRow("TTFT SLO violations (%)", pct(m.TTFTViolationRate), "")
	t.AddRow("mean TPOT (ms)", texttable.Fixed(1000*m.MeanTPOTS, 3), "")
	t.AddRow("p95 TPOT (ms)", texttable.Fixed(1000*m.P95TPOTS, 3), "SLO "+texttable.Fixed(1000*slo.TPOTSLOSeconds, 3))
	t.AddRow("TPOT SLO violations (%)", pct(m.TPOTViolationRate), "")
	t.AddRow("mean latency (s)", texttable.Fixed(m.MeanLatencyS, 4), "")
	t.AddRow("output throughput (tok/s)", texttable.Fixed(m.OutputThroughputTokensPerS, 2), "")
	t.AddRow("energy (kJ)", texttable.Fixed(m.EnergyJ/1000, 3), "")
	t.AddRow("energy per output token (J)", texttable.Fixed(m.EnergyPerOutputTokenJ, 4), "")
	t.AddRow("peak power (W)", texttable.Fixed(m.PeakPowerW, 2), "limit "+texttable.Fixed(r.Plant.PowerLimitW, 2))
	t.AddRow("peak temperature (°C)", texttable.Fixed(m.PeakTemperatureC, 2), "limit "+texttable.Fixed(r.Plant.ThermalLimitC, 2))
	t.AddRow("peak KV (tokens)", texttable.Fixed(m.PeakKVTokens, 0), "capacity "+texttable.Fixed(r.Plant.KVCapacityTokens, 0))
	t.AddRow("decode stall (%)", pct(m.DecodeStallFraction), "")
	t.AddRow("peak queued (requests)", texttable.Fixed(m.PeakQueuedRequests, 0), "")
	t.AddRow("peak queued at min clock", texttable.Fixed(m.PeakQueuedRequestsAtMinimumClock, 0), "")
	t.AddRow("unfinished at horizon", texttable.Fixed(m.UnfinishedRequestsAtReportingHorizon, 0),
		"horizon "+strconv.FormatFloat(m.ReportingHorizonS, 'g', -1, 64)+" s")
	t.AddRow("unfinished at end", texttable.Fixed(m.UnfinishedRequestsAtEnd, 0), "")
	b.WriteString(t.String())
	b.WriteByte('\n')
	writeSLOTable(&b, slo, r.Provenance.RequestsLoaded)
	r.Engine.WriteLines(&b)
	return b.String()
}

// writeSLOTable renders the slo block: attainment and goodput, then the
// latency percentiles against their objectives.
func writeSLOTable(b *strings.Builder, slo SLOReport, requests int) {
	fmt.Fprintf(b, "SLO attainment %s%% (%d of %d requests meet every SLO), goodput %s requests/s\n\n",
		texttable.Fixed(100*slo.Attainment, 2), slo.RequestsMeetingSLO, requests, texttable.Fixed(slo.GoodputRequestsPerS, 4))
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "latency", Text: true}, {Header: "p50"}, {Header: "p90"}, {Header: "p99"}, {Header: "SLO"},
	}}
	row := func(name string, p Percentiles, scale float64, decimals int, objective float64) {
		t.AddRow(name, texttable.Fixed(scale*p.P50, decimals), texttable.Fixed(scale*p.P90, decimals),
			texttable.Fixed(scale*p.P99, decimals), texttable.Fixed(scale*objective, decimals))
	}
	row("TTFT (s)", slo.TTFTS, 1, 4, slo.TTFTSLOSeconds)
	row("TPOT (ms)", slo.TPOTS, 1000, 3, slo.TPOTSLOSeconds)
	e2e := math.NaN()
	if slo.E2ESLOSeconds != nil {
		e2e = *slo.E2ESLOSeconds
	}
	row("end-to-end (s)", slo.E2ES, 1, 4, e2e)
	b.WriteString(t.String())
}

// SummaryColumns lists the JSON names of Summary's fields in order,
// flattening the embedded metrics: the columns of a summary in CSV.
func SummaryColumns() []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	walk(reflect.TypeFor[Summary]())
	return names
}

// CSVValues formats the summary's fields in SummaryColumns order; an
// undefined number is an empty cell.
func (s *Summary) CSVValues() []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Anonymous {
				walk(f)
				continue
			}
			switch f.Kind() {
			case reflect.Float64:
				x := f.Float()
				if math.IsNaN(x) || math.IsInf(x, 0) {
					out = append(out, "")
				} else {
					out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
				}
			default:
				out = append(out, fmt.Sprint(f.Interface()))
			}
		}
	}
	walk(reflect.ValueOf(s).Elem())
	return out
}
