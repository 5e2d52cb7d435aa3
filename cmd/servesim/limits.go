package main

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
	"servesim/internal/sweep"
)

// maxStepsUsage documents --max-steps (simulate and sweep).
const maxStepsUsage = "refuse a run that could take more than `N` simulation steps (--max-sim-time / --time-step)"

// addMaxStepsFlag defines --max-steps.
func addMaxStepsFlag(cmd *cobra.Command, maxSteps *float64) {
	cmd.Flags().Float64Var(maxSteps, "max-steps", plant.DefaultMaxSteps, maxStepsUsage)
}

// checkMaxSteps validates --max-steps (exit 2).
func checkMaxSteps(maxSteps float64) error {
	if !(maxSteps >= 1) || math.IsInf(maxSteps, 0) {
		return usageErrorf("--max-steps %v: expected a number of steps of at least 1", maxSteps)
	}
	return nil
}

// checkSimulateWork refuses, before anything is read, a simulate run whose
// steps or kept trajectory would pass a limit (exit 2).
func checkSimulateWork(o *simulateOptions) error {
	if err := checkMaxSteps(o.MaxSteps); err != nil {
		return err
	}
	opt := plant.Options{Stride: o.Stride, Summary: o.Summary, MaxSteps: o.MaxSteps}
	if o.Plot.Path != "" {
		opt = plant.Options{Stride: 1, MaxSteps: o.MaxSteps} // the figure keeps every step
	}
	return workLimitError(plant.CheckWork(o.Plant, opt), o.Plot.Path != "")
}

// workLimitError turns a *plant.LimitError into a usage error naming the
// flags the work follows from, the limit and how to stay within it; plot
// says that --plot made the run keep every step. Other errors pass as they
// are.
func workLimitError(err error, plot bool) error {
	var le *plant.LimitError
	if !errors.As(err, &le) {
		return err
	}
	steps := fmt.Sprintf("--max-sim-time %g / --time-step %g = %s simulation steps", le.MaxSimulationTimeS, le.TimeStepS, plant.FormatCount(le.Steps(), le.Max))
	switch {
	case le.Limit == plant.LimitSteps:
		return usageErrorf("%s: more than --max-steps %g (raise --max-steps, shorten --max-sim-time or lengthen --time-step)", steps, le.Max)
	case plot:
		return usageErrorf("--plot draws every step: %s: more than the trajectory limit of %g samples (shorten --max-sim-time, lengthen --time-step or leave out --plot)", steps, le.Max)
	}
	return usageErrorf("%s at --stride %d keep %s trajectory samples: more than the limit of %g (use --summary, or --stride %g or more)",
		steps, le.Stride, plant.FormatCount(le.Value, le.Max), le.Max, plant.MinStride(le.Steps()))
}

// sweepLimitError turns a *sweep.LimitError into a usage error naming the
// axes' flags, their lengths and --max-cells. Other errors pass as they
// are.
func sweepLimitError(axes []sweep.Axis, err error) error {
	var le *sweep.LimitError
	if !errors.As(err, &le) {
		return err
	}
	names := make([]string, len(axes))
	for i, a := range axes {
		names[i] = "--" + a.Name
	}
	grid := fmt.Sprintf("the grid of %s = %s", strings.Join(names, " x "), le.Grid())
	switch {
	case le.Max == 0:
		return usageErrorf("sweep: %s: more than a sweep can index (%.2g)", grid, float64(math.MaxInt))
	case le.ShardCount > 1:
		return usageErrorf("sweep: shard %d/%d of %s holds %d runs: more than --max-cells %d (raise --max-cells or use more shards)",
			le.Shard, le.ShardCount, grid, le.ShardCells, le.Max)
	}
	return usageErrorf("sweep: %s: more than --max-cells %d (raise --max-cells or run it in shards with --shard I/N)", grid, le.Max)
}
