// Package mpc is a model-predictive clock controller for the serving plant:
// every control period it predicts, with a fluid model of the plant's own
// rules, the queue, the decoding requests, their TTFT and TPOT outcomes,
// energy and temperature over a horizon of periods for candidate clock
// plans, and applies the first period of the cheapest plan whose predicted
// SLO misses stay within the target.
//
// The package knows the plant only through the types below, filled in by
// the plant package's adapter: a Server gives the requests a real server
// knows (prompt lengths, arrival times, tokens generated so far, and the
// output lengths of completed requests only). Only a clairvoyant
// controller, an evaluation bound, is told the future (Foresee).
package mpc

import (
	"errors"
	"fmt"
)

// Scheduler is the plant's phase scheduler, whose rules the model follows.
type Scheduler int

// The schedulers the model knows.
const (
	// Chunked prefills at most ChunkTokens per step and alternates
	// decode-only steps while requests decode.
	Chunked Scheduler = iota
	// Static prefills the whole queue before decoding.
	Static
	// Continuous decodes while any request decodes, then prefills.
	Continuous
)

// Level is one clock level of the profile: its rates and powers.
type Level struct {
	MHz           float64 // requested clock, MHz
	PrefillRate   float64 // prompt tokens per second
	DecodeRate    float64 // output tokens per second, shared by the decoding requests
	PrefillPowerW float64 // power while prefilling, W
	DecodePowerW  float64 // power while decoding, W
	IdlePowerW    float64 // power while idle, W
}

// Plant is what the controller knows of the plant it drives: the profile's
// levels (increasing) and the plant's limits and constants.
type Plant struct {
	Levels                   []Level
	TimeStepS                float64
	KVCapacityTokens         float64
	KVReserveTokensPerActive float64
	MaxActive                int
	AmbientC                 float64
	ThermalTauS              float64
	ThermalRCPerW            float64
	ThermalLimitC            float64
	PowerLimitW              float64
	// Governed is true when the plant lowers the clock while the scheduled
	// phase's power exceeds PowerLimitW (an unmeasured profile); otherwise
	// the controller keeps to levels within the limit.
	Governed    bool
	Scheduler   Scheduler
	ChunkTokens float64 // the chunked scheduler's prefill cap per step
	// KVPressure is the KV occupancy share at which the chunked scheduler
	// decodes every step.
	KVPressure float64
}

// SLO holds the objectives a request is judged by, s; E2ES 0 means none.
type SLO struct {
	TTFTS, TPOTS, E2ES float64
}

// Settings are the controller's own parameters.
type Settings struct {
	PeriodS float64 // control period, s
	Horizon int     // periods in a plan
	// Budget is the most model states (period updates) a solve may
	// expand; a solve that needs more falls back.
	Budget int
	// DeadlineS, when positive, is a wall-clock limit per solve, s:
	// machine-dependent, so off by default.
	DeadlineS float64
	// Attainment, when positive, is the target SLO attainment A; zero
	// targets the attainment the highest clock would reach.
	Attainment float64
}

// Validate checks the plant description.
func (p *Plant) Validate() error {
	if len(p.Levels) == 0 {
		return errors.New("mpc: no clock levels")
	}
	for i, l := range p.Levels {
		if !(l.PrefillRate > 0 && l.DecodeRate > 0) {
			return fmt.Errorf("mpc: level %v MHz: rates must be positive", l.MHz)
		}
		if i > 0 && !(l.MHz > p.Levels[i-1].MHz) {
			return errors.New("mpc: levels must increase")
		}
	}
	if !(p.TimeStepS > 0) || !(p.ThermalTauS > 0) || p.MaxActive < 1 {
		return errors.New("mpc: time step, thermal time constant and maximum active requests must be positive")
	}
	return nil
}

// phaseLevel is what one requested level runs in each phase, after thermal
// protection and the power governor.
type phaseLevel struct {
	// Of a prefill step: the prompt tokens it serves (the chunk), the time
	// they take, and the decode rate and powers of the rest of the step.
	chunk            float64
	chunkTimeS       float64
	prefillPowerW    float64
	leftDecodeRate   float64
	leftDecodePowerW float64
	// chunkPerS is a chunk per step, in tokens per second, and
	// leftPerPrefillStep the decode tokens of a prefill step's rest.
	chunkPerS, leftPerPrefillStep float64
	// alternatingPerStep is the decode tokens per step of the chunked
	// scheduler's alternation of prefill and decode steps.
	alternatingPerStep float64
	// Of a decode step.
	decodeRate   float64
	decodePowerW float64
	idlePowerW   float64
	// Marginal energies per token above idling at the lowest level, J.
	prefillJ, decodeJ float64
	// slot tells the phase levels apart: 2 i for level i, 2 i + 1 for
	// level i under thermal downshift.
	slot int
}

// levelTable resolves every requested level, hot (thermal downshift) or not.
type levelTable struct {
	cool, hot []phaseLevel
	allowed   []bool // levels the controller may request
	list      []int  // the allowed levels, increasing
	top       int    // the highest allowed level
}

// newLevelTable applies the plant's rules to each level: a step at or above
// the thermal limit runs one level lower, and a governed plant lowers the
// level while the phase's power exceeds the limit.
func newLevelTable(p *Plant) levelTable {
	n := len(p.Levels)
	t := levelTable{cool: make([]phaseLevel, n), hot: make([]phaseLevel, n), allowed: make([]bool, n)}
	idleMin := p.Levels[0].IdlePowerW
	govern := func(i int, power func(Level) float64) int {
		for p.Governed && i > 0 && power(p.Levels[i]) > p.PowerLimitW+PowerEpsilonW {
			i--
		}
		return i
	}
	resolve := func(i int) phaseLevel {
		lp := p.Levels[govern(i, func(l Level) float64 { return l.PrefillPowerW })]
		ld := p.Levels[govern(i, func(l Level) float64 { return l.DecodePowerW })]
		chunk := min(lp.PrefillRate*p.TimeStepS, p.ChunkTokens)
		left := max(0, p.TimeStepS-chunk/lp.PrefillRate) * lp.DecodeRate
		return phaseLevel{
			alternatingPerStep: (ld.DecodeRate*p.TimeStepS + left) / 2,
			chunk:              chunk,
			chunkTimeS:         chunk / lp.PrefillRate,
			chunkPerS:          chunk / p.TimeStepS,
			leftPerPrefillStep: lp.DecodeRate * max(0, p.TimeStepS-chunk/lp.PrefillRate),
			prefillPowerW:      lp.PrefillPowerW,
			leftDecodeRate:     lp.DecodeRate,
			leftDecodePowerW:   lp.DecodePowerW,
			decodeRate:         ld.DecodeRate,
			decodePowerW:       ld.DecodePowerW,
			idlePowerW:         ld.IdlePowerW,
			prefillJ:           (lp.PrefillPowerW - idleMin) / lp.PrefillRate,
			decodeJ:            (ld.DecodePowerW - idleMin) / ld.DecodeRate,
		}
	}
	for i := range n {
		t.cool[i] = resolve(i)
		t.hot[i] = resolve(max(0, i-1))
		t.cool[i].slot, t.hot[i].slot = 2*i, 2*i+1
		l := p.Levels[i]
		t.allowed[i] = p.Governed || max(l.PrefillPowerW, l.DecodePowerW) <= p.PowerLimitW+PowerEpsilonW
		if t.allowed[i] {
			t.top = i
		}
	}
	t.allowed[0] = true
	for i, ok := range t.allowed {
		if ok {
			t.list = append(t.list, i)
		}
	}
	return t
}
