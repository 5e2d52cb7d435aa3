package main

import (
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/fleet"
	"servesim/internal/simrun"
)

// addFleetFlags binds the fleet flags to o.
func addFleetFlags(cmd *cobra.Command, o *simrun.Fleet) {
	f := cmd.Flags()
	f.IntVar(&o.Replicas, "replicas", 1, "simulate a fleet of `N` replicas of the profile behind --router, 1 to 4096 (with --fleet: the default of a group)")
	f.StringVar(&o.Path, "fleet", "", "simulate the fleet of a JSON `FILE`: a list of groups {\"name\", \"profile\", \"replicas\", \"scheduler\", \"controller\"}; a missing field takes the flag's value")
	f.StringVar(&o.Router, "router", fleet.RoundRobinName, "how a fleet routes requests: "+strings.Join(fleet.RouterNames, ", "))
	f.Uint64Var(&o.RouterSeed, "router-seed", fleet.DefaultRouterSeed, "seed of the random router")
	f.IntVar(&o.Jobs, "jobs", 0, "replicas simulated at once with a state-free router (round-robin, random; default: all cores)")
}

// checkFleet validates the fleet flags and decides whether the run is a
// fleet's: one is asked for with --fleet, --replicas above 1, --router or
// --router-seed.
func checkFleet(cmd *cobra.Command, o *simrun.Fleet, normalize bool) error {
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
	o.Enabled = o.Path != "" || o.Replicas > 1 || flags.Changed("router") || flags.Changed("router-seed")
	return nil
}
