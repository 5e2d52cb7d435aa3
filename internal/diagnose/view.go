package diagnose

import (
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/texttable"
)

// Figure draws the p99 end-to-end latency of every window as a bar
// coloured by the hypothesis the rules chose, with the p50 line across, in
// ms or s by their range (diagnose --plot).
func Figure(title string, snapshots []Snapshot) figure.Figure {
	bars := make([]figure.ColoredBar, len(snapshots))
	p50, p99 := make([]float64, len(snapshots)), make([]float64, len(snapshots)) // seconds
	for i, s := range snapshots {
		p50[i], p99[i] = s.P50E2EMs/1000, s.P99E2EMs/1000
	}
	unit := figure.DurationUnit(p50, p99)
	for i, s := range snapshots {
		bars[i] = figure.ColoredBar{Label: barLabel(title, s.WindowName), Value: p99[i] * unit.PerSecond, Class: s.DiagnosticHypothesis}
	}
	return figure.Figure{
		Title:  "diagnose: " + title,
		Width:  12 * vg.Inch,
		Height: 6 * vg.Inch,
		Columns: []figure.Column{{Panels: []*figure.Panel{
			figure.ClassBars("p99 end-to-end latency per window, coloured by diagnosis", "latency ("+unit.Name+")", bars,
				&figure.Series{Name: "p50 latency", Y: unit.Of(p50)}),
		}}},
	}
}

// barLabel shortens a window's name under its bar: without the log's name,
// and a time window "[2023-11-16T18:17:00Z, ...)" as its start time only.
func barLabel(logName, window string) string {
	label := strings.TrimPrefix(window, logName+" ")
	if start, _, ok := strings.Cut(strings.TrimPrefix(label, "["), ","); ok && strings.HasPrefix(label, "[") {
		if _, clock, isTime := strings.Cut(start, "T"); isTime {
			return strings.TrimSuffix(clock, "Z")
		}
	}
	return label
}

// snapshotColumns are the table's columns, units in the headers.
var snapshotColumns = []texttable.Column{
	{Header: "window", Text: true}, {Header: "requests"}, {Header: "p50 e2e (ms)"}, {Header: "p99 e2e (ms)"},
	{Header: "p99/p50"}, {Header: "p99 TTFT (ms)"}, {Header: "p99 TPOT (ms)"}, {Header: "p99 queue (ms)"},
	{Header: "peak KV (%)"}, {Header: "preemptions"}, {Header: "prefix hit (%)"}, {Header: "cost/1k req ($)"},
	{Header: "diagnosis", Text: true},
}

// Table renders snapshots one row each, in the precision the seed rounds
// them to (diagnose --format table).
func Table(snapshots []Snapshot) string {
	t := texttable.Table{Columns: snapshotColumns}
	for _, s := range snapshots {
		t.AddRow(s.WindowName, strconv.Itoa(s.RequestCount), texttable.Fixed(s.P50E2EMs, 1), texttable.Fixed(s.P99E2EMs, 1),
			optionalFixed(s.P99ToP50Ratio, 2), texttable.Fixed(s.P99TTFTMs, 1), optionalFixed(s.P99TPOTMs, 2),
			texttable.Fixed(s.P99QueueWaitMs, 1), texttable.Fixed(s.PeakKVOccupancyPct, 1), strconv.Itoa(s.PreemptionCount),
			texttable.Fixed(s.PrefixCacheHitRatePct, 1), texttable.Fixed(s.ModeledCostPer1kRequestsUSD, 4), s.DiagnosticHypothesis)
	}
	return t.String()
}

// optionalFixed formats a value the seed may leave undefined ("-").
func optionalFixed(x *float64, decimals int) string {
	if x == nil {
		return "-"
	}
	return texttable.Fixed(*x, decimals)
}

// Table renders the demo report: both snapshots and the remediation.
func (r DemoReport) Table() string {
	var b strings.Builder
	b.WriteString(Table([]Snapshot{r.BeforeRemediation, r.AfterRemediation}))
	fmt.Fprintf(&b, "\np99 reduction: %sx; recompute tokens eliminated: %d\n",
		texttable.Fixed(r.P99ReductionX, 2), r.RecomputeTokensEliminated)
	return b.String()
}
