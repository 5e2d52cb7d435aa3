package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/profile"
)

// validateProfileOptions are the flags and arguments of validate-profile.
type validateProfileOptions struct {
	Paths           []string
	Format          string
	RequireMeasured bool
	Output          outputOptions
}

// newValidateProfileCmd builds validate-profile; runF replaces the run
// function in tests of flag parsing.
func newValidateProfileCmd(s *streams, runF func(*validateProfileOptions) error) *cobra.Command {
	opts := &validateProfileOptions{}
	cmd := &cobra.Command{
		Use:     "validate-profile PATH...",
		Short:   "Check GPU profiles and measured NVIDIA L4 bundles, fail-closed",
		Long:    help("validate-profile"),
		Example: help("validate-profile.example"),
		Args:    cobra.MinimumNArgs(1),
		RunE: checkThenRun(opts, func(_ *cobra.Command, args []string) error {
			opts.Paths = args
			for _, p := range args {
				if p == "-" {
					return usageErrorf("validate-profile: PATH \"-\": a profile is read from files, not stdin (its manifest and bundle files sit beside it)")
				}
			}
			return nil
		}, runF, func(_ context.Context, o *validateProfileOptions) error { return runValidateProfile(s, o) }),
	}
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or text (one sha256sum -c style line per check)", "json", "text")
	cmd.Flags().BoolVar(&opts.RequireMeasured, "require-measured", false, "count a profile that is not a validated measured_l4 bundle as invalid")
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func runValidateProfile(s *streams, opts *validateProfileOptions) error {
	result, failed := profile.NewVerdicts(opts.Paths, opts.RequireMeasured)
	var err error
	if opts.Format == "text" {
		err = writeBytes(s, opts.Output, result.Text())
	} else {
		err = writeJSON(s, opts.Output, result)
	}
	if err != nil || failed == nil {
		return err
	}
	return fmt.Errorf("%w: %w", errValidationFailed, failed)
}
