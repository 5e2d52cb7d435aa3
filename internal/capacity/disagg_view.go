package capacity

import (
	"fmt"
	"strings"

	"servesim/internal/texttable"
)

// Table renders a disaggregated study for terminals: the answer, every
// split simulated, and the answer under each pair of pool controllers.
func (r *DisaggCapacityReport) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "disaggregated: KV link %s GB/s per prefill replica, latency %s s, search controllers %s (prefill) and %s (decode)\n",
		texttable.Sig(r.KVTransferBandwidthGBps, 4), texttable.Sig(r.KVTransferLatencyS, 4), r.SearchControllers.Prefill, r.SearchControllers.Decode)
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
