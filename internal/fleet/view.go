package fleet

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/plant"
	"servesim/internal/texttable"
)

// maxReplicaLines is the most replicas whose queues the fleet figure draws
// one by one; a larger fleet is drawn as the most loaded, mean and least
// loaded replica at each step.
const maxReplicaLines = 8

// Figure draws a fleet run (simulate --plot with a fleet): the replicas'
// queues and GPU clocks (with the plans of planning controllers), the
// fleet's queue and power over simulated time, the TTFT and TPOT
// distributions of every request (and the end-to-end latency's, given an
// objective for it) against the objectives the replicas were judged by,
// and the requests routed to each replica. The report's replicas must hold
// every step; normalize and maxElapsedS are the run's --normalize (0: not
// given) and --max-elapsed (plant.NoElapsedLimit: not given), which the
// title names.
func (r *Report) Figure(normalize, maxElapsedS float64) figure.Figure {
	res := r.Result
	times := stepEndTimes(res.Steps, r.Plant.TimeStepS)
	ints := func(v []int) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	routed := make([]float64, len(r.Replicas))
	labels := make([]string, len(r.Replicas))
	roles := r.Disaggregation.roles(len(r.Replicas))
	for k, rep := range r.Replicas {
		routed[k] = float64(rep.RequestsRouted)
		labels[k] = strconv.Itoa(k) + roleLetter[roles[k]]
	}
	n := len(r.Replicas)
	size := fmt.Sprintf("%d replicas", n)
	if a := r.Autoscale; a != nil {
		// An elastic fleet's replicas are every one it ever started.
		size = fmt.Sprintf("%s, up to %d ready (%d started)", a.Policy, a.PeakReady, a.ReplicasStarted)
	}
	routedTitle := "requests routed"
	if d := r.Disaggregation; d != nil {
		size += fmt.Sprintf(", disaggregated: %d prefill (P) + %d decode (D)", len(d.Pools[0].Replicas), len(d.Pools[1].Replicas))
		routedTitle = "requests prefilled (P) and decoded (D)"
	}
	return figure.Figure{
		Title: fmt.Sprintf("fleet: %s, router %s, %s, %s%s%s\ntrace %s",
			size, res.Router, r.Summary.Scheduler, r.Summary.Controller, r.Service.Label(),
			plant.LoadFlags(normalize, r.Dilation, maxElapsedS), filepath.Base(r.Provenance.TracePath)),
		Width:  15 * vg.Inch,
		Height: 12 * vg.Inch,
		Columns: []figure.Column{
			{Weight: 2, Panels: []*figure.Panel{
				figure.TimeSeries("queued and decoding requests per replica", "requests", replicaQueues(r, times), nil),
				figure.TimeSeries(replicaClocks(r)),
				figure.TimeSeries("fleet: queued and decoding requests", "requests",
					[]figure.Series{{Name: "all replicas", X: times, Y: ints(res.Queued)}}, nil),
				r.powerPanel(times, n),
			}},
			{Weight: 1, Panels: append(append(r.scalePanels(),
				plant.LatencyPanels(res.Requests, sharedSLO(res), ", every request")...),
				figure.Bars(routedTitle, "requests", labels, []figure.BarGroup{{Name: "per replica", Values: routed}}))},
		},
	}
}

// roleLetter marks a replica of a disaggregated fleet's pool in the
// figure's labels.
var roleLetter = map[string]string{RolePrefill: " P", RoleDecode: " D"}

// roles returns each of n replicas' pool (prefill or decode), "" for every
// replica of a fleet that is not disaggregated (r nil).
func (r *DisaggResult) roles(n int) []string {
	out := make([]string, n)
	if r == nil {
		return out
	}
	for _, pool := range r.Pools {
		for _, k := range pool.Replicas {
			out[k] = pool.Role
		}
	}
	return out
}

// replicaName names replica k in a figure's legend: with its pool in a
// disaggregated fleet.
func replicaName(k int, role string) string {
	if role == "" {
		return fmt.Sprintf("replica %d", k)
	}
	return fmt.Sprintf("replica %d (%s)", k, role)
}

