package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/reqlog"
)

// fleetOptions are the fleet flags of `servesim simulate`.
type fleetOptions struct {
	Replicas   int    // --replicas: replicas of the command-line profile (group default with --fleet)
	Path       string // --fleet: fleet file
	Router     string
	RouterSeed uint64
	Jobs       int // 0: GOMAXPROCS
	// enabled is set by check: a fleet document is asked for (--fleet,
	// --replicas above 1, --router or --router-seed).
	enabled bool
}

// addFleetFlags binds the fleet flags to o.
func addFleetFlags(cmd *cobra.Command, o *fleetOptions) {
	f := cmd.Flags()
	f.IntVar(&o.Replicas, "replicas", 1, "simulate a fleet of `N` replicas of the profile behind --router, 1 to 4096 (with --fleet: the default of a group)")
	f.StringVar(&o.Path, "fleet", "", "simulate the fleet of a JSON `FILE`: a list of groups {\"name\", \"profile\", \"replicas\", \"scheduler\", \"controller\"}; a missing field takes the flag's value")
	f.StringVar(&o.Router, "router", fleet.RoundRobinName, "how a fleet routes requests: "+strings.Join(fleet.RouterNames, ", "))
	f.Uint64Var(&o.RouterSeed, "router-seed", fleet.DefaultRouterSeed, "seed of the random router")
	f.IntVar(&o.Jobs, "jobs", 0, "replicas simulated at once with a state-free router (round-robin, random; default: all cores)")
}

// check validates the fleet flags (usage errors) and decides whether the
// run is a fleet's.
func (o *fleetOptions) check(cmd *cobra.Command, normalize bool) error {
	flags := cmd.Flags()
	if o.Replicas < 1 || o.Replicas > fleet.MaxReplicas {
		return usageErrorf("--replicas %d: expected a whole number from 1 to %d", o.Replicas, fleet.MaxReplicas)
	}
	if _, err := fleet.NewRouter(o.Router, o.RouterSeed); err != nil {
		return usageErrorf("--router %q: expected %s", o.Router, strings.Join(fleet.RouterNames, ", "))
	}
	if o.Jobs < 0 {
		return usageErrorf("--jobs %d: expected a nonnegative number (0: all cores)", o.Jobs)
	}
	if o.Path != "" && normalize {
		return usageErrorf("--normalize cannot be combined with --fleet: a fleet of several profiles has no single capacity to normalize to (use --replicas)")
	}
	o.enabled = o.Path != "" || o.Replicas > 1 || flags.Changed("router") || flags.Changed("router-seed")
	return nil
}

// runFleetSimulate simulates the fleet of the flags on workload; prof is the
// command-line profile, read from profilePath.
func runFleetSimulate(ctx context.Context, s *streams, o *simulateOptions, prof *profile.Profile, profilePath string, workload plant.Workload) error {
	groups := []fleet.Group{{
		Name: "group0", Replicas: o.Fleet.Replicas, Profile: prof, ProfilePath: profilePath,
		Scheduler: o.Scheduler, Controller: o.Controller,
	}}
	if o.Fleet.Path != "" {
		var err error
		groups, err = fleet.ReadFile(o.Fleet.Path, fleet.GroupDefaults{
			Profile: prof, ProfilePath: profilePath, Replicas: o.Fleet.Replicas,
			Scheduler: o.Scheduler, Controller: o.Controller,
		}, profile.Load)
		if err != nil {
			return err
		}
	}
	router, _ := fleet.NewRouter(o.Fleet.Router, o.Fleet.RouterSeed)
	report, err := fleet.RunContext(ctx, workload, fleet.RunConfig{
		Config: fleet.Config{
			Plant:   o.Plant,
			Groups:  groups,
			Router:  router,
			Options: o.plantOptions(),
			Jobs:    o.Fleet.Jobs,
		},
		Normalize:        o.Normalize,
		NormalizeInPlace: true, // the trace was loaded for this run alone
		ProfilePath:      profilePath,
		Version:          resolvedVersion(),
	})
	if err != nil {
		return err
	}
	warnArrivalsPastMaxSimTime(s, workload.Requests, o.Plant.MaxSimulationTimeS, report.Metrics.UnfinishedRequestsAtEnd)
	if err := o.RequestLog.write(s, func() (*reqlog.Log, error) { return reqlog.FromFleet(report.Result) }); err != nil {
		return err
	}
	if o.Plot.Path != "" {
		if err := o.Plot.write(report.Figure()); err != nil {
			return err
		}
		report.Thin(o.Stride, o.Summary)
	}
	switch o.Format {
	case "table":
		return writeBytes(s, o.Output, []byte(report.Table()))
	case formatVLLMBench:
		return writeFleetVLLMBench(s, o.Output, report, o.SLO)
	}
	return writeJSON(s, o.Output, report)
}
