package capacity

import (
	"fmt"
	"strconv"
	"strings"

	"servesim/internal/texttable"
)

// Table renders a capacity study for terminals (capacity --format table):
// the answer, every size simulated, the controllers compared at the answer
// and their energy totals (or, with no answer, the best size's); then,
// with --disaggregated, the disaggregated study's.
func (d *Document) Table() string {
	if d.Disaggregated == nil {
		return d.mixedTable()
	}
	return d.mixedTable() + "\n" + d.Disaggregated.Table()
}

// mixedTable is the table of the (mixed) study.
func (d *Document) mixedTable() string {
	var b strings.Builder
	pct := percentText
	fmt.Fprintf(&b, "capacity: trace %s (%d requests), router %s, search controller %s\n",
		d.Provenance.TracePath, d.Provenance.RequestsLoaded, d.Router, d.SearchedWith)
	b.WriteString(sloLine(d.SLO, d.TargetAttainment))
	perSize := perSizeText(d.ReplicasPerSize)
	if d.Replicas != nil {
		fmt.Fprintf(&b, "answer: %d%s\n\n", *d.Replicas, perSize)
	} else {
		fmt.Fprintf(&b, "answer: none up to %d%s; best attainment %s%% with %d\n\n",
			d.MaxReplicas, perSize, pct(d.Best.Attainment), d.Best.Replicas)
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	sizeHeader := "replicas"
	if d.ReplicasPerSize != 1 {
		sizeHeader = "size"
	}
	t := texttable.Table{Columns: []texttable.Column{
		{Header: sizeHeader}, {Header: "attainment (%)"}, {Header: "meets", Text: true}, {Header: "completed (%)"},
		{Header: "p95 TTFT (s)"}, {Header: "p99 TTFT (s)"}, {Header: "energy/token (J)"}, {Header: "peak power (W)"},
	}}
	row := func(first string, e Evaluation) {
		t.AddRow(first, pct(e.Attainment), yes(e.MeetsTarget), pct(e.CompletedFraction),
			texttable.Fixed(e.P95TTFTS, 3), texttable.Fixed(e.P99TTFTS, 3),
			texttable.Fixed(e.EnergyPerOutputTokenJ, 4), texttable.Fixed(e.PeakPowerW, 1))
	}
	for _, e := range d.Evaluations {
		row(strconv.Itoa(e.Replicas), e)
	}
	b.WriteString(t.String())
	for _, e := range d.NonMonotone {
		fmt.Fprintf(&b, "non-monotone: %d replicas %s the target\n", e.Replicas, map[bool]string{true: "meets", false: "fails"}[e.MeetsTarget])
	}
	if len(d.Controllers) == 0 {
		if d.Replicas == nil && len(d.Evaluations) > 0 {
			fmt.Fprintf(&b, "\nenergy of the best size, %d replicas (per completed request):\n", d.Best.Replicas)
			b.WriteString(energyTable([]ControllerEvaluation{{Controller: d.SearchedWith, Evaluation: d.Best}}))
		}
		return b.String()
	}
	b.WriteByte('\n')
	t = texttable.Table{Columns: []texttable.Column{
		{Header: "controller", Text: true}, {Header: "attainment (%)"}, {Header: "meets", Text: true}, {Header: "completed (%)"},
		{Header: "p95 TTFT (s)"}, {Header: "p99 TTFT (s)"}, {Header: "energy/token (J)"}, {Header: "peak power (W)"},
	}}
	for _, c := range d.Controllers {
		row(c.Controller, c.Evaluation)
	}
	b.WriteString(t.String())
	if d.EnergyMinimalController != nil {
		fmt.Fprintf(&b, "energy-minimal controller meeting the target: %s\n", *d.EnergyMinimalController)
	} else {
		b.WriteString("no controller meets the target at the answer\n")
	}
	fmt.Fprintf(&b, "\nenergy at the answer, %d replicas (per completed request):\n", d.Controllers[0].Replicas)
	b.WriteString(energyTable(d.Controllers))
	return b.String()
}

// energyTable is the energy totals of evaluations by controller. Energy
// per request in J is energy per 1000 requests in kJ: one column says both.
func energyTable(evals []ControllerEvaluation) string {
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "controller", Text: true}, {Header: "energy/request (J = kJ/1k requests)"}, {Header: "energy (kWh)"},
		{Header: "mean power (W)"},
	}}
	for _, c := range evals {
		t.AddRow(c.Controller, texttable.Fixed(c.EnergyPerRequestJ, 2), texttable.Fixed(c.EnergyKWh, 6), texttable.Fixed(c.MeanPowerW, 1))
	}
	return t.String()
}

// percentText writes a fraction as a percentage with two decimals.
func percentText(x float64) string { return texttable.Fixed(100*x, 2) }

// sloLine is a capacity table's objectives line: "SLO: TTFT 5 s, TPOT
// per profile, end-to-end none; target attainment 99.00%".
func sloLine(slo DocumentSLO, target float64) string {
	seconds := func(x *float64, none string) string {
		if x == nil {
			return none
		}
		return texttable.Sig(*x, 4) + " s"
	}
	return fmt.Sprintf("SLO: TTFT %s, TPOT %s, end-to-end %s; target attainment %s%%\n",
		seconds(slo.TTFTSLOSeconds, "per profile"), seconds(slo.TPOTSLOSeconds, "per profile"), seconds(slo.E2ESLOSeconds, "none"),
		percentText(target))
}

// perSizeText says how many replicas of a fleet file one size is, after a
// size: "" for one.
func perSizeText(replicasPerSize int) string {
	if replicasPerSize == 1 {
		return ""
	}
	return fmt.Sprintf(" (x %d replicas of the fleet file)", replicasPerSize)
}