// replicaClocks draws each replica's GPU clock: a planning controller's
// plan and the realized clock on the same busy steps as mean levels
// (plant.Result.PlanLevels), another's realized clock as a rolling mean;
// for a fleet of more than maxReplicaLines, the highest, mean and lowest
// realized clock of the replicas that ran each step, without plans. It
// returns figure.TimeSeries's arguments.
func replicaClocks(r *Report) (title, yLabel string, series []figure.Series, limit *figure.Line) {
	replicas := r.Result.Replicas
	dt := r.Plant.TimeStepS
	span := float64(r.Result.Steps) * dt
	window, width := figure.SmoothingWindow(span, dt, plant.LeastSmoothingS)
	mean := ": " + strconv.FormatFloat(width, 'g', -1, 64) + " s mean"
	if len(replicas) > maxReplicaLines {
		title = "GPU clock of the replicas"
		for _, rep := range replicas {
			if rep.Result.PlanDtS != nil {
				title += " (plans not drawn for more than " + strconv.Itoa(maxReplicaLines) + " replicas)"
				break
			}
		}
		return title, "MHz", clockSpread(r, window, mean), nil
	}
	planned := false
	roles := r.Disaggregation.roles(len(replicas))
	for k, rep := range replicas {
		t, color := &rep.Result.Trajectory, figure.Palette[k%len(figure.Palette)]
		name := replicaName(k, roles[k])
		if rep.Result.PlanDtS == nil {
			series = append(series, figure.Series{Name: name + mean, X: t.TimeS, Y: t.RealizedClockMHz, Window: window, Color: color})
			continue
		}
		planned = true
		levels := rep.Result.PlanLevels(dt)
		binS := strconv.FormatFloat(levels.WidthS, 'g', 6, 64) + " s"
		series = append(series,
			figure.Series{Name: name + ": plan, " + binS + " mean over busy steps", X: levels.EdgesS, Y: levels.PlanMHz,
				Steps: true, Width: 4, Color: figure.Translucent(color)},
			figure.Series{Name: name + ": realized, same steps", X: levels.EdgesS, Y: levels.RealizedMHz,
				Steps: true, Color: color})
	}
	title = "GPU clock per replica"
	if planned {
		title += ": plan (first period of each plan, wide) and realized on busy steps; gaps: no plan held"
	}
	return title, "MHz", series, nil
}

// clockSpread is the highest, mean and lowest realized clock of the
// replicas that ran each step, as rolling means over window steps named
// with the mean suffix.
func clockSpread(r *Report, window int, mean string) []figure.Series {
	times := stepEndTimes(r.Result.Steps, r.Plant.TimeStepS)
	hi, avg, lo := make([]float64, len(times)), make([]float64, len(times)), make([]float64, len(times))
	for t := range times {
		hi[t], lo[t] = math.Inf(-1), math.Inf(1)
		ran := 0
		for _, rep := range r.Result.Replicas {
			tr := &rep.Result.Trajectory
			if clocks, i := tr.RealizedClockMHz, t-firstStep(tr); i >= 0 && i < len(clocks) {
				hi[t], lo[t] = max(hi[t], clocks[i]), min(lo[t], clocks[i])
				avg[t] += clocks[i]
				ran++
			}
		}
		avg[t] /= float64(ran) // no replica ran: NaN, not drawn
	}
	return []figure.Series{
		{Name: "highest replica" + mean, X: times, Y: hi, Window: window},
		{Name: "mean per replica" + mean, X: times, Y: avg, Window: window},
		{Name: "lowest replica" + mean, X: times, Y: lo, Window: window},
	}
}

// stepEndTimes are the ends of steps 0..n-1, accumulated as the plant does.
func stepEndTimes(n int, dt float64) []float64 {
	times := make([]float64, n)
	t := 0.0
	for k := range times {
		t += dt
		times[k] = t
	}
	return times
}

