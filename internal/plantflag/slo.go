package plantflag

import (
	"strconv"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// sloUsage is the help of each SLO flag of simulate, sweep and capacity,
// by name (runparams.SLOSettings).
var sloUsage = map[runparams.Setting]string{
	"ttft-slo": "time-to-first-token objective in `seconds` (default: the profile's, 2 x its baseline TTFT)",
	"tpot-slo": "time-per-output-token objective in `seconds` (default: the profile's, 1.5 x its baseline TPOT)",
	"e2e-slo":  "end-to-end latency objective in `seconds`, arrival to completion (default: none)",
}

// AddSLO binds --ttft-slo, --tpot-slo and --e2e-slo to slo; a flag not
// given leaves its field zero (the profile's objective, or none for e2e).
func AddSLO(cmd *cobra.Command, slo *plant.SLO) {
	for _, f := range runparams.SLOSettings {
		cmd.Flags().Var((*sloSeconds)(f.Field(slo)), string(f.Name), sloUsage[f.Name])
	}
}

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
func (v *sloSeconds) Expected() string { return runparams.SLOExpected }

// CheckSLO requires every SLO flag given to be a finite positive number of
// seconds: a flag given as 0 is refused too (leaving it out is the
// default).
func CheckSLO(cmd *cobra.Command, slo *plant.SLO) error {
	return runparams.CheckSLO(slo, cmd.Flags().Changed)
}
