package plantflag

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// sloFlags are the SLO flags of simulate, sweep and capacity, in seconds:
// name, usage and the field they set.
var sloFlags = []struct {
	name, usage string
	field       func(*plant.SLO) *float64
}{
	{"ttft-slo", "time-to-first-token objective in `seconds` (default: the profile's, 2 x its baseline TTFT)", func(s *plant.SLO) *float64 { return &s.TTFTSeconds }},
	{"tpot-slo", "time-per-output-token objective in `seconds` (default: the profile's, 1.5 x its baseline TPOT)", func(s *plant.SLO) *float64 { return &s.TPOTSeconds }},
	{"e2e-slo", "end-to-end latency objective in `seconds`, arrival to completion (default: none)", func(s *plant.SLO) *float64 { return &s.E2ESeconds }},
}

// AddSLO binds --ttft-slo, --tpot-slo and --e2e-slo to slo; a flag not
// given leaves its field zero (the profile's objective, or none for e2e).
func AddSLO(cmd *cobra.Command, slo *plant.SLO) {
	for _, f := range sloFlags {
		cmd.Flags().Var((*sloSeconds)(f.field(slo)), f.name, f.usage)
	}
}

// sloExpected is what an SLO flag accepts, in every command.
const sloExpected = "a finite positive number of seconds"

// sloSeconds is the value of one SLO flag: seconds, zero when not given.
type sloSeconds float64

// Set parses a number of seconds; the range is checked by CheckSLO.
func (v *sloSeconds) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*v = sloSeconds(x)
	return nil
}

// String returns the value in seconds.
func (v *sloSeconds) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

// Type names the value's kind in help.
func (v *sloSeconds) Type() string { return "seconds" }

// Expected describes the accepted values for flag errors.
func (v *sloSeconds) Expected() string { return sloExpected }

// CheckSLO requires every SLO flag given to be a finite positive number of
// seconds: a flag given as 0 is refused too (leaving it out is the
// default).
func CheckSLO(cmd *cobra.Command, slo *plant.SLO) error {
	return checkSLO(slo, func(name string, _ float64) bool { return cmd.Flags().Changed(name) })
}

// CheckSLOValues is CheckSLO for objectives set without flags: every
// nonzero one (zero: the default) must be a finite positive number of
// seconds. Its error names the flag as CheckSLO's does.
func CheckSLOValues(slo plant.SLO) error {
	return checkSLO(&slo, func(_ string, v float64) bool { return v != 0 })
}

// checkSLO requires every objective of slo that given reports (by flag
// name and value) to be a finite positive number of seconds.
func checkSLO(slo *plant.SLO, given func(name string, v float64) bool) error {
	for _, f := range sloFlags {
		v := *f.field(slo)
		if given(f.name, v) && !(v > 0 && !math.IsInf(v, 1)) {
			return fmt.Errorf("--%s %v: expected %s", f.name, v, sloExpected)
		}
	}
	return nil
}
