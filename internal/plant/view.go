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
	"servesim/internal/profile"
	"servesim/internal/texttable"
)

// LeastSmoothingS is the shortest rolling window of the queue, KV, clock and
// power panels, in simulated seconds: those series change every step, so
// each is drawn as its rolling mean over the min-max band of the same window.
const LeastSmoothingS = 10

// Figure draws a run (simulate --plot): five aligned panels over simulated
// time (queues, KV cache, clocks with a planner's plans, power,
// temperature, each against its limit) and the TTFT and TPOT distributions
// (and the end-to-end latency's, given an objective for it) against the
// objectives of the run's slo block. full must hold every step and every
// request record; normalize and maxElapsedS are the run's --normalize (0:
// not given) and --max-elapsed (NoElapsedLimit: not given), which the
// title names.
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
	window, width := figure.SmoothingWindow(span, r.Plant.TimeStepS, LeastSmoothingS)
	mean := fmt.Sprintf(": %s s mean", strconv.FormatFloat(width, 'g', -1, 64))
	band := fmt.Sprintf(": %s s min-max", strconv.FormatFloat(width, 'g', -1, 64))
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
				clockPanel(full, r.Plant.TimeStepS, window, mean, band),
				figure.TimeSeries("board power", "W", []figure.Series{
					{Name: "power" + mean, X: t.TimeS, Y: t.PowerW, Window: window, Band: "power" + band},
				}, &figure.Line{Name: "power limit", Value: r.Plant.PowerLimitW}),
				figure.TimeSeries("GPU temperature", "°C", []figure.Series{{Name: "temperature", X: t.TimeS, Y: t.TemperatureC}},
					&figure.Line{Name: "thermal limit", Value: r.Plant.ThermalLimitC}),
			}},
			{Weight: 1, Panels: LatencyPanels(full.Requests, new(full.SLO.Objectives()), "")},
		},
	}
}

// clockPanel draws the realized and requested clocks as rolling means
// over window steps (named with the mean and band suffixes) over the
// realized clock's min-max band; for a planning controller, see
// plannedClockPanel.
func clockPanel(full *Result, stepS float64, window int, mean, band string) *figure.Panel {
	t := full.Trajectory
	if full.PlanDtS != nil {
		return plannedClockPanel(full, stepS)
	}
	return figure.TimeSeries("GPU clock", "MHz", []figure.Series{
		{Name: "realized" + mean, X: t.TimeS, Y: t.RealizedClockMHz, Window: window, Band: "realized" + band},
		{Name: "requested" + mean, X: t.TimeS, Y: t.RequestedClockMHz, Window: window, Dashed: true},
	}, nil)
}

// plannedClockPanel draws a planning controller's plans under the
// realized clock, both as mean levels over the same bins of time and the
// same steps (PlanLevels): the busy steps (not idle) within the first period
// of a plan, planned_clock_start_time_s to + plan_dt_s. A controller that
// runs the lowest level while idle then compares like for like with its
// plan, and a bin without such a step is a gap in both. Behind them, the
// realized clock's min-max band over every step shows the idle time.
func plannedClockPanel(full *Result, stepS float64) *figure.Panel {
	t := full.Trajectory
	bins := full.PlanLevels(stepS)
	width := strconv.FormatFloat(bins.WidthS, 'g', 6, 64) + " s"
	samples := max(1, int(math.Round(bins.WidthS/stepS)))
	return figure.TimeSeries("GPU clock: plan (first period of each plan) and realized on busy steps; gaps: no plan held",
		"MHz", []figure.Series{
			{Name: "plan: " + width + " mean over busy steps", X: bins.EdgesS, Y: bins.PlanMHz, Steps: true, Width: 3},
			{Band: "realized, every step: " + width + " min-max", X: t.TimeS, Y: t.RealizedClockMHz, Window: samples, BandOnly: true},
			{Name: "realized: " + width + " mean over the same steps", X: bins.EdgesS, Y: bins.RealizedMHz, Steps: true},
		}, nil)
}

// PlanLevels are a planning controller's plans and the realized clock as
// mean levels over bins of time WidthS wide: PlanMHz[k] and RealizedMHz[k]
// hold from EdgesS[k] to EdgesS[k+1], NaN where no busy step ran under a
// plan (figure.Series with Steps draws them).
type PlanLevels struct {
	WidthS               float64   // bin width, s
	EdgesS               []float64 // bin edges, s: one more than bins
	PlanMHz, RealizedMHz []float64 // mean planned and realized clock per bin, MHz
}

