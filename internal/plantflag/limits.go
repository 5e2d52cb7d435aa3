package plantflag

import (
	"github.com/spf13/cobra"

	"servesim/internal/execsession"
	"servesim/internal/plant"
)

// AddExecTimeout defines --exec-timeout, the patience with an
// exec:COMMAND controller, on a command with --controller.
func AddExecTimeout(cmd *cobra.Command, seconds *float64) {
	*seconds = execsession.DefaultTimeout.Seconds()
	cmd.Flags().Float64Var(seconds, "exec-timeout", *seconds,
		"an exec:COMMAND controller that takes longer than `S` seconds to read an observation or to answer it ends the run")
}

// AddMaxSteps defines --max-steps.
func AddMaxSteps(cmd *cobra.Command, maxSteps *float64) {
	cmd.Flags().Float64Var(maxSteps, "max-steps", plant.DefaultMaxSteps,
		"refuse a run that could take more than `N` simulation steps (--max-sim-time / --time-step)")
}
