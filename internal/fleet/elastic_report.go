package fleet

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/texttable"
)

// AutoscaleReport is an elastic fleet's block of the simulate document
// (autoscale): its settings, what it was billed for (GPU-hours and
// dollars, energy in kWh and dollars), its scale events, the SLO
// attainment per scale interval, every replica's lifecycle and, unless
// Summary, its replica counts over time.
type AutoscaleReport struct {
	Policy            string  `json:"policy"`               // policy: --autoscale as given
	Autoscaler        string  `json:"autoscaler"`           // autoscaler: the policy with its options resolved
	MinReplicas       int     `json:"min_replicas"`         // min_replicas: the least replicas kept
	MaxReplicas       int     `json:"max_replicas"`         // max_replicas: the most asked for
	InitialReplicas   int     `json:"initial_replicas"`     // initial_replicas: ready at 0
	ScaleIntervalS    float64 `json:"scale_interval_s"`     // scale_interval_s: the autoscaler acts every
	ProvisionTimeS    float64 `json:"provision_time_s"`     // provision_time_s: a replica's provisioning, s
	LoadTimeS         float64 `json:"load_time_s"`          // load_time_s: a replica's loading, s
	ReplicasStarted   int     `json:"replicas_started"`     // replicas_started: replicas started, the initial ones included
	PeakReady         int     `json:"peak_ready"`           // peak_ready: the most replicas ready at once
	EndS              float64 `json:"end_s"`                // end_s: the end of the run's last step, to which replicas still up are billed
	GPUHours          float64 `json:"gpu_hours"`            // gpu_hours: billed replica time (provisioning, loading, ready, draining), h
	GPUCostPerHour    float64 `json:"gpu_cost_per_hour"`    // gpu_cost_per_hour: $ per billed replica-hour
	GPUCost           float64 `json:"gpu_cost"`             // gpu_cost: gpu_hours times gpu_cost_per_hour, $
	EnergyKWh         float64 `json:"energy_kwh"`           // energy_kwh: energy drawn while billed (loading at idle power, then every plant step, idle ones included), kWh
	EnergyPricePerKWh float64 `json:"energy_price_per_kwh"` // energy_price_per_kwh: $ per kWh
	EnergyCost        float64 `json:"energy_cost"`          // energy_cost: energy_kwh times energy_price_per_kwh, $
	TotalCost         float64 `json:"total_cost"`           // total_cost: gpu_cost plus energy_cost, $
	PeakPowerW        float64 `json:"peak_power_w"`         // peak_power_w: the most the billed replicas drew in a step, W
	LoadingPowerW     float64 `json:"loading_power_w"`      // loading_power_w: a loading replica's draw (its idle power at the lowest clock), W
	// FleetPowerLimitW is the fleet's power budget (null: none), shared by
	// FleetPowerBudget's rule; PowerViolationW the most the billed power
	// passed it in a step, PowerViolationSteps the steps it did.
	FleetPowerLimitW    *float64 `json:"fleet_power_limit_w"`
	FleetPowerBudget    *string  `json:"fleet_power_budget"`
	PowerViolationW     float64  `json:"power_violation_w"`
	PowerViolationSteps int      `json:"power_violation_steps"`
	SLOAttainment       float64  `json:"slo_attainment"` // slo_attainment: the fleet's (slo.attainment), for comparison
	// Groups are the groups' own bounds, in a fleet whose groups scale on
	// their own (left out otherwise).
	Groups      []GroupBounds `json:"groups,omitempty"`
	ScaleEvents []ScaleEvent  `json:"scale_events"` // scale_events: every change of the count asked for
	Windows     []ScaleWindow `json:"windows"`      // windows: per scale interval, arrivals, SLO attainment and replicas
	Lifecycles  []Lifecycle   `json:"lifecycles"`   // lifecycles: every replica started, in start order
	// Trajectory is the replica counts over time (left out with Summary).
	Trajectory *ScaleSeries `json:"trajectory,omitempty"`
}

// GroupBounds are one group's bounds in an elastic fleet's document, and
// what it was billed for.
type GroupBounds struct {
	Name            string `json:"name"`             // name: the group's
	Role            string `json:"role,omitempty"`   // role: its pool in a disaggregated fleet (left out otherwise)
	Autoscaler      string `json:"autoscaler"`       // autoscaler: its own, with its options resolved
	MinReplicas     int    `json:"min_replicas"`     // min_replicas: the least it keeps
	MaxReplicas     int    `json:"max_replicas"`     // max_replicas: the most it asks for
	InitialReplicas int    `json:"initial_replicas"` // initial_replicas: its replicas ready at 0 (its fleet file's replicas)
	ReplicasStarted int    `json:"replicas_started"` // replicas_started: its replicas started, the initial ones included
	// gpu_hours and energy_kwh: its share of the fleet's (its replicas'
	// billed time and energy drawn while billed).
	GPUHours  float64 `json:"gpu_hours"`
	EnergyKWh float64 `json:"energy_kwh"`
}