// planPeriod is the first period of a plan: mhz from startS to endS.
type planPeriod struct{ startS, endS, mhz float64 }

// planPeriods returns the first period of each plan of r, in time order;
// a plan made within the period of an earlier one cuts that one short.
func planPeriods(r *Result) []planPeriod {
	var out []planPeriod
	for i, plan := range r.PlannedClockMHz {
		start := r.PlannedClockStartTimeS[i]
		if start == nil || len(plan) == 0 {
			continue
		}
		p := planPeriod{startS: *start, endS: *start + *r.PlanDtS, mhz: plan[0]}
		for len(out) > 0 && out[len(out)-1].startS >= p.startS {
			out = out[:len(out)-1]
		}
		if n := len(out); n > 0 && out[n-1].endS > p.startS {
			out[n-1].endS = p.startS
		}
		out = append(out, p)
	}
	return out
}

// PlanLevels averages, over bins of time, the planned and the realized
// clock of the busy steps of r (each stepS long, ending at TimeS) that ran within
// the first period of a plan: a step counts in the bin and period holding
// its midpoint. The bins are whole plan periods wide from time 0: one
// period, or about as many as figure.LevelWidth asks for a longer run, so
// that a whole run reads as levels, not a comb. r must hold every step
// and a planner's plans (PlanDtS not nil).
func (r *Result) PlanLevels(stepS float64) PlanLevels {
	t := r.Trajectory
	periods := planPeriods(r)
	dt := *r.PlanDtS
	endS := 0.0
	if n := len(t.TimeS); n > 0 {
		endS = t.TimeS[n-1]
	}
	if n := len(periods); n > 0 {
		endS = max(endS, periods[n-1].endS)
	}
	b := PlanLevels{WidthS: dt * max(1, math.Round(figure.LevelWidth(endS, dt)/dt))}
	n := int(math.Ceil(endS / b.WidthS))
	b.EdgesS = make([]float64, n+1)
	for k := range b.EdgesS {
		b.EdgesS[k] = min(float64(k)*b.WidthS, endS)
	}
	steps := make([]float64, n)
	b.PlanMHz, b.RealizedMHz = make([]float64, n), make([]float64, n)
	next := 0 // the first period that may hold a step's midpoint
	for i, end := range t.TimeS {
		mid := end - stepS/2
		for next < len(periods) && periods[next].endS <= mid {
			next++
		}
		if t.Phase[i] == profile.PhaseIdle || next == len(periods) || periods[next].startS > mid {
			continue
		}
		k := min(n-1, int(mid/b.WidthS))
		steps[k]++
		b.PlanMHz[k] += periods[next].mhz
		b.RealizedMHz[k] += t.RealizedClockMHz[i]
	}
	for k := range n {
		b.PlanMHz[k] /= steps[k] // 0/0: NaN, a gap
		b.RealizedMHz[k] /= steps[k]
	}
	return b
}

// figureTitle names what the run simulated: scheduler, controller, the
// load flags that were given, profile and trace, on two lines.
func (r *Report) figureTitle(full *Result, normalize, maxElapsedS float64) string {
	return fmt.Sprintf("simulate: %s, %s%s%s\nprofile %s, trace %s", full.SchedulerName, full.ControllerName, full.Service.Label(),
		LoadFlags(normalize, r.Dilation, maxElapsedS), full.ProfileStatus, filepath.Base(r.Provenance.TracePath))
}

// LoadFlags names the load flags a run was given, as figure titles show
// them: ", --normalize 0.8 (arrival times x3.37), --max-elapsed 900 s", or
// less. normalize is 0 and maxElapsedS NoElapsedLimit when not given;
// dilation is the run's arrival dilation, nil for none.
func LoadFlags(normalize float64, dilation *float64, maxElapsedS float64) string {
	var b strings.Builder
	if normalize != 0 {
		fmt.Fprintf(&b, ", --normalize %s", strconv.FormatFloat(normalize, 'g', -1, 64))
		if dilation != nil {
			fmt.Fprintf(&b, " (arrival times x%s)", strconv.FormatFloat(*dilation, 'g', 3, 64))
		}
	}
	if !math.IsInf(maxElapsedS, 1) {
		fmt.Fprintf(&b, ", --max-elapsed %s s", strconv.FormatFloat(maxElapsedS, 'g', -1, 64))
	}
	return b.String()
}

