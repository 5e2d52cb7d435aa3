package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/numeric"
	"servesim/internal/texttable"
)

// maxEmptySlots is the longest run of empty windows the figure gives a
// slot each; a longer run takes one slot, labelled with its count.
const maxEmptySlots = 10

// slot is one place on the figure's time axis: a window's snapshot, or
// empty windows (snapshot nil) named label.
type slot struct {
	snapshot *Snapshot
	label    string
}

// Figure draws the p99 end-to-end latency of every window as a bar
// coloured by the hypothesis the rules chose, with the p50 line across, in
// ms or s by their range (diagnose --plot).
func Figure(title string, snapshots []Snapshot) figure.Figure {
	slots := make([]slot, len(snapshots))
	for i := range snapshots {
		slots[i] = slot{snapshot: &snapshots[i], label: barLabel(title, snapshots[i].WindowName)}
	}
	return drawSlots(title, slots, 0)
}

// Figure draws the windows as the package's Figure does, in time order
// with the empty windows between them, so that time jumps nowhere unseen:
// each empty window a gap (no bar, no p50) labelled "empty" under it, a
// run of more than maxEmptySlots of them one gap labelled with their count
// ("17 empty"); the panel's title counts them. The labels are short: the
// figure labels every n-th slot, n set by the widest label.
func (r WindowReport) Figure(title string) figure.Figure {
	slots := make([]slot, 0, len(r.Windows))
	var empty int64
	next := 0 // the next run of empty windows
	for i := range r.Windows {
		for ; next < len(r.empty) && r.empty[next].before == i; next++ {
			run := r.empty[next]
			empty += run.count
			if run.count > maxEmptySlots {
				slots = append(slots, slot{label: strconv.FormatInt(run.count, 10) + " empty"})
				continue
			}
			for range run.count {
				slots = append(slots, slot{label: "empty"})
			}
		}
		slots = append(slots, slot{snapshot: &r.Windows[i].Snapshot, label: barLabel(title, r.Windows[i].WindowName)})
	}
	return drawSlots(title, slots, empty)
}

