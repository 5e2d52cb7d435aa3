package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/texttable"
)

// OverTimeDocument is what `servesim capacity --over-time` writes:
// the plan (per window, the smallest fleet for that window alone), the
// static study of the whole trace (today's capacity answer: the one fleet
// size serving every window, queues carried over), the two compared in
// replica-hours, the objectives and the inputs.
type OverTimeDocument struct {
	Plan *Plan `json:"plan"` // plan: the windows' sizes
	// static: the capacity study of the whole trace, as capacity without
	// --over-time reports it (without its slo and provenance, given once
	// below).
	Static *Report `json:"static"`
	// static_replica_hours: the static answer's replicas (size x
	// replicas_per_size) held over every window of the plan (windows x
	// window_s / 3600); null when no size meets the target on the whole
	// trace.
	StaticReplicaHours *float64 `json:"static_replica_hours"`
	// plan_to_static_replica_hours: plan.replica_hours /
	// static_replica_hours; null without a static answer.
	PlanToStaticReplicaHours *float64    `json:"plan_to_static_replica_hours"`
	SLO                      DocumentSLO `json:"slo"`        // slo: the objectives the requests were judged by
	Provenance               Provenance  `json:"provenance"` // provenance: the inputs
	// Service is the batched service model and its cards; nil (left out)
	// under the reference's model.
	Service *plant.ServiceModel `json:"service,omitempty"`
	// Disaggregated is capacity --disaggregated --over-time's plan per
	// pool beside its static answer; nil (left out) without
	// --disaggregated.
	Disaggregated *DisaggOverTime `json:"disaggregated,omitempty"`
}

// DisaggOverTime is the disaggregated study over time: the plan (per
// window, the fewest prefill and decode replicas for that window alone)
// beside the static disaggregated study of the whole trace, the two
// compared in replica-hours, as the mixed fleet's above.
type DisaggOverTime struct {
	Plan *DisaggPlan `json:"plan"` // plan: the windows' splits
	// static: the disaggregated study of the whole trace, as capacity
	// --disaggregated reports it.
	Static *DisaggReport `json:"static"`
	// static_replica_hours: the static answer's replicas (prefill +
	// decode) held over every window of the plan; null when no split
	// meets the target on the whole trace.
	StaticReplicaHours *float64 `json:"static_replica_hours"`
	// plan_to_static_replica_hours: plan.replica_hours /
	// static_replica_hours; null without a static answer.
	PlanToStaticReplicaHours *float64 `json:"plan_to_static_replica_hours"`
}

// NewOverTimeDocument puts a plan beside the static study doc of
// the same trace (its report, objectives, inputs and service model) and
// compares their replica-hours.
func NewOverTimeDocument(plan *Plan, doc *Document) *OverTimeDocument {
	d := &OverTimeDocument{Plan: plan, Static: doc.Report, SLO: doc.SLO, Provenance: doc.Provenance, Service: doc.Service}
	if doc.Replicas != nil {
		d.StaticReplicaHours, d.PlanToStaticReplicaHours = compareHours(*doc.Replicas*doc.ReplicasPerSize, len(plan.Windows), plan.WindowS, plan.ReplicaHours)
	}
	return d
}

// NewDisaggOverTime puts a disaggregated plan beside the static
// disaggregated study of the same trace and compares their
// replica-hours.
func NewDisaggOverTime(plan *DisaggPlan, static *DisaggReport) *DisaggOverTime {
	d := &DisaggOverTime{Plan: plan, Static: static}
	if static.Replicas != nil {
		d.StaticReplicaHours, d.PlanToStaticReplicaHours = compareHours(*static.Replicas, len(plan.Windows), plan.WindowS, plan.ReplicaHours)
	}
	return d
}

