// Package profile loads per-clock GPU service profiles (prefill and decode
// throughput, idle/prefill/decode power) with their manifest and provenance,
// and validates measured NVIDIA L4 profile bundles fail-closed.
package profile

import (
	"errors"
	"fmt"
	"math"

	"servesim/internal/numeric"
)

// Phase is what the GPU serves during a step.
type Phase string

// The phases of the serving plant.
const (
	PhasePrefill     Phase = "prefill"
	PhaseDecode      Phase = "decode"
	PhaseInterleaved Phase = "interleaved"
	PhaseIdle        Phase = "idle"
)

// Status values with a meaning to servesim.
const (
	// StatusMeasuredL4 requires a complete, validated measurement bundle.
	StatusMeasuredL4 = "measured_l4"
	// StatusEngineeringProxy marks a profile that was not measured.
	StatusEngineeringProxy = "engineering_proxy_not_measured"
)

// Default baselines used when a manifest gives none (the reference's).
const (
	DefaultBaselineTTFTS = 0.18
	DefaultBaselineTPOTS = 0.006
)

// Profile is a service and power profile indexed by requested clock level,
// the reference's PerformanceProfile. Build one with Load or New; the zero
// value is not usable.
type Profile struct {
	ClockMHz           []float64      // requested clock levels, strictly increasing
	PrefillTokensPerS  []float64      // prefill_tokens_per_s: prefill service rate per level, tokens/s
	DecodeTokensPerS   []float64      // decode_tokens_per_s: decode service rate per level, tokens/s
	IdlePowerW         []float64      // idle_power_w: idle power per level, W
	PrefillPowerW      []float64      // prefill_power_w: power while prefilling per level, W
	DecodePowerW       []float64      // decode_power_w: power while decoding per level, W
	BaselineTTFTS      float64        // baseline_ttft_s: TTFT SLO is 2x this, s
	BaselineTPOTS      float64        // baseline_tpot_s: TPOT SLO is 1.5x this, s
	Status             string         // profile_status
	SourceLabel        string         // source_label
	Manifest           map[string]any // the manifest as loaded, numbers as float64 (empty without one)
	MeasurementValid   bool           // the complete measured bundle passed validation
	ProfileCSVSHA256   string         // profile_csv_sha256: SHA-256 hex of the profile CSV bytes
	ManifestSHA256     string         // manifest_sha256: SHA-256 hex of the manifest bytes; empty without one
	RealizedClockMHz   []float64      // batch-balanced realized-clock medians; nil means identity
	prefillRate        numeric.Interpolator
	decodeRate         numeric.Interpolator
	idlePower          numeric.Interpolator
	prefillPower       numeric.Interpolator
	decodePower        numeric.Interpolator
	realizedClockLevel []float64
}

// New validates p (the reference's PerformanceProfile.validate) and prepares
// its interpolators. It returns the ready profile.
func New(p Profile) (*Profile, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	var err error
	fits := []struct {
		dst *numeric.Interpolator
		ys  []float64
	}{
		{&p.prefillRate, p.PrefillTokensPerS},
		{&p.decodeRate, p.DecodeTokensPerS},
		{&p.idlePower, p.IdlePowerW},
		{&p.prefillPower, p.PrefillPowerW},
		{&p.decodePower, p.DecodePowerW},
	}
	for _, f := range fits {
		if *f.dst, err = numeric.NewInterpolator(p.ClockMHz, f.ys); err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
	}
	p.realizedClockLevel = p.ClockMHz
	if p.RealizedClockMHz != nil {
		p.realizedClockLevel = p.RealizedClockMHz
	}
	return &p, nil
}

func (p *Profile) validate() error {
	columns := []struct {
		name   string
		values []float64
	}{
		{"clock_mhz", p.ClockMHz},
		{"prefill_tokens_per_s", p.PrefillTokensPerS},
		{"decode_tokens_per_s", p.DecodeTokensPerS},
		{"idle_power_w", p.IdlePowerW},
		{"prefill_power_w", p.PrefillPowerW},
		{"decode_power_w", p.DecodePowerW},
	}
	n := len(p.ClockMHz)
	for _, c := range columns {
		if len(c.values) != n || n < 2 {
			return errors.New("profile columns must have the same length, at least two")
		}
	}
	for _, c := range columns {
		for _, v := range c.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("profile columns must be finite one-dimensional arrays (%s)", c.name)
			}
		}
		for _, v := range c.values {
			if v <= 0 {
				return fmt.Errorf("profile values must be positive (%s)", c.name)
			}
		}
	}
	if !strictlyIncreasing(p.ClockMHz) {
		return errors.New("clock levels must be strictly increasing")
	}
	if p.IsMeasured() && p.RealizedClockMHz == nil {
		return errors.New("a validated measured profile must carry realized-clock medians")
	}
	realized := p.ClockMHz
	if p.RealizedClockMHz != nil {
		realized = p.RealizedClockMHz
	}
	if len(realized) != n || !allFinitePositive(realized) {
		return errors.New("realized clock medians must be finite, positive, and aligned with requested profile levels")
	}
	if !strictlyIncreasing(realized) {
		return errors.New("realized clock medians must be strictly increasing")
	}
	if !strictlyIncreasing(p.PrefillTokensPerS) {
		return errors.New("prefill service rate must increase strictly with clock; refit or reject the noisy profile before interpolation")
	}
	if !strictlyIncreasing(p.DecodeTokensPerS) {
		return errors.New("decode service rate must increase strictly with clock; refit or reject the noisy profile before interpolation")
	}
	if !(p.BaselineTTFTS > 0) || !(p.BaselineTPOTS > 0) {
		return errors.New("baseline latency values must be positive")
	}
	if p.Status == StatusMeasuredL4 && !p.MeasurementValid {
		return errors.New("a measured_l4 profile must pass complete bundle validation")
	}
	return nil
}

