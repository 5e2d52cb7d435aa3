package main

import (
	"math"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// sloFlags are the SLO flags of simulate and capacity, in seconds: name,
// usage and the field they set.
var sloFlags = []struct {
	name, usage string
	field       func(*plant.SLO) *float64
}{
	{"ttft-slo", "time-to-first-token objective in `seconds` (default: the profile's, 2 x its baseline TTFT)", func(s *plant.SLO) *float64 { return &s.TTFTS }},
	{"tpot-slo", "time-per-output-token objective in `seconds` (default: the profile's, 1.5 x its baseline TPOT)", func(s *plant.SLO) *float64 { return &s.TPOTS }},
	{"e2e-slo", "end-to-end latency objective in `seconds`, arrival to completion (default: none)", func(s *plant.SLO) *float64 { return &s.E2ES }},
}

// addSLOFlags binds --ttft-slo, --tpot-slo and --e2e-slo to slo; a flag not
// given leaves its field zero (the profile's objective, or none for e2e).
func addSLOFlags(cmd *cobra.Command, slo *plant.SLO) {
	for _, f := range sloFlags {
		cmd.Flags().Float64Var(f.field(slo), f.name, 0, f.usage)
	}
}

// checkSLOFlags requires every SLO flag given to be a finite positive
// number of seconds (a usage error otherwise).
func checkSLOFlags(cmd *cobra.Command, slo *plant.SLO) error {
	for _, f := range sloFlags {
		v := *f.field(slo)
		if cmd.Flags().Changed(f.name) && !(v > 0 && !math.IsInf(v, 1)) {
			return usageErrorf("--%s %v: expected a finite positive number of seconds", f.name, v)
		}
	}
	return nil
}