// compareHours returns the replica-hours of a static fleet of replicas
// held over windows of windowS seconds, and a plan's planHours over them
// (nil when the static fleet's hours are 0).
func compareHours(replicas, windows int, windowS, planHours float64) (static, planToStatic *float64) {
	hours := float64(replicas) * float64(windows) * windowS / 3600
	if hours > 0 {
		ratio := planHours / hours
		planToStatic = &ratio
	}
	return &hours, planToStatic
}

// ScheduleCSV is the plan's schedule file (Plan.ScheduleCSV).
func (d *OverTimeDocument) ScheduleCSV() []byte { return d.Plan.ScheduleCSV() }

// Table renders a capacity study over time for terminals (capacity
// --over-time --format table): the study, the static answer and the plan
// in replica-hours, then one row per window.
func (d *OverTimeDocument) Table() string {
	var b strings.Builder
	pct := percentText
	s := d.Static
	fmt.Fprintf(&b, "capacity over time: trace %s (%d requests), %s s windows, router %s, search controller %s\n",
		d.Provenance.TracePath, d.Provenance.RequestsLoaded, texttable.Sig(d.Plan.WindowS, 6), s.Router, s.SearchedWith)
	b.WriteString(sloLine(d.SLO, s.TargetAttainment))
	perSize := perSizeText(s.ReplicasPerSize)
	hours := func(h float64) string { return texttable.Fixed(h, 1) + " replica-hours" }
	if s.Replicas != nil {
		fmt.Fprintf(&b, "static (whole trace): %d%s, %s\n", *s.Replicas, perSize, hours(*d.StaticReplicaHours))
	} else {
		fmt.Fprintf(&b, "static (whole trace): none up to %d%s; best attainment %s%% with %d\n",
			s.MaxReplicas, perSize, pct(s.Best.Attainment), s.Best.Replicas)
	}
	ratio := ""
	if d.PlanToStaticReplicaHours != nil {
		ratio = fmt.Sprintf(" (%s%% of static)", texttable.Fixed(100**d.PlanToStaticReplicaHours, 1))
	}
	fmt.Fprintf(&b, "plan (each window alone, from an empty fleet: a lower bound): peak %d%s, %s%s\n",
		d.Plan.PeakReplicas, perSize, hours(d.Plan.ReplicaHours), ratio)
	if d.Plan.UnreachableWindows > 0 {
		fmt.Fprintf(&b, "%d windows reach the target with no size up to %d: their row holds the best size\n",
			d.Plan.UnreachableWindows, s.MaxReplicas)
	}
	b.WriteByte('\n')
	sizeHeader := "replicas"
	if s.ReplicasPerSize != 1 {
		sizeHeader = "size"
	}
	t := texttable.Table{Columns: []texttable.Column{
		{Header: "window"}, {Header: "start (s)"}, {Header: "end (s)"}, {Header: "requests"}, {Header: sizeHeader},
		{Header: "attainment (%)"}, {Header: "meets", Text: true}, {Header: "p99 TTFT (s)"}, {Header: "energy (kWh)"},
	}}
	for _, w := range d.Plan.Windows {
		meets, attainment := windowCells(w)
		t.AddRow(strconv.Itoa(w.Window), texttable.Sig(w.StartS, 10), texttable.Sig(w.EndS, 10), strconv.Itoa(w.Requests),
			strconv.Itoa(w.Replicas), attainment, meets, texttable.Fixed(w.P99TTFTS, 3), texttable.Fixed(w.EnergyKWh, 6))
	}
	b.WriteString(t.String())
	if d.Disaggregated != nil {
		d.Disaggregated.table(&b)
	}
	return b.String()
}

// windowCells are a window's "meets" and "attainment (%)" cells of a
// table: yes or no, and "-" for a window without requests.
func windowCells(w PlanWindow) (meets, attainment string) {
	meets, attainment = "yes", "-"
	if !w.MeetsTarget {
		meets = "no"
	}
	if !math.IsNaN(w.Attainment) {
		attainment = percentText(w.Attainment)
	}
	return meets, attainment
}