// newAutoscaleReport is the autoscale block of res (an elastic run's).
func newAutoscaleReport(res *Result, summary bool) *AutoscaleReport {
	s := res.Scaling
	sc := &s.Scaling
	r := &AutoscaleReport{
		Policy: sc.Spec, Autoscaler: sc.Autoscaler.Name(), MinReplicas: sc.MinReplicas, MaxReplicas: sc.MaxReplicas,
		ScaleIntervalS: sc.IntervalS, ProvisionTimeS: sc.ProvisionS, LoadTimeS: sc.LoadS,
		InitialReplicas: s.InitialReplicas, ReplicasStarted: len(s.Lifecycles), EndS: s.EndS, GPUCostPerHour: sc.GPUCostPerHour,
		EnergyPricePerKWh: sc.EnergyPricePerKWh, PeakPowerW: s.PeakPowerW, LoadingPowerW: s.LoadingPowerW,
		SLOAttainment: res.SLO.Attainment, ScaleEvents: s.Events, Windows: s.Windows, Lifecycles: s.Lifecycles,
	}
	for i, g := range sc.Groups {
		b := GroupBounds{Name: res.Groups[i].Name, Autoscaler: g.Autoscaler.Name(), MinReplicas: g.MinReplicas, MaxReplicas: g.MaxReplicas, InitialReplicas: g.InitialReplicas}
		if role := res.Groups[i].Role; role != RoleMixed && role != "" {
			b.Role = role
		}
		for _, l := range s.Lifecycles {
			if l.Group == i {
				b.ReplicasStarted++
				b.GPUHours += l.BilledS / 3600
				b.EnergyKWh += l.EnergyJ / 3.6e6
			}
		}
		r.Groups = append(r.Groups, b)
	}
	if sc.PowerLimitW > 0 {
		limit, rule := sc.PowerLimitW, sc.PowerBudget
		if rule == "" {
			rule = BudgetEqual
		}
		r.FleetPowerLimitW, r.FleetPowerBudget = &limit, &rule
		r.PowerViolationW, r.PowerViolationSteps = s.PowerViolationW, s.PowerViolationSteps
	}
	if r.Policy == "" {
		r.Policy = r.Autoscaler
	}
	if r.ScaleEvents == nil {
		r.ScaleEvents = []ScaleEvent{}
	}
	billedS, energyJ := 0.0, 0.0
	for _, l := range s.Lifecycles {
		billedS += l.BilledS
		energyJ += l.EnergyJ
	}
	r.GPUHours = billedS / 3600
	r.GPUCost = r.GPUHours * sc.GPUCostPerHour
	r.EnergyKWh = energyJ / 3.6e6
	r.EnergyCost = r.EnergyKWh * sc.EnergyPricePerKWh
	r.TotalCost = r.GPUCost + r.EnergyCost
	r.PeakReady = peakReady(s.Lifecycles)
	if !summary {
		t := s.Series
		r.Trajectory = &t
	}
	return r
}

