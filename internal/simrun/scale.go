package simrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"

	"servesim/internal/capacity"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// Scale are the autoscaling settings of a simulation (--autoscale and the
// flags that go with it): an elastic fleet (fleet.Scaling).
type Scale struct {
	// Policy is --autoscale; empty for a fixed fleet.
	Policy      string
	MinReplicas int
	MaxReplicas int
	IntervalS   float64
	// ColdStartS, when ColdStartGiven, is split into ProvisionS and LoadS
	// (fleet.ColdStartProvisionShare of it provisioning) unless those are
	// given.
	ColdStartS        float64
	ProvisionS, LoadS float64
	GPUCostPerHour    float64
	EnergyPricePerKWh float64
	// PowerLimitW is --fleet-power-limit (0: none), PowerBudget
	// --fleet-power-budget.
	PowerLimitW float64
	PowerBudget string
	// initial is the count ready at 0, set by Check.
	initial int
}

// Initial is the count ready at 0 (once checked): --replicas when given,
// else --min-replicas.
func (s *Scale) Initial() int { return s.initial }

// scaleFlags are the flags that mean something only with --autoscale.
var scaleFlags = []string{"min-replicas", "max-replicas", "scale-interval", "cold-start", "provision-time", "load-time", "gpu-cost-per-hour", "energy-price-per-kwh", "fleet-power-limit", "fleet-power-budget"}

