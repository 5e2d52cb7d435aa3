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
	var result profile.Verdicts
	var failures []string
	for _, arg := range opts.Paths {
		v := profile.NewVerdict(profile.ResolvePath(arg), opts.RequireMeasured)
		if !v.Valid {
			failures = append(failures, *v.Error)
		}
		result.Bundles = append(result.Bundles, v)
	}
	var err error
	if opts.Format == "text" {
		err = writeBytes(s, opts.Output, result.Text())
	} else {
		err = writeJSON(s, opts.Output, result)
	}
	if err != nil {
		return err
	}
	switch {
	case len(failures) == 0:
		return nil
	case len(opts.Paths) == 1:
		return fmt.Errorf("%w: %s", errValidationFailed, failures[0])
	}
	return fmt.Errorf("%w: %d of %d profiles are invalid; first: %s", errValidationFailed, len(failures), len(opts.Paths), failures[0])
}
