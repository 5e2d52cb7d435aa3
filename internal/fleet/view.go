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
// queues, the fleet's queue and power over simulated time, the TTFT and
// TPOT distributions of every request against the SLOs, and the requests
// routed to each replica. The report's replicas must hold every step.
func (r *Report) Figure() figure.Figure {
	res := r.Result
	times := stepEndTimes(res.Steps, r.Plant.TimeStepS)
	ints := func(v []int) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	var records plant.RequestRecords = res.Requests
	ttft, tpot, _ := records.CompletedLatencies()
	ttftSLO, tpotSLO := sharedSLOs(r)
	empty := "no request completed"
	routed := make([]float64, len(r.Replicas))
	labels := make([]string, len(r.Replicas))
	for k, rep := range r.Replicas {
		routed[k] = float64(rep.RequestsRouted)
		labels[k] = strconv.Itoa(k)
	}
	n := len(r.Replicas)
	return figure.Figure{
		Title: fmt.Sprintf("fleet: %d replicas, router %s, %s, %s, trace %s",
			n, res.Router, r.Summary.Scheduler, r.Summary.Controller, filepath.Base(r.Provenance.TracePath)),
		Width:  15 * vg.Inch,
		Height: 11 * vg.Inch,
		Columns: []figure.Column{
			{Weight: 2, Panels: []*figure.Panel{
				figure.TimeSeries("queued and decoding requests per replica", "requests", replicaQueues(r, times), nil),
				figure.TimeSeries("fleet: queued and decoding requests", "requests",
					[]figure.Series{{Name: "all replicas", X: times, Y: ints(res.Queued)}}, nil),
				figure.TimeSeries("fleet power", "W", []figure.Series{{Name: "sum over replicas", X: times, Y: res.PowerW}},
					&figure.Line{Name: fmt.Sprintf("%d x power limit", n), Value: float64(n) * r.Plant.PowerLimitW}),
			}},
			{Weight: 1, Panels: []*figure.Panel{
				figure.CDF("time to first token, every request", "TTFT (s)", ttft, ttftSLO, empty),
				figure.CDF("time per output token, every request", "TPOT (s)", tpot, tpotSLO, empty),
				figure.Bars("requests routed", "requests", labels, []figure.BarGroup{{Name: "per replica", Values: routed}}),
			}},
		},
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
		if t >= len(rep.PrefillQueue) {
			return 0
		}
		return float64(rep.PrefillQueue[t] + rep.DecodeActive[t])
	}
	if len(r.Replicas) <= maxReplicaLines {
		var series []figure.Series
		for k := range r.Replicas {
			rep := &r.Replicas[k]
			y := make([]float64, rep.Len())
			for t := range y {
				y[t] = queue(rep, t)
			}
			series = append(series, figure.Series{Name: fmt.Sprintf("replica %d", k), X: times[:len(y)], Y: y})
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

// sharedSLOs returns the TTFT and TPOT objective lines when every group's
// profile has the same ones (nil otherwise).
func sharedSLOs(r *Report) (ttft, tpot *figure.Line) {
	groups := r.Result.Groups
	for _, g := range groups[1:] {
		if g.Profile.TTFTSLOSeconds() != groups[0].Profile.TTFTSLOSeconds() || g.Profile.TPOTSLOSeconds() != groups[0].Profile.TPOTSLOSeconds() {
			return nil, nil
		}
	}
	return &figure.Line{Name: "SLO", Value: groups[0].Profile.TTFTSLOSeconds()},
		&figure.Line{Name: "SLO", Value: groups[0].Profile.TPOTSLOSeconds()}
}

// Table renders a fleet run for terminals (simulate --format table with a
// fleet): a line for the fleet, then one per replica.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet of %d replicas, router %s; %s, %s; trace %s: %d requests\n\n",
		r.Fleet.Replicas, r.Fleet.Router, r.Summary.Scheduler, r.Summary.Controller,
		r.Provenance.TracePath, r.Provenance.RequestsLoaded)
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "replica", Text: true}, {Header: "group", Text: true}, {Header: "requests"},
		{Header: "completed %"}, {Header: "p95 TTFT s"}, {Header: "TTFT viol %"},
		{Header: "p95 TPOT ms"}, {Header: "TPOT viol %"}, {Header: "energy kJ"}, {Header: "J/token"},
		{Header: "peak W"}, {Header: "peak °C"}, {Header: "peak queued"},
	}}
	pct := func(x float64) string { return texttable.Fixed(100*x, 2) }
	row := func(name, group string, requests int, m *plant.Metrics) {
		t.AddRow(name, group, strconv.Itoa(requests), pct(m.CompletedFraction),
			texttable.Fixed(m.P95TTFTS, 3), pct(m.TTFTViolationRate),
			texttable.Fixed(1000*m.P95TPOTS, 2), pct(m.TPOTViolationRate),
			texttable.Fixed(m.EnergyJ/1000, 2), texttable.Fixed(m.EnergyPerOutputTokenJ, 4),
			texttable.Fixed(m.PeakPowerW, 1), texttable.Fixed(m.PeakTemperatureC, 1),
			texttable.Fixed(m.PeakQueuedRequests, 0))
	}
	row("fleet", "", len(r.Result.Requests), &r.Metrics)
	for _, rep := range r.Replicas {
		row(strconv.Itoa(rep.Replica), rep.Group, rep.RequestsRouted, &rep.Metrics)
	}
	b.WriteString(t.String())
	r.Engine.WriteLines(&b)
	return b.String()
}
