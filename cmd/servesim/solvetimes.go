package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// addVerboseFlag adds --verbose, which reports an mpc controller's solve
// times on stderr.
func addVerboseFlag(cmd *cobra.Command, verbose *bool) {
	cmd.Flags().BoolVar(verbose, "verbose", false, "report on stderr the wall-clock time of an mpc controller's solves (machine-dependent: never in the document)")
}

// timeSolves asks ctrl to measure its solves when verbose and it can.
func timeSolves(ctrl plant.ClockController, verbose bool) {
	if t, ok := ctrl.(plant.SolveTimer); ok && verbose {
		t.TimeSolves()
	}
}

// reportSolveTimes writes one line on stderr with the solve times ctrl
// measured (see timeSolves); nothing for a controller that does not solve.
func reportSolveTimes(s *streams, ctrl plant.ClockController, verbose bool) {
	t, ok := ctrl.(plant.SolveTimer)
	if !ok || !verbose {
		return
	}
	times := t.SolveTimes()
	if times == nil || times.Count == 0 {
		fmt.Fprintf(s.Err, "servesim: %s made no solve\n", ctrl.Name())
		return
	}
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Nanosecond) }
	fmt.Fprintf(s.Err, "servesim: %s: %d solves, wall clock on this machine: total %s, mean %s, p50 %s, p99 %s, max %s\n",
		ctrl.Name(), times.Count, round(times.Total), round(times.Total/time.Duration(times.Count)),
		round(times.Percentile(50)), round(times.Percentile(99)), round(times.Max))
}
