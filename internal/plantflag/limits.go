package plantflag

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"servesim/internal/limits"
	"servesim/internal/plant"
)

// ExecTimeoutExpected is what --exec-timeout accepts.
const ExecTimeoutExpected = "a positive number of seconds"

// AddExecTimeout defines --exec-timeout, the patience with an
// exec:COMMAND controller, on a command with --controller.
func AddExecTimeout(cmd *cobra.Command, seconds *float64) {
	*seconds = plant.DefaultExecTimeout.Seconds()
	cmd.Flags().Float64Var(seconds, "exec-timeout", *seconds,
		"an exec:COMMAND controller that takes longer than `S` seconds to read an observation or to answer it ends the run")
}

// CheckExecTimeout refuses an --exec-timeout that is not a positive number
// of seconds.
func CheckExecTimeout(seconds float64) error {
	if !(seconds > 0) || math.IsInf(seconds, 0) {
		return fmt.Errorf("--exec-timeout %v: expected %s", seconds, ExecTimeoutExpected)
	}
	return nil
}

// ControllerOptions are the controller settings of a run: --exec-timeout
// (at least a nanosecond, at most what a time.Duration holds) and where an
// exec: child's stderr goes.
func ControllerOptions(seconds float64, stderr io.Writer) plant.ControllerOptions {
	timeout := time.Duration(math.MaxInt64)
	if ns := seconds * float64(time.Second); ns < float64(math.MaxInt64) {
		timeout = max(time.Nanosecond, time.Duration(ns))
	}
	return plant.ControllerOptions{ExecTimeout: timeout, ExecStderr: stderr}
}

// AddMaxSteps defines --max-steps.
func AddMaxSteps(cmd *cobra.Command, maxSteps *float64) {
	cmd.Flags().Float64Var(maxSteps, "max-steps", plant.DefaultMaxSteps,
		"refuse a run that could take more than `N` simulation steps (--max-sim-time / --time-step)")
}

// CheckWork refuses a run of the plant p under opt whose steps or kept
// trajectory would pass a limit: --max-steps must be at least 1, and a
// *plant.LimitError becomes an error naming the flags the work follows
// from, the limit and how to stay within it; plot says that --plot made
// the run keep every step.
func CheckWork(p plant.Plant, opt plant.Options, plot bool) error {
	if !(opt.MaxSteps >= 1) || math.IsInf(opt.MaxSteps, 0) {
		return fmt.Errorf("--max-steps %v: expected a number of steps of at least 1", opt.MaxSteps)
	}
	return flagNamedLimit(plant.CheckWork(p, opt), plot)
}

// CheckFleetWork is CheckWork for a fleet of replicas replicas of the
// plant p, all held at once: their trajectories together within the
// trajectory limit, their prefix caches together within
// plant.MaxLiveKVBlocks (plant.CheckPlantsAtOnce); the error names the
// flags. A zero opt.MaxSteps is plant.DefaultMaxSteps (CheckWork checks a
// --max-steps given).
func CheckFleetWork(p plant.Plant, opt plant.Options, replicas int, plot bool) error {
	return flagNamedLimit(plant.CheckPlantsAtOnce(p, opt, replicas), plot)
}

// CheckLiveKVBlocks refuses plants plants of p with the engine options o
// held at once whose prefix caches together would allocate more than
// plant.MaxLiveKVBlocks blocks; the error names the flags.
func CheckLiveKVBlocks(p plant.Plant, o plant.EngineOptions, plants int) error {
	return flagNamedLimit(plant.CheckLiveKVBlocks(p, o, plants), false)
}

// flagNamedLimit words a *plant.LimitError with the flags the work follows
// from, the limit and how to stay within it; any other error is returned
// as it is.
func flagNamedLimit(err error, plot bool) error {
	var le *plant.LimitError
	if !errors.As(err, &le) {
		return err
	}
	if le.Limit == plant.LimitLiveKVBlocks {
		return fmt.Errorf("%d replicas with --prefix-cache hold %s KV blocks at once: more than the limit of %d (about %s; use fewer replicas, a smaller --kv-capacity or a larger --kv-block-tokens)",
			le.Plants, plant.FormatCount(le.Value, le.Max), plant.MaxLiveKVBlocks, limits.FormatBytes(plant.MaxLiveKVBlocks*plant.KVBlockBytes))
	}
	steps := fmt.Sprintf("--max-sim-time %g / --time-step %g = %s simulation steps", le.MaxSimulationTimeS, le.TimeStepS, plant.FormatCount(le.Steps(), le.Max))
	switch {
	case le.Limit == plant.LimitSteps:
		return fmt.Errorf("%s: more than --max-steps %g (raise --max-steps, shorten --max-sim-time or lengthen --time-step)", steps, le.Max)
	case plot && le.Plants > 1:
		return fmt.Errorf("--plot draws every step of every replica: %s in %d replicas: more than the trajectory limit of %g samples (shorten --max-sim-time, lengthen --time-step, use fewer replicas or leave out --plot)", steps, le.Plants, le.Max)
	case plot:
		return fmt.Errorf("--plot draws every step: %s: more than the trajectory limit of %g samples (shorten --max-sim-time, lengthen --time-step or leave out --plot)", steps, le.Max)
	}
	if le.Plants > 1 {
		return fmt.Errorf("%s at --stride %d keep %s trajectory samples in %d replicas: more than the limit of %g (use --summary, or --stride %g or more)",
			steps, le.Stride, plant.FormatCount(le.Value, le.Max), le.Plants, le.Max, plant.MinFleetStride(le.Steps(), le.Plants))
	}
	return fmt.Errorf("%s at --stride %d keep %s trajectory samples: more than the limit of %g (use --summary, or --stride %g or more)",
		steps, le.Stride, plant.FormatCount(le.Value, le.Max), le.Max, plant.MinStride(le.Steps()))
}