// Check checks the autoscaling flags (usage errors naming the setting):
// each needs --autoscale, times are finite and 0 or more (the interval
// positive), --min-replicas at most --max-replicas, the initial size
// (--replicas when given, else --min-replicas) between them, and the
// policy and its options known. It resolves --cold-start into the
// provisioning and loading times. given says which flags were given (by
// name, without dashes); replicas is --replicas.
func (s *Scale) Check(replicas int, given func(name string) bool) error {
	if given == nil {
		given = func(string) bool { return false }
	}
	if s.Policy == "" {
		for _, name := range scaleFlags {
			if given(name) {
				return runparams.Errorf("%s needs %s", runparams.Setting(name), runparams.Setting("autoscale"))
			}
		}
		return nil
	}
	if err := fleet.ParseAutoscaler(s.Policy); err != nil {
		return err
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	for _, t := range []struct {
		flag     string
		value    float64
		positive bool
	}{
		{"scale-interval", s.IntervalS, true}, {"cold-start", s.ColdStartS, false},
		{"provision-time", s.ProvisionS, false}, {"load-time", s.LoadS, false},
		{"gpu-cost-per-hour", s.GPUCostPerHour, false}, {"energy-price-per-kwh", s.EnergyPricePerKWh, false},
		{"fleet-power-limit", s.PowerLimitW, false},
	} {
		if !finite(t.value) || t.value < 0 || (t.positive && t.value == 0) {
			want := "a finite number, 0 or more"
			if t.positive {
				want = "a positive finite number"
			}
			return runparams.Errorf("%s %v: expected %s", runparams.Setting(t.flag), t.value, want)
		}
	}
	if s.PowerBudget != fleet.BudgetEqual && s.PowerBudget != fleet.BudgetQueue {
		return runparams.Errorf("%s %q: expected equal or queue", runparams.Setting("fleet-power-budget"), s.PowerBudget)
	}
	if given("fleet-power-budget") && !given("fleet-power-limit") {
		return runparams.Errorf("%s needs %s", runparams.Setting("fleet-power-budget"), runparams.Setting("fleet-power-limit"))
	}
	if s.MinReplicas < 0 || s.MinReplicas > fleet.MaxReplicas {
		return runparams.Errorf("%s %d: expected a whole number from 0 to %d", runparams.Setting("min-replicas"), s.MinReplicas, fleet.MaxReplicas)
	}
	if s.MaxReplicas < 1 || s.MaxReplicas > fleet.MaxReplicas {
		return runparams.Errorf("%s %d: expected a whole number from 1 to %d", runparams.Setting("max-replicas"), s.MaxReplicas, fleet.MaxReplicas)
	}
	if s.MinReplicas > s.MaxReplicas {
		return runparams.Errorf("%s %d is above %s %d", runparams.Setting("min-replicas"), s.MinReplicas, runparams.Setting("max-replicas"), s.MaxReplicas)
	}
	s.initial = s.MinReplicas
	if given("replicas") {
		s.initial = replicas
		if replicas < s.MinReplicas || replicas > s.MaxReplicas {
			return runparams.Errorf("%s %d: with %s, the initial size: expected a count from %s %d to %s %d", runparams.Setting("replicas"), replicas, runparams.Setting("autoscale"), runparams.Setting("min-replicas"), s.MinReplicas, runparams.Setting("max-replicas"), s.MaxReplicas)
		}
	}
	if given("cold-start") {
		switch {
		case given("provision-time") && given("load-time"):
			if math.Abs(s.ProvisionS+s.LoadS-s.ColdStartS) > 1e-9*math.Max(1, s.ColdStartS) {
				return runparams.Errorf("%s %v: not %s %v plus %s %v (give two of the three)", runparams.Setting("cold-start"), s.ColdStartS, runparams.Setting("provision-time"), s.ProvisionS, runparams.Setting("load-time"), s.LoadS)
			}
		case given("provision-time"):
			s.LoadS = s.ColdStartS - s.ProvisionS
		case given("load-time"):
			s.ProvisionS = s.ColdStartS - s.LoadS
		default:
			s.ProvisionS = s.ColdStartS * fleet.ColdStartProvisionShare
			s.LoadS = s.ColdStartS - s.ProvisionS
		}
		if s.ProvisionS < 0 || s.LoadS < 0 {
			return runparams.Errorf("%s %v: shorter than %s or %s", runparams.Setting("cold-start"), s.ColdStartS, runparams.Setting("provision-time"), runparams.Setting("load-time"))
		}
	}
	return nil
}

// scaling is the fleet's Scaling of s (checked), its schedule read; exec
// are an exec: autoscaler's timeout and stderr. With a fleet file (path),
// each of its groups scales on its own: a fresh autoscaler (its autoscale
// when it gives one), its min_replicas and max_replicas (the flags' when
// not given) and its replicas as its initial size: a disaggregated fleet
// scales each pool so.
func (s *Scale) scaling(exec plant.ControllerOptions, groups []fleet.Group, bounds []fleet.Bounds, path string, plan groupPlanner) (*fleet.Scaling, error) {
	newAutoscaler := func(policy string, group int) (fleet.Autoscaler, error) {
		a, err := fleet.NewAutoscaler(policy, fleet.AutoscaleOptions{
			ReadSchedule: fleet.ReadSchedule, LeadS: s.ProvisionS + s.LoadS + s.IntervalS,
			IntervalS: s.IntervalS, Exec: exec, Plan: plan(group)})
		if err != nil {
			var oe *fleet.OptionError
			if errors.As(err, &oe) {
				return nil, err
			}
			return nil, runparams.Errorf("%s: %w", runparams.Setting("autoscale"), err)
		}
		return a, nil
	}
	a, err := newAutoscaler(s.Policy, 0)
	if err != nil {
		return nil, err
	}
	sc := &fleet.Scaling{
		Autoscaler: a, Spec: s.Policy, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas,
		InitialReplicas: s.initial, IntervalS: s.IntervalS, ProvisionS: s.ProvisionS, LoadS: s.LoadS,
		GPUCostPerHour: s.GPUCostPerHour, EnergyPricePerKWh: s.EnergyPricePerKWh,
		PowerLimitW: s.PowerLimitW, PowerBudget: s.PowerBudget,
	}
	if path == "" {
		return sc, nil
	}
	total := 0
	for i, g := range groups {
		gs := fleet.GroupScaling{Autoscaler: a, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, InitialReplicas: g.Replicas}
		if policy := bounds[i].Autoscale; policy != "" {
			if gs.Autoscaler, err = newAutoscaler(policy, i); err != nil {
				return nil, err
			}
		} else if i > 0 {
			if gs.Autoscaler, err = newAutoscaler(s.Policy, i); err != nil {
				return nil, err
			}
		}
		if b := bounds[i]; b.MinReplicas != nil {
			gs.MinReplicas = *b.MinReplicas
		}
		if b := bounds[i]; b.MaxReplicas != nil {
			gs.MaxReplicas = *b.MaxReplicas
		}
		fail := func(field string, err error) error {
			return &fleet.FileError{File: path, Group: i, Name: g.Name, Field: field, Err: err}
		}
		switch {
		case gs.MinReplicas > gs.MaxReplicas:
			return nil, fail("min_replicas", fmt.Errorf("%d: above the group's max_replicas %d", gs.MinReplicas, gs.MaxReplicas))
		case gs.InitialReplicas < gs.MinReplicas || gs.InitialReplicas > gs.MaxReplicas:
			return nil, fail("replicas", runparams.Errorf("%d: with %s, the group's initial size: expected a count from its min_replicas %d to its max_replicas %d", gs.InitialReplicas, runparams.Setting("autoscale"), gs.MinReplicas, gs.MaxReplicas))
		}
		if total += gs.MaxReplicas; total > fleet.MaxReplicas {
			return nil, fail("max_replicas", fmt.Errorf("the groups' max_replicas pass %d", fleet.MaxReplicas))
		}
		sc.Groups = append(sc.Groups, gs)
	}
	return sc, nil
}

// groupPlanner returns the plain oracle's planner of a group of the
// fleet (fleet.AutoscaleOptions.Plan), by the group's index.
type groupPlanner func(group int) func(windowS, attainment float64) (*fleet.Schedule, error)

// plainOracleGroups refuses the plain oracle for a fleet file other than
// one prefill and one decode group (a usage error, exit 2): it plans one
// group, or the two pools of a disaggregated fleet.
func (f *Fleet) plainOracleGroups(groups []fleet.Group) error {
	if f.Path == "" || !fleet.IsPlannedOracle(f.Scale.Policy) {
		return nil
	}
	if fleet.Disaggregated(groups) && len(groups) == 2 {
		return nil
	}
	return &runparams.LateUsageError{Err: runparams.Errorf("%s %s: plans one count for one group, or one per pool for a fleet of one prefill and one decode group: with this %s, give each group's plan as oracle:FILE", runparams.Setting("autoscale"), f.Scale.Policy, runparams.Setting("fleet"))}
}

// oraclePlans returns the plain oracle's planners for the groups of c's
// fleet: its one group's (a fleet without a file), or, for a fleet of a
// prefill and a decode group, each pool's plan as capacity
// --disaggregated --over-time makes them, worked out once for both. The
// trace is loaded into *loaded for the run.
func (c *Config) oraclePlans(ctx context.Context, groups []fleet.Group, loaded **plant.Workload) groupPlanner {
	if !fleet.Disaggregated(groups) {
		plan := c.oraclePlan(ctx, groups[0], loaded)
		return func(int) func(windowS, attainment float64) (*fleet.Schedule, error) { return plan }
	}
	type key struct{ windowS, attainment float64 }
	pools := map[key][2]*fleet.Schedule{}
	return func(group int) func(windowS, attainment float64) (*fleet.Schedule, error) {
		return func(windowS, attainment float64) (*fleet.Schedule, error) {
			k := key{windowS, attainment}
			plans, ok := pools[k]
			if !ok {
				var err error
				if plans, err = c.planPools(ctx, groups, loaded, windowS, attainment); err != nil {
					return nil, err
				}
				pools[k] = plans
			}
			if groups[group].Role == fleet.RoleDecode {
				return plans[1], nil
			}
			return plans[0], nil
		}
	}
}

// oraclePlan returns the plain oracle's planner (fleet.AutoscaleOptions.Plan)
// for the one group of c's fleet: it loads the trace, keeping it in
// *loaded for the run, and plans it as capacity --over-time does, with
// the run's plant, router, scheduler, controller, objectives and service
// model, up to --max-replicas. Windows no fleet within --max-replicas
// serves at the target take the plan's best, with a warning.
func (c *Config) oraclePlan(ctx context.Context, unit fleet.Group, loaded **plant.Workload) func(windowS, attainment float64) (*fleet.Schedule, error) {
	return func(windowS, attainment float64) (*fleet.Schedule, error) {
		workload, err := c.loadTrace()
		if err != nil {
			return nil, err
		}
		*loaded = &workload
		plan, err := capacity.RunOverTime(ctx, workload.Requests, c.oracleStudy(unit, attainment), windowS, c.oracleJobs(), nil)
		if err := c.planned(err); err != nil {
			return nil, err
		}
		return capacity.PlanSchedule(plan, plannedLabel(windowS, attainment, ""))
	}
}

// planPools plans the prefill and decode pools of a fleet of one group of
// each, as capacity --disaggregated --over-time does (the mixed fleet of
// its search is the prefill group's, without its role or controller),
// and returns their schedules.
func (c *Config) planPools(ctx context.Context, groups []fleet.Group, loaded **plant.Workload, windowS, attainment float64) ([2]*fleet.Schedule, error) {
	var out [2]*fleet.Schedule
	workload, err := c.loadTrace()
	if err != nil {
		return out, err
	}
	*loaded = &workload
	pools := slices.Clone(groups)
	if pools[0].Role == fleet.RoleDecode {
		pools[0], pools[1] = pools[1], pools[0]
	}
	mixed := pools[0]
	mixed.Name, mixed.Role = "mixed", ""
	for i := range pools {
		pools[i].Replicas = 1
	}
	_, dplan, err := capacity.RunDisaggOverTime(ctx, workload.Requests, c.oracleStudy(mixed, attainment), pools, c.Fleet.Link, windowS, c.oracleJobs(), nil)
	// The mixed windows only bound the pools' search: the warning is of
	// the pools' plan.
	if unreachable := (*capacity.UnreachableWindowsError)(nil); errors.As(err, &unreachable) {
		err = nil
		if n := dplan.UnreachableWindows; n > 0 {
			err = &capacity.UnreachableWindowsError{Windows: n, Of: len(dplan.Windows), Target: attainment, Disaggregated: true}
		}
	}
	if err := c.planned(err); err != nil {
		return out, err
	}
	prefill, decode := dplan.ScheduleCSVs()
	if out[0], err = fleet.ParseSchedule(plannedLabel(windowS, attainment, fleet.RolePrefill), prefill); err != nil {
		return out, err
	}
	out[1], err = fleet.ParseSchedule(plannedLabel(windowS, attainment, fleet.RoleDecode), decode)
	return out, err
}

// oracleStudy is the capacity study the plain oracle plans with: the run's
// plant, router, scheduler, controller, objectives and service model,
// unit's fleet (one replica, the run's controller), up to --max-replicas.
func (c *Config) oracleStudy(unit fleet.Group, attainment float64) capacity.Capacity {
	router := c.Fleet.Router
	if router == "" {
		router = fleet.RoundRobinName
	}
	opt := c.options()
	unit.Replicas, unit.Controller = 1, ""
	return capacity.Capacity{
		Plant: c.Plant, Unit: []fleet.Group{unit}, Router: router, RouterSeed: c.Fleet.RouterSeed,
		Controllers: []string{c.Controller}, SLO: opt.SLO, Engine: opt.Engine, Service: opt.Service, Sessions: c.sessions,
		ControllerOptions: runparams.ControllerOptions(c.ExecTimeoutS, c.Stderr),
		Search:            capacity.SearchSettings{Target: attainment, MaxReplicas: c.Fleet.Scale.MaxReplicas},
	}
}

// oracleJobs is --jobs for the plain oracle's planning (0: every core).
func (c *Config) oracleJobs() int {
	if c.Fleet.Jobs == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return c.Fleet.Jobs
}

// planned is the plain oracle's planning error err as the run reports it:
// windows no fleet within --max-replicas serves at the target take the
// plan's best, with a warning; another error names the setting.
func (c *Config) planned(err error) error {
	var unreachable *capacity.UnreachableWindowsError
	switch {
	case errors.As(err, &unreachable):
		c.Stderr.Warnf("servesim: warning: %s %s: %v; those windows plan the fleet nearest the target\n", runparams.Setting("autoscale"), c.Fleet.Scale.Policy, err)
	case err != nil:
		return runparams.Errorf("%s %s: planning: %w", runparams.Setting("autoscale"), c.Fleet.Scale.Policy, err)
	}
	return nil
}

// plannedLabel names a plan the plain oracle made, as its schedule's
// path: its windows and target, and the pool it is for ("" for a fleet
// without pools).
func plannedLabel(windowS, attainment float64, pool string) string {
	label := "(planned: " + strconv.FormatFloat(windowS, 'g', -1, 64) + " s windows at " + strconv.FormatFloat(attainment, 'g', -1, 64) + " attainment"
	if pool != "" {
		label += ", " + pool + " pool"
	}
	return label + ")"
}

// mostUp is the most replicas the elastic fleet holds at once: the sum of
// its groups' maxima (bounds, from its fleet file; --max-replicas without
// one).
func (s *Scale) mostUp(bounds []fleet.Bounds) int {
	if bounds == nil {
		return s.MaxReplicas
	}
	n := 0
	for _, b := range bounds {
		if b.MaxReplicas != nil {
			n += *b.MaxReplicas
		} else {
			n += s.MaxReplicas
		}
	}
	return n
}
