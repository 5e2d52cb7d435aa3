package runparams

import (
	"math"

	"servesim/internal/plant"
)

// SLOSetting is one SLO setting, in seconds: its name and the field it
// sets.
type SLOSetting struct {
	Name  Setting
	Field func(*plant.SLO) *float64
}

// SLOSettings are the SLO settings of simulate, sweep and capacity.
var SLOSettings = []SLOSetting{
	{"ttft-slo", func(s *plant.SLO) *float64 { return &s.TTFTSeconds }},
	{"tpot-slo", func(s *plant.SLO) *float64 { return &s.TPOTSeconds }},
	{"e2e-slo", func(s *plant.SLO) *float64 { return &s.E2ESeconds }},
}

// SLOExpected is what an SLO setting accepts, in every command.
const SLOExpected = "a finite positive number of seconds"

// CheckSLO requires every SLO setting given (by name) to be a finite
// positive number of seconds: one given as 0 is refused too (leaving it
// out is the default).
func CheckSLO(slo *plant.SLO, given func(name string) bool) error {
	return checkSLO(slo, func(name Setting, _ float64) bool { return given(string(name)) })
}

// CheckSLOValues is CheckSLO for objectives set without saying which were
// given: every nonzero one (zero: the default) must be a finite positive
// number of seconds. Its error names the setting as CheckSLO's does.
func CheckSLOValues(slo plant.SLO) error {
	return checkSLO(&slo, func(_ Setting, v float64) bool { return v != 0 })
}

// checkSLO requires every objective of slo that given reports (by setting
// and value) to be a finite positive number of seconds.
func checkSLO(slo *plant.SLO, given func(name Setting, v float64) bool) error {
	for _, f := range SLOSettings {
		v := *f.Field(slo)
		if given(f.Name, v) && !(v > 0 && !math.IsInf(v, 1)) {
			return Errorf("%s %v: expected %s", f.Name, v, SLOExpected)
		}
	}
	return nil
}