// peakReady is the most replicas ready at once: ready from ready_s to
// draining_s or released_s (a replica returned from draining counted from
// its first ready_s to its release, which bounds it from above only when
// it drained in between).
func peakReady(lifecycles []Lifecycle) int {
	type edge struct {
		t float64
		d int
	}
	var edges []edge
	for _, l := range lifecycles {
		if math.IsNaN(l.ReadyS) {
			continue
		}
		end := math.Inf(1)
		if !math.IsNaN(l.ReleasedS) {
			end = l.ReleasedS
		}
		if !math.IsNaN(l.DrainingS) && l.ReturnedTo == 0 {
			end = l.DrainingS
		}
		edges = append(edges, edge{l.ReadyS, 1}, edge{end, -1})
	}
	// Ends before starts at one instant.
	for i := 1; i < len(edges); i++ {
		for j := i; j > 0 && (edges[j].t < edges[j-1].t || (edges[j].t == edges[j-1].t && edges[j].d < edges[j-1].d)); j-- {
			edges[j], edges[j-1] = edges[j-1], edges[j]
		}
	}
	peak, n := 0, 0
	for _, e := range edges {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// writeTable writes the autoscale block for terminals: a line of totals,
// then the scale events (the first maxTableEvents).
func (a *AutoscaleReport) writeTable(b *strings.Builder) {
	bounds := fmt.Sprintf("%d to %d replicas", a.MinReplicas, a.MaxReplicas)
	if len(a.Groups) > 0 {
		var each []string
		for _, g := range a.Groups {
			group := fmt.Sprintf("%s %d to %d", g.Name, g.MinReplicas, g.MaxReplicas)
			if g.Autoscaler != a.Autoscaler {
				group += " by " + g.Autoscaler
			}
			each = append(each, group)
		}
		bounds = "each group on its own (" + strings.Join(each, ", ") + ")"
	}
	fmt.Fprintf(b, "\nautoscale %s: %s (%d at 0), every %s s, cold start %s + %s s\n",
		a.Policy, bounds, a.InitialReplicas, texttable.Sig(a.ScaleIntervalS, 4),
		texttable.Sig(a.ProvisionTimeS, 4), texttable.Sig(a.LoadTimeS, 4))
	fmt.Fprintf(b, "billed: %s GPU-hours ($%s), %s kWh ($%s), $%s in all; %d replicas started, at most %d ready; peak billed power %s W\n",
		texttable.Sig(a.GPUHours, 4), texttable.Fixed(a.GPUCost, 2), texttable.Sig(a.EnergyKWh, 4), texttable.Fixed(a.EnergyCost, 2),
		texttable.Fixed(a.TotalCost, 2), a.ReplicasStarted, a.PeakReady, texttable.Fixed(a.PeakPowerW, 1))
	if len(a.Groups) > 0 {
		var each []string
		for _, g := range a.Groups {
			each = append(each, fmt.Sprintf("%s %s GPU-hours, %s kWh, %d started", g.Name, texttable.Sig(g.GPUHours, 4), texttable.Sig(g.EnergyKWh, 4), g.ReplicasStarted))
		}
		fmt.Fprintf(b, "billed per group: %s\n", strings.Join(each, "; "))
	}
	if line := a.windowLine(); line != "" {
		b.WriteString(line + "\n")
	}
	if a.FleetPowerLimitW != nil {
		fmt.Fprintf(b, "fleet power budget %s W (%s): peak %s W, %d steps over it by up to %s W\n",
			texttable.Sig(*a.FleetPowerLimitW, 4), *a.FleetPowerBudget, texttable.Fixed(a.PeakPowerW, 1),
			a.PowerViolationSteps, texttable.Fixed(a.PowerViolationW, 1))
	}
	if len(a.ScaleEvents) == 0 {
		b.WriteString("no scale event\n")
		return
	}
	t := texttable.Table{Columns: []texttable.Column{{Header: "time s"}, {Header: "from"}, {Header: "to"}, {Header: "reason", Text: true}}}
	if len(a.Groups) > 0 {
		t.Columns = append([]texttable.Column{{Header: "time s"}, {Header: "group", Text: true}}, t.Columns[1:]...)
	}
	for i, e := range a.ScaleEvents {
		if i == maxTableEvents {
			break
		}
		if len(a.Groups) > 0 {
			t.AddRow(texttable.Sig(e.TimeS, 4), e.Group, strconv.Itoa(e.From), strconv.Itoa(e.To), e.Reason)
			continue
		}
		t.AddRow(texttable.Sig(e.TimeS, 4), strconv.Itoa(e.From), strconv.Itoa(e.To), e.Reason)
	}
	fmt.Fprintf(b, "%d scale events", len(a.ScaleEvents))
	if len(a.ScaleEvents) > maxTableEvents {
		fmt.Fprintf(b, " (the first %d)", maxTableEvents)
	}
	b.WriteString(":\n")
	b.WriteString(t.String())
}

// windowLine sums the windows up for a table: how many, the worst SLO
// attainment (and when) and the median over the windows with arrivals.
func (a *AutoscaleReport) windowLine() string {
	var att []float64
	worst, at := math.Inf(1), 0.0
	for _, w := range a.Windows {
		if math.IsNaN(w.SLOAttainment) {
			continue
		}
		att = append(att, w.SLOAttainment)
		if w.SLOAttainment < worst {
			worst, at = w.SLOAttainment, w.StartS
		}
	}
	if len(att) == 0 {
		return ""
	}
	slices.Sort(att)
	median := att[len(att)/2]
	if len(att)%2 == 0 {
		median = (att[len(att)/2-1] + att[len(att)/2]) / 2
	}
	return fmt.Sprintf("SLO attainment per %s s window (%d with arrivals): median %s%%, worst %s%% (from %s s)",
		texttable.Sig(a.ScaleIntervalS, 4), len(att), texttable.Fixed(100*median, 2), texttable.Fixed(100*worst, 2), texttable.Sig(at, 6))
}

// maxTableEvents is the most scale events a table lists.
const maxTableEvents = 20
