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
)

// runFleet simulates the fleet of c on workload; prof is the command-line
// profile, read from profilePath.
func (c *Config) runFleet(ctx context.Context, prof *profile.Profile, profilePath string, workload plant.Workload) (*Result, error) {
	groups := []fleet.Group{{
		Name: "group0", Replicas: c.Fleet.Replicas, Profile: prof, ProfilePath: profilePath,
		Scheduler: c.Scheduler, Controller: c.Controller,
	}}
	if c.Fleet.Path != "" {
		var err error
		groups, err = fleet.ReadFile(c.Fleet.Path, fleet.GroupDefaults{
			Profile: prof, ProfilePath: profilePath, Replicas: c.Fleet.Replicas,
			Scheduler: c.Scheduler, Controller: c.Controller,
		}, profile.Load)
		if err != nil {
			return nil, err
		}
	}
	router, _ := fleet.NewRouter(c.Fleet.Router, c.Fleet.RouterSeed)
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
	report, err := fleet.RunContext(ctx, workload, fleet.RunConfig{
		Config: fleet.Config{
			Plant:           c.Plant,
			Groups:          groups,
			Router:          router,
			Options:         c.options(),
			Jobs:            c.Fleet.Jobs,
			ControllerBuilt: built,
		},
		Normalize:        c.Normalize,
		NormalizeInPlace: true, // the trace was loaded for this run alone
		ProfilePath:      profilePath,
		Version:          c.Version,
	})
	if err != nil {
		return nil, err
	}
	requests := workload.Requests // normalized in place
	warnArrivalsPastMaxSimTime(c.Stderr, requests[len(requests)-1].ArrivalTimeS, len(requests), c.Plant.MaxSimulationTimeS, report.Metrics.UnfinishedRequestsAtEnd)
	for _, k := range slices.Sorted(maps.Keys(controllers)) {
		c.reportSolveTimes(fmt.Sprintf("replica %d: ", k), controllers[k])
	}
	return &Result{cfg: *c, fleet: report}, nil
}
