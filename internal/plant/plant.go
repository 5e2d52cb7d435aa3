// Package plant is the time-stepped serving plant of the reference (seed003):
// an arrival trace served by one GPU whose prefill and decode rates and
// powers come from a clock profile, under a Scheduler that picks the phase of
// every step and a ClockController that picks its clock. It replays the
// reference's arithmetic operation by operation, so results agree with it to
// the last bits, while each step costs time proportional to the active
// requests only and allocates nothing.
package plant

import (
	"fmt"
	"math"

	"servesim/internal/profile"
)

// Plant holds the limits and thermal constants shared by all controllers
// (the reference's ServingPlant). Build one with NewPlant, which fills in
// the reference's defaults, then adjust fields.
type Plant struct {
	Profile                        *profile.Profile `json:"-"`                                   // service and power profile; required, not encoded
	TimeStepS                      float64          `json:"time_step_s"`                         // default 0.1
	KVCapacityTokens               float64          `json:"kv_capacity_tokens"`                  // default 131072
	DecodeKVReserveTokensPerActive float64          `json:"decode_kv_reserve_tokens_per_active"` // default 1024
	MaxActiveRequests              int              `json:"maximum_active_requests"`             // default 64
	AmbientTemperatureC            float64          `json:"ambient_temperature_c"`               // default 25
	ThermalTimeConstantS           float64          `json:"thermal_time_constant_s"`             // default 35
	ThermalResistanceCPerW         float64          `json:"thermal_resistance_c_per_w"`          // default 0.55
	PowerLimitW                    float64          `json:"power_limit_w"`                       // default 64.8
	ThermalLimitC                  float64          `json:"thermal_limit_c"`                     // default 75
	ReportingHorizonS              float64          `json:"reporting_horizon_s"`                 // default 60
	MaxSimulationTimeS             float64          `json:"maximum_simulation_time_s"`           // default 3600
}

// Defaults of the reference's ServingPlant.
const (
	DefaultTimeStepS                      = 0.1
	DefaultKVCapacityTokens               = 131_072.0
	DefaultDecodeKVReserveTokensPerActive = 1_024.0
	DefaultMaxActiveRequests              = 64
	DefaultAmbientTemperatureC            = 25.0
	DefaultThermalTimeConstantS           = 35.0
	DefaultThermalResistanceCPerW         = 0.55
	DefaultPowerLimitW                    = 64.8
	DefaultThermalLimitC                  = 75.0
	DefaultReportingHorizonS              = 60.0
	DefaultMaxSimulationTimeS             = 3_600.0
)

// NewPlant returns a plant on p with the reference's defaults.
func NewPlant(p *profile.Profile) Plant {
	return Plant{
		Profile:                        p,
		TimeStepS:                      DefaultTimeStepS,
		KVCapacityTokens:               DefaultKVCapacityTokens,
		DecodeKVReserveTokensPerActive: DefaultDecodeKVReserveTokensPerActive,
		MaxActiveRequests:              DefaultMaxActiveRequests,
		AmbientTemperatureC:            DefaultAmbientTemperatureC,
		ThermalTimeConstantS:           DefaultThermalTimeConstantS,
		ThermalResistanceCPerW:         DefaultThermalResistanceCPerW,
		PowerLimitW:                    DefaultPowerLimitW,
		ThermalLimitC:                  DefaultThermalLimitC,
		ReportingHorizonS:              DefaultReportingHorizonS,
		MaxSimulationTimeS:             DefaultMaxSimulationTimeS,
	}
}

// Validate applies the reference's ServingPlant.validate: every limit and
// constant finite and positive, and the thermal limit above ambient. It also
// requires a finite ambient temperature, which the reference does not check.
// The error is ErrNoProfile or a *FieldError naming the field.
func (p Plant) Validate() error {
	if p.Profile == nil {
		return ErrNoProfile
	}
	positive := []struct {
		name  string
		value float64
	}{
		{"time_step_s", p.TimeStepS},
		{"kv_capacity_tokens", p.KVCapacityTokens},
		{"decode_kv_reserve_tokens_per_active", p.DecodeKVReserveTokensPerActive},
		{"maximum_active_requests", float64(p.MaxActiveRequests)},
		{"thermal_time_constant_s", p.ThermalTimeConstantS},
		{"thermal_resistance_c_per_w", p.ThermalResistanceCPerW},
		{"power_limit_w", p.PowerLimitW},
		{"thermal_limit_c", p.ThermalLimitC},
		{"reporting_horizon_s", p.ReportingHorizonS},
		{"maximum_simulation_time_s", p.MaxSimulationTimeS},
	}
	for _, f := range positive {
		if !finite(f.value) || f.value <= 0 {
			return &FieldError{Field: f.name, Value: f.value, Why: "must be finite and positive"}
		}
	}
	if !finite(p.AmbientTemperatureC) {
		return &FieldError{Field: "ambient_temperature_c", Value: p.AmbientTemperatureC, Why: "must be finite"}
	}
	if p.ThermalLimitC <= p.AmbientTemperatureC {
		return &FieldError{Field: "thermal_limit_c", Value: p.ThermalLimitC, Why: fmt.Sprintf("must exceed ambient_temperature_c %v", p.AmbientTemperatureC)}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