// replicaQueues is each replica's queued plus decoding requests per step,
// or for a fleet of more than maxReplicaLines the most loaded, mean and
// least loaded replica at each step (a stopped replica counts 0).
func replicaQueues(r *Report, times []float64) []figure.Series {
	queue := func(rep *ReplicaReport, t int) float64 {
		// An elastic fleet's replica starts at a later step.
		if t -= firstStep(&rep.Trajectory); t < 0 || t >= len(rep.PrefillQueue) {
			return 0
		}
		return float64(rep.PrefillQueue[t] + rep.DecodeActive[t])
	}
	if len(r.Replicas) <= maxReplicaLines {
		var series []figure.Series
		roles := r.Disaggregation.roles(len(r.Replicas))
		for k := range r.Replicas {
			rep := &r.Replicas[k]
			first := firstStep(&rep.Trajectory)
			y := make([]float64, min(rep.Len(), max(0, len(times)-first)))
			for t := range y {
				y[t] = queue(rep, first+t)
			}
			series = append(series, figure.Series{Name: replicaName(k, roles[k]), X: times[first : first+len(y)], Y: y})
		}
		return series
	}
	most := make([]float64, len(times))
	mean := make([]float64, len(times))
	least := make([]float64, len(times))
	for t := range times {
		least[t] = math.Inf(1)
		for k := range r.Replicas {
			q := queue(&r.Replicas[k], t)
			most[t] = math.Max(most[t], q)
			least[t] = math.Min(least[t], q)
			mean[t] += q
		}
		mean[t] /= float64(len(r.Replicas))
	}
	return []figure.Series{
		{Name: "most loaded replica", X: times, Y: most},
		{Name: "mean per replica", X: times, Y: mean},
		{Name: "least loaded replica", X: times, Y: least},
	}
}

// powerPanel draws the fleet's power: the sum over the replicas running
// each step, against n times the power limit; an elastic fleet's also what
// every replica up drew (idle and loading ones too), against its peak
// ready replicas times the limit.
func (r *Report) powerPanel(times []float64, n int) *figure.Panel {
	series := []figure.Series{{Name: "sum over replicas", X: times, Y: r.Result.PowerW}}
	if a := r.Autoscale; a != nil && a.Trajectory != nil {
		n = a.PeakReady
		series = append(series, figure.Series{Name: "billed: every replica up, idle and loading ones too", X: a.Trajectory.TimeS, Y: a.Trajectory.PowerW})
	}
	return figure.TimeSeries("fleet power", "W", series,
		&figure.Line{Name: fmt.Sprintf("%d x power limit", n), Value: float64(n) * r.Plant.PowerLimitW})
}

// firstStep is the fleet step of a replica's first sample: 0, unless an
// elastic fleet started it late.
func firstStep(t *plant.Trajectory) int {
	if len(t.StepIndex) == 0 {
		return 0
	}
	return t.StepIndex[0]
}

// scalePanels are an elastic fleet's replicas and load over time (none for
// a fixed fleet): the count asked for, the replicas starting
// (provisioning or loading) and ready; the arrival rate per scale
// interval and the requests waiting at the router.
func (r *Report) scalePanels() []*figure.Panel {
	a := r.Autoscale
	if a == nil || a.Trajectory == nil {
		return nil
	}
	s := a.Trajectory
	ints := func(v ...[]int) []float64 {
		out := make([]float64, len(s.TimeS))
		for i := range out {
			for _, w := range v {
				out[i] += float64(w[i])
			}
		}
		return out
	}
	edges := make([]float64, 0, len(a.Windows)+1)
	rate := make([]float64, 0, len(a.Windows)+1)
	for _, w := range a.Windows {
		edges = append(edges, w.StartS)
		rate = append(rate, float64(w.Arrivals)/a.ScaleIntervalS)
	}
	if n := len(edges); n > 0 {
		edges = append(edges, edges[n-1]+a.ScaleIntervalS)
		rate = append(rate, rate[n-1])
	}
	replicas := []figure.Series{
		{Name: "requested", X: s.TimeS, Y: ints(s.Requested), Steps: true, Dashed: true},
		{Name: "starting (provisioning or loading)", X: s.TimeS, Y: ints(s.Provisioning, s.Loading), Steps: true},
		{Name: "ready", X: s.TimeS, Y: ints(s.Ready), Steps: true},
		{Name: "draining", X: s.TimeS, Y: ints(s.Draining), Steps: true},
	}
	for g, ready := range s.GroupReady {
		// Each group's (pool's) ready replicas, dotted under the total.
		name := "ready: " + a.Groups[g].Name
		if role := a.Groups[g].Role; role != "" {
			name += " (" + role + ")"
		}
		replicas = append(replicas, figure.Series{Name: name, X: s.TimeS, Y: ints(ready), Steps: true, Dashed: true})
	}
	return []*figure.Panel{
		figure.TimeSeries(fmt.Sprintf("replicas: autoscale %s", a.Policy), "replicas", replicas, nil),
		figure.TimeSeries("load", "requests/s, requests", []figure.Series{
			{Name: fmt.Sprintf("arrivals per s, per %s s", texttable.Sig(a.ScaleIntervalS, 4)), X: edges, Y: rate, Steps: true},
			{Name: "waiting at the router", X: s.TimeS, Y: ints(s.RouterWaiting)},
		}, nil),
	}
}

