package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/profile"
)

func init() {
	subcommands = append(subcommands, subcommand{"validate-profile", func(s *streams) *cobra.Command { return newValidateProfileCmd(s, nil) }})
}

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
		Use:   "validate-profile PATH...",
		Short: "Check GPU profiles and measured NVIDIA L4 bundles, fail-closed",
		Long: `validate-profile loads each profile the way simulate does and reports every
check: PATH is a profile CSV or a folder holding l4_profile.csv. A measured_l4
profile must be a complete bundle (l4_profile.csv, l4_profile_all_requested.csv,
l4_profile_raw.csv, l4_telemetry.csv and the manifest) that passes every check:
pinned GPU, model, revision and vLLM image, SHA-256 of every listed file, the
clock sweep, the condition and repetition matrix, telemetry metadata and the
batch-balanced realized-clock medians.

Exit codes: 0 every profile is valid, 1 any is not, 2 usage error.`,
		Example: `  servesim validate-profile ./bundle
  servesim validate-profile --require-measured --format text ./bundle/l4_profile.csv`,
		Args: cobra.MinimumNArgs(1),
		RunE: checkThenRun(opts, func(_ *cobra.Command, args []string) error {
			opts.Paths = args
			if opts.Format != "json" && opts.Format != "text" {
				return usageErrorf("--format %q: expected json or text", opts.Format)
			}
			for _, p := range args {
				if p == "-" {
					return usageErrorf("validate-profile: PATH \"-\": a profile is read from files, not stdin (its manifest and bundle files sit beside it)")
				}
			}
			return nil
		}, runF, func(o *validateProfileOptions) error { return runValidateProfile(s, o) }),
	}
	cmd.Flags().StringVar(&opts.Format, "format", "json", "output format: json or text (one sha256sum -c style line per check)")
	cmd.Flags().BoolVar(&opts.RequireMeasured, "require-measured", false, "count a profile that is not a validated measured_l4 bundle as invalid")
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// profileVerdict is one PATH's entry in the result.
type profileVerdict struct {
	Path                   string          `json:"path"`
	Valid                  bool            `json:"valid"`
	ProfileStatus          string          `json:"profile_status"`
	MeasurementValidated   bool            `json:"measurement_validated"`
	SourceLabel            string          `json:"source_label"`
	ProfileCSVSHA256       string          `json:"profile_csv_sha256"`
	ManifestSHA256         string          `json:"manifest_sha256"`
	ClockLevelsMHz         []float64       `json:"clock_levels_mhz"`
	RealizedClockLevelsMHz []float64       `json:"realized_clock_levels_mhz"`
	Checks                 []profile.Check `json:"checks"`
	Error                  *string         `json:"error"`
}

// validateProfileResult is validate-profile's output.
type validateProfileResult struct {
	Bundles []profileVerdict `json:"bundles"`
}

// requireMeasuredCheck names the check --require-measured adds.
const requireMeasuredCheck = "require_measured"

func runValidateProfile(s *streams, opts *validateProfileOptions) error {
	var result validateProfileResult
	var failures []string
	for _, arg := range opts.Paths {
		v := verdictFor(profile.ResolvePath(arg), opts.RequireMeasured)
		if !v.Valid {
			failures = append(failures, *v.Error)
		}
		result.Bundles = append(result.Bundles, v)
	}
	var err error
	if opts.Format == "text" {
		err = writeBytes(s, opts.Output, formatVerdicts(result.Bundles))
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

// verdictFor validates one profile.
func verdictFor(path string, requireMeasured bool) profileVerdict {
	r := profile.Validate(path)
	v := profileVerdict{
		Path:             path,
		ProfileStatus:    r.Status,
		SourceLabel:      r.SourceLabel,
		ProfileCSVSHA256: r.ProfileCSVSHA256,
		ManifestSHA256:   r.ManifestSHA256,
		Checks:           r.Checks,
	}
	err := r.Err
	if p := r.Profile; p != nil {
		v.MeasurementValidated = p.IsMeasured()
		v.ClockLevelsMHz = p.ClockMHz
		v.RealizedClockLevelsMHz = p.RealizedClockLevelsMHz()
		if requireMeasured {
			if p.IsMeasured() {
				v.Checks = append(v.Checks, profile.Check{Name: requireMeasuredCheck, Status: profile.CheckOK, Detail: "validated measured_l4 bundle"})
			} else {
				detail := fmt.Sprintf("profile_status %q is not a validated measured_l4 bundle (--require-measured)", p.Status)
				v.Checks = append(v.Checks, profile.Check{Name: requireMeasuredCheck, Status: profile.CheckFailed, Detail: detail})
				err = fmt.Errorf("profile %s: %s", path, detail)
			}
		}
	}
	v.Valid = err == nil
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	}
	return v
}

// formatVerdicts is the text format: like sha256sum -c, one line per check
// ("PATH: CHECK: OK", "... FAILED: why", "... NOT RUN: why") and a verdict
// line per profile.
func formatVerdicts(verdicts []profileVerdict) []byte {
	var b bytes.Buffer
	for _, v := range verdicts {
		for _, c := range v.Checks {
			switch c.Status {
			case profile.CheckOK:
				fmt.Fprintf(&b, "%s: %s: OK\n", v.Path, c.Name)
			case profile.CheckFailed:
				fmt.Fprintf(&b, "%s: %s: FAILED: %s\n", v.Path, c.Name, oneLine(c.Detail))
			default:
				fmt.Fprintf(&b, "%s: %s: NOT RUN: %s\n", v.Path, c.Name, oneLine(c.Detail))
			}
		}
		if v.Valid {
			kind := "not a measured profile"
			if v.MeasurementValidated {
				kind = "measurement validated"
			}
			fmt.Fprintf(&b, "%s: VALID (%s, %s)\n", v.Path, v.ProfileStatus, kind)
		} else {
			fmt.Fprintf(&b, "%s: INVALID: %s\n", v.Path, strings.TrimSpace(oneLine(*v.Error)))
		}
	}
	return b.Bytes()
}
