package simrun

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
)

// runFleet simulates the fleet of c; prof is the command-line profile,
// read from profilePath. The trace is read while the fleet runs
// (fleet.RunStreamContext) when it can be (see run) and nothing needs
// every request's record (Summary, without a request log or a figure);
// otherwise it is loaded whole first.
func (c *Config) runFleet(ctx context.Context, prof *profile.Profile, profilePath string) (*Result, error) {
	var err error
	groups := []fleet.Group{{
		Name: "group0", Replicas: c.Fleet.Replicas, Profile: prof, ProfilePath: profilePath,
		Scheduler: c.Scheduler, Controller: c.Controller,
	}}
	var bounds []fleet.Bounds // an elastic fleet file's
	if c.Fleet.Path != "" {
		defaults := fleet.GroupDefaults{
			Profile: prof, ProfilePath: profilePath, Replicas: c.Fleet.Replicas,
			Scheduler: c.Scheduler, Controller: c.Controller,
		}
		if c.Fleet.Scale.Policy != "" {
			groups, bounds, err = fleet.ReadElasticFile(c.Fleet.Path, defaults, profile.Load)
		} else {
			groups, err = fleet.ReadFile(c.Fleet.Path, defaults, profile.Load)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := c.Fleet.plainOracleGroups(groups); err != nil {
		return nil, err
	}
	if err := c.checkFleetWork(groups, bounds); err != nil {
		return nil, err
	}
	var scaling *fleet.Scaling
	var planned *plant.Workload // the trace, loaded to plan the plain oracle
	if c.Fleet.Scale.Policy != "" {
		plan := c.oraclePlans(ctx, groups, &planned)
		if scaling, err = c.Fleet.Scale.scaling(runparams.ControllerOptions(c.ExecTimeoutS, c.Stderr), groups, bounds, c.Fleet.Path, plan); err != nil {
			return nil, err
		}
		if c.Fleet.Path == "" {
			// The group's replicas are those the autoscaler starts; its
			// size the one --normalize takes.
			groups[0].Replicas = max(1, scaling.InitialReplicas)
		}
	}
	router, _ := fleet.NewRouter(c.Fleet.Router, c.Fleet.RouterSeed)
	disaggregation := c.Fleet.disaggregation(groups)
	var mu sync.Mutex
	controllers := map[int]plant.ClockController{}
	var built func(int, plant.ClockController) // with --verbose: keeps each replica's controller, timing its solves
	if c.Verbose {
		built = func(k int, ctrl plant.ClockController) {
			c.timeSolves(ctrl)
			mu.Lock()
			controllers[k] = ctrl
			mu.Unlock()
		}
	}
	run := fleet.RunConfig{
		Config: fleet.Config{
			Plant:             c.Plant,
			Groups:            groups,
			Router:            router,
			Options:           c.options(), // taken again once a trace is loaded, with its hash ids
			Jobs:              c.Fleet.Jobs,
			ControllerBuilt:   built,
			ControllerOptions: runparams.ControllerOptions(c.ExecTimeoutS, c.Stderr),
			Scaling:           scaling,
			Disaggregation:    disaggregation,
		},
		Normalize:   c.Normalize,
		ProfilePath: profilePath,
		Version:     c.Version,
	}
	var report *fleet.Report
	if c.streams() && run.Summary && !c.Requests && disaggregation == nil && planned == nil {
		report, err = fleet.RunStreamContext(ctx, c.source(), run)
	} else {
		var workload plant.Workload
		if planned != nil {
			workload = *planned
		} else if workload, err = c.loadTrace(); err != nil {
			return nil, err
		}
		run.Options = c.options() // with the trace's hash ids
		run.Sessions = c.sessions
		run.NormalizeInPlace = true // the trace was loaded for this run alone
		report, err = fleet.RunContext(ctx, workload, run)
	}
	if err != nil {
		return nil, err
	}
	warnNormalizeUnchanged(c.Stderr, c.Normalize, report.Dilation)
	warnArrivalsPastMaxSimTime(c.Stderr, report.LastArrivalS, report.Provenance.RequestsLoaded, c.Plant.MaxSimulationTimeS, report.Metrics.UnfinishedRequestsAtEnd)
	for _, k := range slices.Sorted(maps.Keys(controllers)) {
		c.reportSolveTimes(fmt.Sprintf("replica %d: ", k), controllers[k])
	}
	return &Result{cfg: *c, fleet: report}, nil
}

// checkFleetWork refuses, before the trace is read, a fleet whose replicas
// together would keep too many trajectory samples or prefix-cache blocks
// (runparams.CheckFleetWork; with Figure, every step is kept).
func (c *Config) checkFleetWork(groups []fleet.Group, bounds []fleet.Bounds) error {
	var n int
	var err error
	if c.Fleet.Scale.Policy != "" {
		n = c.Fleet.Scale.mostUp(bounds) + 1 // its groups may start with none
	} else if n, err = fleet.Size(groups); err != nil {
		return err
	}
	err = runparams.CheckFleetWork(c.Plant, c.options(), n, c.Figure)
	if err != nil && c.Fleet.Path != "" {
		return runparams.Errorf("%s %s: %w", runparams.Setting("fleet"), c.Fleet.Path, err)
	}
	return err
}

// disaggregation is the transfers' setting of a fleet of groups with
// prefill and decode roles (nil for any other fleet): the link of
// --kv-transfer-bandwidth and --kv-transfer-latency, and a decode router
// of --router's kind, seeded one past --router-seed.
func (f *Fleet) disaggregation(groups []fleet.Group) *fleet.Disaggregation {
	if !fleet.Disaggregated(groups) {
		return nil
	}
	decode, _ := fleet.NewRouter(f.Router, f.RouterSeed+1)
	return &fleet.Disaggregation{Link: f.Link, DecodeRouter: decode}
}