// LatencyPanels draws the TTFT and TPOT distributions of the completed
// requests of records against the objectives of slo, and the end-to-end
// latency's against its objective when slo has one; each in ms when all
// its values are below a second and in s otherwise. slo must be resolved
// (no zero TTFTSeconds or TPOTSeconds); nil draws no objective (a fleet
// whose replicas were judged by different ones). Each title ends with
// suffix.
func LatencyPanels(records RequestRecords, slo *SLO, suffix string) []*figure.Panel {
	var panels []*figure.Panel
	for _, l := range judgedLatencies(records, slo) {
		unit := figure.DurationUnit(l.seconds, []float64{l.sloS})
		var objective *figure.Line
		if slo != nil {
			v := l.sloS * unit.PerSecond
			objective = &figure.Line{Name: "SLO " + strconv.FormatFloat(v, 'g', 4, 64) + " " + unit.Name, Value: v}
		}
		panels = append(panels, figure.CDF(l.title+suffix, l.name+" ("+unit.Name+")", unit.Of(l.seconds),
			objective, "no request completed"))
	}
	return panels
}

// judgedLatency is one latency of the completed requests, s, and the
// objective it was judged by, s.
type judgedLatency struct {
	title, name string
	seconds     []float64
	sloS        float64
}

// judgedLatencies are the latencies a run was judged by, with their
// objectives from slo: TTFT, TPOT and, when slo has an objective for it,
// the end-to-end latency (nil slo: no objectives, no end-to-end latency).
func judgedLatencies(records RequestRecords, slo *SLO) []judgedLatency {
	ttft, tpot, e2e := records.CompletedLatencies()
	var objective SLO
	if slo != nil {
		objective = *slo
	}
	out := []judgedLatency{
		{"time to first token", "TTFT", ttft, objective.TTFTSeconds},
		{"time per output token", "TPOT", tpot, objective.TPOTSeconds},
	}
	if objective.E2ESeconds != 0 {
		out = append(out, judgedLatency{"end-to-end latency", "arrival to completion", e2e, objective.E2ESeconds})
	}
	return out
}

// Objectives returns the objectives the slo block records.
func (r *SLOReport) Objectives() SLO {
	slo := SLO{TTFTSeconds: r.TTFTSLOSeconds, TPOTSeconds: r.TPOTSLOSeconds}
	if r.E2ESLOSeconds != nil {
		slo.E2ESeconds = *r.E2ESLOSeconds
	}
	return slo
}

// CompletedLatencies returns the TTFT, TPOT and end-to-end latency of every
// completed request, in seconds, as the metrics define them.
func (records RequestRecords) CompletedLatencies() (ttft, tpot, e2e []float64) {
	for i := range records {
		if rec := &records[i]; rec.Completed() {
			ttft = append(ttft, rec.TTFTS())
			tpot = append(tpot, rec.TPOTS())
			e2e = append(e2e, rec.LatencyS())
		}
	}
	return ttft, tpot, e2e
}

// Table renders a run's metrics for terminals (simulate --format table):
// one metric per row with its unit, and the limit or objective it is held
// against, each rounded for people (fixed decimals per row, a setting to 4
// significant digits; the document keeps them exact); then the slo block.
func (r *Report) Table() string {
	m, slo := r.Metrics, r.SLO
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s%s; profile %s: %s; trace %s: %d requests\n",
		r.SchedulerName, r.ControllerName, r.Service.Label(), r.ProfileStatus, r.Provenance.ProfilePath,
		r.Provenance.TracePath, r.Provenance.RequestsLoaded)
	if line := r.Service.Line(); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
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
		"horizon "+texttable.Sig(m.ReportingHorizonS, 4)+" s")
	t.AddRow("unfinished at end", texttable.Fixed(m.UnfinishedRequestsAtEnd, 0), "")
	b.WriteString(t.String())
	b.WriteByte('\n')
	slo.WriteTable(&b, r.Provenance.RequestsLoaded)
	if d := r.MPCDiagnostics; d != nil {
		fmt.Fprintf(&b, "\nmpc: %d solves applied, %d fell back to race-to-idle (period %s s, horizon %d periods)\n",
			d.SuccessfulSolves, d.FallbackCount, texttable.Sig(d.ControlPeriodS, 4), d.HorizonSteps)
	}
	r.Engine.WriteLines(&b)
	return b.String()
}

// WriteTable renders the slo block: attainment and goodput, then the
// latency percentiles against their objectives.
func (slo SLOReport) WriteTable(b *strings.Builder, requests int) {
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