// drawSlots draws slots, empty being how many empty windows they hold.
func drawSlots(title string, slots []slot, empty int64) figure.Figure {
	bars := make([]figure.ColoredBar, len(slots))
	p50, p99 := make([]float64, len(slots)), make([]float64, len(slots)) // seconds; NaN: no request
	for i, s := range slots {
		p50[i], p99[i] = math.NaN(), math.NaN()
		if s.snapshot != nil {
			p50[i], p99[i] = s.snapshot.P50E2EMs/1000, s.snapshot.P99E2EMs/1000
		}
	}
	unit := figure.DurationUnit(p50, p99)
	for i, s := range slots {
		bars[i] = figure.ColoredBar{Label: s.label, Value: p99[i] * unit.PerSecond}
		if s.snapshot != nil {
			bars[i].Class = s.snapshot.DiagnosticHypothesis
		}
	}
	panel := "p99 end-to-end latency per window, coloured by diagnosis"
	switch {
	case empty == 1:
		panel += "; 1 empty window (no request): a gap"
	case empty > 1:
		panel += "; " + strconv.FormatInt(empty, 10) + " empty windows (no request): gaps"
	}
	return figure.Figure{
		Title:  "diagnose: " + title,
		Width:  12 * vg.Inch,
		Height: 6 * vg.Inch,
		Columns: []figure.Column{{Panels: []*figure.Panel{
			figure.ClassBars(panel, "latency ("+unit.Name+")", bars,
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

// evidenceColumns are the columns DiagnosisTable adds to snapshotColumns.
var evidenceColumns = []texttable.Column{
	{Header: "queue of p99 TTFT (%)"}, {Header: "prefill of p99 TTFT (%)"}, {Header: "findings", Text: true},
}

// DiagnosisTable renders diagnoses as Table renders their snapshots, with
// the p99 TTFT breakdown's shares and the findings present in each row,
// then each diagnosis's evidence: every rule's checks, the breakdown and
// every finding with its numbers (diagnose --format table).
func DiagnosisTable(diagnoses []Diagnosis) string {
	t := texttable.Table{Columns: slices.Concat(snapshotColumns, evidenceColumns)}
	for _, d := range diagnoses {
		s := d.Snapshot
		b := d.P99TTFTBreakdown
		t.AddRow(s.WindowName, strconv.Itoa(s.RequestCount), texttable.Fixed(s.P50E2EMs, 1), texttable.Fixed(s.P99E2EMs, 1),
			optionalFixed(s.P99ToP50Ratio, 2), texttable.Fixed(s.P99TTFTMs, 1), optionalFixed(s.P99TPOTMs, 2),
			texttable.Fixed(s.P99QueueWaitMs, 1), texttable.Fixed(s.PeakKVOccupancyPct, 1), strconv.Itoa(s.PreemptionCount),
			texttable.Fixed(s.PrefixCacheHitRatePct, 1), texttable.Fixed(s.ModeledCostPer1kRequestsUSD, 4), s.DiagnosticHypothesis,
			optionalFixed(b.QueueWaitSharePct, 1), optionalFixed(b.PrefillSharePct, 1), d.Findings.present())
	}
	var out strings.Builder
	out.WriteString(t.String())
	out.WriteString("\nEvidence. The seed's rules are tried in order; the diagnosis is the first that matches (*).\n" +
		"Slow requests: those at or above the p99 TTFT. Findings are beside the rules and do not change the diagnosis.\n")
	for _, d := range diagnoses {
		out.WriteString("\n")
		d.writeEvidence(&out)
	}
	return out.String()
}

// present names the findings present ("overload?" when overload cannot be
// told), "-" for none.
func (f Findings) present() string {
	var names []string
	switch {
	case f.Overload.Present == nil:
		names = append(names, "overload?")
	case *f.Overload.Present:
		names = append(names, "overload")
	}
	if f.LongPrompts.Present {
		names = append(names, "long_prompts")
	}
	if f.NoPrefixCache.Present {
		names = append(names, "no_prefix_cache")
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// writeEvidence writes the diagnosis's evidence for people.
func (d Diagnosis) writeEvidence(out *strings.Builder) {
	fmt.Fprintf(out, "%s: %s\n", d.WindowName, d.DiagnosticHypothesis)
	rules := texttable.Table{Columns: []texttable.Column{{Header: "rule", Text: true}, {Header: "matched", Text: true}, {Header: "checks", Text: true}}}
	for _, e := range d.Evidence {
		matched := yesNo(e.Matched)
		if e.Verdict {
			matched += " *"
		}
		checks := make([]string, len(e.Checks))
		for i, c := range e.Checks {
			checks[i] = fmt.Sprintf("%s %s %s %s (%s): %s", c.Metric, number(c.Observed), c.Op, number(c.Threshold), c.ThresholdFrom, yesNo(c.Passed))
		}
		rules.AddRow(e.Rule, matched, strings.Join(checks, "; "))
	}
	for line := range strings.Lines(rules.String()) {
		out.WriteString("  " + line)
	}
	b := d.P99TTFTBreakdown
	fmt.Fprintf(out, "  p99 TTFT breakdown: %d slow request%s, mean TTFT %s ms = queue wait %s ms (%s%%) + prefill %s ms (%s%%); "+
		"recompute after the first token %s ms; %d preempted\n",
		b.Requests, plural(b.Requests), number(b.MeanTTFTMs), number(b.MeanQueueWaitMs), number(b.QueueWaitSharePct),
		number(b.MeanPrefillMs), number(b.PrefillSharePct), number(b.MeanRecomputePenaltyMs), b.Preempted)
	o := d.Findings.Overload
	if o.Present == nil {
		out.WriteString("  overload: cannot tell (not every request has an arrival time, or they all arrive at one instant)\n")
	} else {
		fmt.Fprintf(out, "  overload: %s: in %s s from %s s, %d arrivals (%s/s), %d admitted to prefill (%s/s), %d completed (%s/s), "+
			"%d queued at the start and %d at the end (arrivals >= %s x admissions: %s; more queued at the start than admitted: %s)\n",
			yesNo(*o.Present), number(o.IntervalS), number(o.IntervalStartS), *o.Arrivals, number(o.ArrivalRatePerS),
			*o.Admissions, number(o.AdmissionRatePerS), *o.Completions, number(o.CompletionRatePerS),
			*o.QueuedAtStart, *o.QueuedAtEnd, strconv.FormatFloat(o.ThresholdRatio, 'g', -1, 64),
			yesNo(*o.ArrivalsOutpaceAdmissions), yesNo(*o.BacklogExceedsAdmissions))
	}
	l := d.Findings.LongPrompts
	fmt.Fprintf(out, "  long_prompts: %s: slow requests' median prompt %d tokens = %s x the median %d (threshold %s x), prefill %s%% of their TTFT (threshold %s%%)\n",
		yesNo(l.Present), l.SlowMedianPromptTokens, number(l.Ratio), l.MedianPromptTokens, strconv.FormatFloat(l.ThresholdRatio, 'g', -1, 64),
		number(l.PrefillSharePct), strconv.FormatFloat(l.ThresholdPrefillSharePct, 'g', -1, 64))
	c := d.Findings.NoPrefixCache
	fmt.Fprintf(out, "  no_prefix_cache: %s: %d of the log's %d requests have cached prompt tokens (%d in this window)\n",
		yesNo(c.Present), c.LogRequestsWithCachedTokens, c.LogRequests, c.RequestsWithCachedTokens)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// number formats a value of the evidence for people: rounded to 3
// decimals, shortest form; "-" when undefined.
func number(x *float64) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(numeric.Round(*x, 3), 'f', -1, 64)
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