// sharedSLO returns the objectives every replica was judged by (its slo
// block's), or nil when they differ (groups of different profiles without
// the SLO flags).
func sharedSLO(res *Result) *plant.SLO {
	if len(res.Replicas) == 0 {
		return nil
	}
	slo := res.Replicas[0].Result.SLO.Objectives()
	for _, rep := range res.Replicas[1:] {
		if rep.Result.SLO.Objectives() != slo {
			return nil
		}
	}
	return &slo
}

// Table renders a fleet run for terminals (simulate --format table with a
// fleet): a line for the fleet, then one per replica.
func (r *Report) Table() string {
	var b strings.Builder
	size := fmt.Sprintf("fleet of %d replicas", r.Fleet.Replicas)
	if a := r.Autoscale; a != nil {
		// Every replica ever started has a row: say how many were up.
		size = fmt.Sprintf("elastic fleet (%s): %d replicas started, at most %d ready at once", a.Policy, a.ReplicasStarted, a.PeakReady)
	}
	fmt.Fprintf(&b, "%s, router %s; %s, %s%s; trace %s: %d requests\n",
		size, r.Fleet.Router, r.Summary.Scheduler, r.Summary.Controller, r.Service.Label(),
		r.Provenance.TracePath, r.Provenance.RequestsLoaded)
	if line := r.Service.Line(); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "replica", Text: true}, {Header: "group", Text: true}, {Header: "requests"},
		{Header: "completed %"}, {Header: "p95 TTFT s"}, {Header: "TTFT viol %"},
		{Header: "p95 TPOT ms"}, {Header: "TPOT viol %"}, {Header: "SLO met %"}, {Header: "energy kJ"}, {Header: "J/token"},
		{Header: "peak W"}, {Header: "peak °C"}, {Header: "peak queued"},
	}}
	pct := func(x float64) string { return texttable.Fixed(100*x, 2) }
	row := func(name, group string, requests int, m *plant.Metrics, slo *plant.SLOReport) {
		t.AddRow(name, group, strconv.Itoa(requests), pct(m.CompletedFraction),
			texttable.Fixed(m.P95TTFTS, 3), pct(m.TTFTViolationRate),
			texttable.Fixed(1000*m.P95TPOTS, 2), pct(m.TPOTViolationRate), pct(slo.Attainment),
			texttable.Fixed(m.EnergyJ/1000, 2), texttable.Fixed(m.EnergyPerOutputTokenJ, 4),
			texttable.Fixed(m.PeakPowerW, 1), texttable.Fixed(m.PeakTemperatureC, 1),
			texttable.Fixed(m.PeakQueuedRequests, 0))
	}
	routed := 0 // a streamed run keeps no request records: count what the router sent
	for _, rep := range r.Replicas {
		routed += rep.RequestsRouted
	}
	if d := r.Disaggregation; d != nil {
		routed = d.Pools[0].Requests // each request passes both pools
	}
	row("fleet", "", routed, &r.Metrics, &r.SLO)
	if d := r.Disaggregation; d != nil {
		for _, p := range d.Pools {
			row(p.Role, strings.Join(p.Groups, "+"), p.Requests, &p.Metrics, &p.SLO)
		}
	}
	for _, rep := range r.Replicas {
		row(strconv.Itoa(rep.Replica), rep.Group, rep.RequestsRouted, &rep.Metrics, &rep.SLO)
	}
	b.WriteString(t.String())
	b.WriteString("\nfleet: ")
	r.SLO.WriteTable(&b, r.Provenance.RequestsLoaded)
	r.Engine.WriteLines(&b)
	r.Disaggregation.writeLine(&b)
	if r.Autoscale != nil {
		r.Autoscale.writeTable(&b)
	}
	return b.String()
}