func strictlyIncreasing(values []float64) bool {
	for i := 1; i < len(values); i++ {
		if !(values[i]-values[i-1] > 0) {
			return false
		}
	}
	return true
}

func allFinitePositive(values []float64) bool {
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return false
		}
	}
	return true
}

// IsMeasured reports whether p is a validated measured_l4 profile.
func (p *Profile) IsMeasured() bool {
	return p.Status == StatusMeasuredL4 && p.MeasurementValid
}

// MinClockMHz is the lowest requested clock level.
func (p *Profile) MinClockMHz() float64 { return p.ClockMHz[0] }

// MaxClockMHz is the highest requested clock level.
func (p *Profile) MaxClockMHz() float64 { return p.ClockMHz[len(p.ClockMHz)-1] }

// RealizedClockLevelsMHz are the median realized clocks paired with the
// requested levels; the requested levels themselves for unvalidated profiles.
func (p *Profile) RealizedClockLevelsMHz() []float64 { return p.realizedClockLevel }

// MinRealizedClockMHz is the realized clock of the lowest level.
func (p *Profile) MinRealizedClockMHz() float64 { return p.realizedClockLevel[0] }

// RealizedClockForLevel returns the realized median paired with an exact
// profile level (within 1e-9 MHz).
func (p *Profile) RealizedClockForLevel(levelMHz float64) (float64, error) {
	match := -1
	for i, c := range p.ClockMHz {
		if math.Abs(c-levelMHz) <= 1e-9 {
			if match >= 0 {
				return 0, errors.New("realized clock lookup requires a supported profile level")
			}
			match = i
		}
	}
	if match < 0 {
		return 0, errors.New("realized clock lookup requires a supported profile level")
	}
	return p.realizedClockLevel[match], nil
}

// TTFTSLOSeconds is the time-to-first-token objective: twice the baseline.
func (p *Profile) TTFTSLOSeconds() float64 { return 2.0 * p.BaselineTTFTS }

// TPOTSLOSeconds is the time-per-output-token objective: 1.5 times the baseline.
func (p *Profile) TPOTSLOSeconds() float64 { return 1.5 * p.BaselineTPOTS }

// ClockEpsilonMHz is the clock tolerance, MHz: a level at most
// ClockEpsilonMHz above a requested clock is not above it. It is the
// reference's (quantize_clock's `clock_mhz <= requested + 1e-12`,
// seed003_plant.py line 243): it absorbs the rounding of a requested clock
// computed in floating point, far below any step between clock levels.
const ClockEpsilonMHz = 1e-12

// QuantizeClock maps a requested clock onto a supported level: the highest
// level not above it (downward) or the nearest level (first on ties).
func (p *Profile) QuantizeClock(requestedMHz float64, downward bool) float64 {
	requested := math.Min(math.Max(requestedMHz, p.MinClockMHz()), p.MaxClockMHz())
	if downward {
		level := p.ClockMHz[0]
		for _, c := range p.ClockMHz {
			if c <= requested+ClockEpsilonMHz {
				level = c
			}
		}
		return level
	}
	best := 0
	for i, c := range p.ClockMHz {
		if math.Abs(c-requested) < math.Abs(p.ClockMHz[best]-requested) {
			best = i
		}
	}
	return p.ClockMHz[best]
}

// Rate is the service rate in tokens per second of phase at clockMHz
// (np.interp, clamped); zero for idle and interleaved.
func (p *Profile) Rate(phase Phase, clockMHz float64) float64 {
	switch phase {
	case PhasePrefill:
		return p.prefillRate.At(clockMHz)
	case PhaseDecode:
		return p.decodeRate.At(clockMHz)
	default:
		return 0
	}
}

// Power is the board power in watts of phase at clockMHz (np.interp,
// clamped); idle power for idle and interleaved.
func (p *Profile) Power(phase Phase, clockMHz float64) float64 {
	switch phase {
	case PhasePrefill:
		return p.prefillPower.At(clockMHz)
	case PhaseDecode:
		return p.decodePower.At(clockMHz)
	default:
		return p.idlePower.At(clockMHz)
	}
}
