package runparams

import (
	"errors"
	"io"
	"math"
	"time"

	"servesim/internal/limits"
	"servesim/internal/plant"
)

// The settings the work of a run follows from, which a limit's error names.
const (
	maxSimTime = Setting("max-sim-time")
	timeStep   = Setting("time-step")
	maxSteps   = Setting("max-steps")
	stride     = Setting("stride")
	plot       = Setting("plot")
)

// ExecTimeoutExpected is what exec-timeout accepts.
const ExecTimeoutExpected = "a positive number of seconds"

// CheckExecTimeout refuses an exec-timeout that is not a positive number
// of seconds.
func CheckExecTimeout(seconds float64) error {
	if !(seconds > 0) || math.IsInf(seconds, 0) {
		return Errorf("%s %v: expected %s", Setting("exec-timeout"), seconds, ExecTimeoutExpected)
	}
	return nil
}

// ControllerOptions are the controller settings of a run: exec-timeout
// (at least a nanosecond, at most what a time.Duration holds) and where an
// exec: child's stderr goes.
func ControllerOptions(seconds float64, stderr io.Writer) plant.ControllerOptions {
	timeout := time.Duration(math.MaxInt64)
	if ns := seconds * float64(time.Second); ns < float64(math.MaxInt64) {
		timeout = max(time.Nanosecond, time.Duration(ns))
	}
	return plant.ControllerOptions{ExecTimeout: timeout, ExecStderr: stderr}
}

// CheckWork refuses a run of the plant p under opt whose steps or kept
// trajectory would pass a limit: max-steps must be at least 1, and a
// *plant.LimitError becomes a *FieldError naming the settings the work
// follows from, the limit and how to stay within it; drawn says that the
// run keeps every step to draw it (plot).
func CheckWork(p plant.Plant, opt plant.Options, drawn bool) error {
	if !(opt.MaxSteps >= 1) || math.IsInf(opt.MaxSteps, 0) {
		return Errorf("%s %v: expected a number of steps of at least 1", maxSteps, opt.MaxSteps)
	}
	return namedLimit(plant.CheckWork(p, opt), drawn)
}

// CheckFleetWork is CheckWork for a fleet of replicas replicas of the
// plant p, all held at once: their trajectories together within the
// trajectory limit, their prefix caches together within
// plant.MaxLiveKVBlocks (plant.CheckPlantsAtOnce); the error names the
// settings. A zero opt.MaxSteps is plant.DefaultMaxSteps (CheckWork checks
// a max-steps given).
func CheckFleetWork(p plant.Plant, opt plant.Options, replicas int, drawn bool) error {
	return namedLimit(plant.CheckPlantsAtOnce(p, opt, replicas), drawn)
}

// CheckLiveKVBlocks refuses plants plants of p with the engine options o
// held at once whose prefix caches together would allocate more than
// plant.MaxLiveKVBlocks blocks; the error names the settings.
func CheckLiveKVBlocks(p plant.Plant, o plant.EngineOptions, plants int) error {
	return namedLimit(plant.CheckLiveKVBlocks(p, o, plants), false)
}

// namedLimit words a *plant.LimitError with the settings the work follows
// from, the limit and how to stay within it; any other error is returned
// as it is.
func namedLimit(err error, drawn bool) error {
	var le *plant.LimitError
	if !errors.As(err, &le) {
		return err
	}
	if le.Limit == plant.LimitLiveKVBlocks {
		return Errorf("%d replicas with %s hold %s KV blocks at once: more than the limit of %d (about %s; use fewer replicas, a smaller %s or a larger %s)",
			le.Plants, Setting("prefix-cache"), plant.FormatCount(le.Value, le.Max), plant.MaxLiveKVBlocks, limits.FormatBytes(plant.MaxLiveKVBlocks*plant.KVBlockBytes),
			Setting("kv-capacity"), Setting("kv-block-tokens"))
	}
	steps := "%s %g / %s %g = %s simulation steps"
	args := []any{maxSimTime, le.MaxSimulationTimeS, timeStep, le.TimeStepS, plant.FormatCount(le.Steps(), le.Max)}
	switch {
	case le.Limit == plant.LimitSteps:
		return Errorf(steps+": more than %s %g (raise %s, shorten %s or lengthen %s)", append(args, maxSteps, le.Max, maxSteps, maxSimTime, timeStep)...)
	case drawn && le.Plants > 1:
		return Errorf("%s draws every step of every replica: "+steps+" in %d replicas: more than the trajectory limit of %g samples (shorten %s, lengthen %s, use fewer replicas or leave out %s)",
			append(append([]any{plot}, args...), le.Plants, le.Max, maxSimTime, timeStep, plot)...)
	case drawn:
		return Errorf("%s draws every step: "+steps+": more than the trajectory limit of %g samples (shorten %s, lengthen %s or leave out %s)",
			append(append([]any{plot}, args...), le.Max, maxSimTime, timeStep, plot)...)
	}
	if le.Plants > 1 {
		return Errorf(steps+" at %s %d keep %s trajectory samples in %d replicas: more than the limit of %g (use %s, or %s %g or more)",
			append(args, stride, le.Stride, plant.FormatCount(le.Value, le.Max), le.Plants, le.Max, Setting("summary"), stride, plant.MinFleetStride(le.Steps(), le.Plants))...)
	}
	return Errorf(steps+" at %s %d keep %s trajectory samples: more than the limit of %g (use %s, or %s %g or more)",
		append(args, stride, le.Stride, plant.FormatCount(le.Value, le.Max), le.Max, Setting("summary"), stride, plant.MinStride(le.Steps()))...)
}
