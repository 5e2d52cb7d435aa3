package capacity

import (
	"fmt"
	"strconv"
	"strings"

	"servesim/internal/texttable"
)

// Table renders a disaggregated study for terminals: the answer, every
// split simulated, and the answer under each pair of pool controllers.
func (r *DisaggReport) Table() string {
	var b strings.Builder
	b.WriteString(r.studyLine())
	if r.Replicas != nil {
		fmt.Fprintf(&b, "answer: %d prefill + %d decode = %d replicas\n\n", *r.PrefillReplicas, *r.DecodeReplicas, *r.Replicas)
	} else {
		b.WriteString("answer: none among the splits searched\n\n")
	}
	yes := map[bool]string{true: "yes", false: "no"}
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "prefill"}, {Header: "decode"}, {Header: "attainment (%)"}, {Header: "meets", Text: true},
		{Header: "p95 TTFT (s)"}, {Header: "energy/token (J)"}, {Header: "energy (kWh)"},
	}}
	for _, e := range r.Evaluations {
		t.AddRow(fmt.Sprint(e.PrefillReplicas), fmt.Sprint(e.DecodeReplicas), percentText(e.Attainment), yes[e.MeetsTarget],
			texttable.Fixed(e.P95TTFTS, 3), texttable.Fixed(e.EnergyPerOutputTokenJ, 4), texttable.Fixed(e.EnergyKWh, 6))
	}
	b.WriteString(t.String())
	if len(r.PoolControllers) == 0 {
		return b.String()
	}
	b.WriteByte('\n')
	t = texttable.Table{Columns: []texttable.Column{
		{Header: "prefill controller", Text: true}, {Header: "decode controller", Text: true}, {Header: "attainment (%)"},
		{Header: "meets", Text: true}, {Header: "p95 TTFT (s)"}, {Header: "energy/token (J)"}, {Header: "energy (kWh)"},
	}}
	for _, e := range r.PoolControllers {
		t.AddRow(e.Prefill, e.Decode, percentText(e.Attainment), yes[e.MeetsTarget],
			texttable.Fixed(e.P95TTFTS, 3), texttable.Fixed(e.EnergyPerOutputTokenJ, 4), texttable.Fixed(e.EnergyKWh, 6))
	}
	b.WriteString(t.String())
	if m := r.EnergyMinimalPoolControllers; m != nil {
		fmt.Fprintf(&b, "energy-minimal pool controllers meeting the target: %s (prefill), %s (decode)\n", m.Prefill, m.Decode)
	} else {
		b.WriteString("no pair of pool controllers meets the target at the answer\n")
	}
	return b.String()
}

// studyLine is the first line of a disaggregated study's table: the link
// and the pools' search controllers.
func (r *DisaggReport) studyLine() string {
	return fmt.Sprintf("disaggregated: KV link %s GB/s per prefill replica, latency %s s, search controllers %s (prefill) and %s (decode)\n",
		texttable.Sig(r.KVTransferBandwidthGBps, 4), texttable.Sig(r.KVTransferLatencyS, 4), r.SearchControllers.Prefill, r.SearchControllers.Decode)
}

// table renders the disaggregated study over time after the mixed one's
// (capacity --disaggregated --over-time --format table): the static
// answer and the plan in replica-hours, then one row per window with its
// prefill and decode pools.
func (d *DisaggOverTime) table(b *strings.Builder) {
	s := d.Static
	b.WriteByte('\n')
	b.WriteString(s.studyLine())
	hours := func(h float64) string { return texttable.Fixed(h, 1) + " replica-hours" }
	if s.Replicas != nil {
		fmt.Fprintf(b, "static (whole trace): %d prefill + %d decode = %d, %s\n", *s.PrefillReplicas, *s.DecodeReplicas, *s.Replicas, hours(*d.StaticReplicaHours))
	} else {
		b.WriteString("static (whole trace): none among the splits searched\n")
	}
	p := d.Plan
	ratio := ""
	if d.PlanToStaticReplicaHours != nil {
		ratio = fmt.Sprintf(" (%s%% of static)", texttable.Fixed(100**d.PlanToStaticReplicaHours, 1))
	}
	fmt.Fprintf(b, "plan (each window alone, from an empty fleet: a lower bound): peak %d prefill, %d decode, %d together; %s prefill + %s decode = %s%s\n",
		p.PeakPrefillReplicas, p.PeakDecodeReplicas, p.PeakReplicas, texttable.Fixed(p.PrefillReplicaHours, 1), texttable.Fixed(p.DecodeReplicaHours, 1),
		hours(p.ReplicaHours), ratio)
	if p.UnreachableWindows > 0 {
		fmt.Fprintf(b, "%d windows reach the target with no split searched: their row holds the best split\n", p.UnreachableWindows)
	}
	b.WriteByte('\n')
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "window"}, {Header: "start (s)"}, {Header: "end (s)"}, {Header: "requests"}, {Header: "prefill"}, {Header: "decode"},
		{Header: "attainment (%)"}, {Header: "meets", Text: true}, {Header: "p99 TTFT (s)"}, {Header: "energy (kWh)"},
	}}
	for _, w := range p.Windows {
		meets, attainment := windowCells(w.PlanWindow)
		t.AddRow(strconv.Itoa(w.Window), texttable.Sig(w.StartS, 10), texttable.Sig(w.EndS, 10), strconv.Itoa(w.Requests),
			strconv.Itoa(w.PrefillReplicas), strconv.Itoa(w.DecodeReplicas), attainment, meets, texttable.Fixed(w.P99TTFTS, 3), texttable.Fixed(w.EnergyKWh, 6))
	}
	b.WriteString(t.String())
}
