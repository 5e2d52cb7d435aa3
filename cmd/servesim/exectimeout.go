package main

import (
	"math"
	"time"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// addExecTimeoutFlag defines --exec-timeout, the patience with an
// exec:COMMAND controller, on a command with --controller.
func addExecTimeoutFlag(cmd *cobra.Command, seconds *float64) {
	*seconds = plant.DefaultExecTimeout.Seconds()
	cmd.Flags().Float64Var(seconds, "exec-timeout", *seconds,
		"an exec:COMMAND controller that takes longer than `S` seconds to read an observation or to answer it ends the run")
}

// checkExecTimeout refuses an --exec-timeout that is not a positive number
// of seconds.
func checkExecTimeout(seconds float64) error {
	if !(seconds > 0) || math.IsInf(seconds, 0) {
		return badFlagValue("exec-timeout", seconds)
	}
	return nil
}

// controllerOptions are the controller settings of a run: --exec-timeout
// (at least a nanosecond, at most what a time.Duration holds) and the
// command's stderr for an exec: child's.
func controllerOptions(s *streams, seconds float64) plant.ControllerOptions {
	timeout := time.Duration(math.MaxInt64)
	if ns := seconds * float64(time.Second); ns < float64(math.MaxInt64) {
		timeout = max(time.Nanosecond, time.Duration(ns))
	}
	return plant.ControllerOptions{ExecTimeout: timeout, ExecStderr: s.Err}
}
