package plant

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"servesim/internal/profile"
)

// Observation is what a Scheduler and a ClockController see at the start of
// a step (the reference's ServingObservation). It deliberately carries no
// request's output length: decode completion is a hidden disturbance.
// The two level slices are shared by every step and must not be modified.
type Observation struct {
	TimeS                  float64   // step start
	StepIndex              int       // 0-based index of the step
	PrefillQueue           int       // requests waiting for (or in) prefill
	DecodeActive           int       // requests decoding
	PrefillRemainingTokens float64   // prompt tokens still to prefill, over the queue
	GeneratedDecodeTokens  float64   // tokens generated so far by the active requests
	OldestPrefillAgeS      float64   // age of the oldest queued request, 0 without one
	KVTokens               float64   // KV-cache occupancy
	KVCapacityTokens       float64   // the plant's KV-cache capacity, tokens
	TemperatureC           float64   // temperature at step start, degrees C
	PreviousClockMHz       float64   // realized clock of the previous step
	PreviousPowerW         float64   // power of the previous step, W
	ClockLevelsMHz         []float64 // requested profile levels, increasing
	ArrivedRequests        int       // requests arrived so far
	CompletedRequests      int       // requests completed so far
	RealizedClockLevelsMHz []float64 // realized clock paired with each level
	// PowerCapW is the cap on this step's power that a fleet's power
	// budget gives the replica (Stepper.CapPower; the plant lowers the
	// realized clock to respect it), +Inf without one.
	PowerCapW float64
}

// Action is a Scheduler's decision for one step (the reference's
// ScheduleAction). Phase is prefill, decode or idle. MaxPrefillTokens caps
// the prompt tokens a prefill step may serve; zero means no cap (the
// reference's default, infinity).
type Action struct {
	Phase            profile.Phase // what the step serves: prefill, decode or idle
	MaxPrefillTokens float64       // cap on prompt tokens served this step; 0 means no cap
}

// Validate applies the reference's ScheduleAction.validate.
func (a Action) Validate() error {
	switch a.Phase {
	case profile.PhasePrefill, profile.PhaseDecode, profile.PhaseIdle:
	default:
		return fmt.Errorf("unknown scheduling phase: %q", a.Phase)
	}
	if a.MaxPrefillTokens < 0 || math.IsNaN(a.MaxPrefillTokens) {
		return fmt.Errorf("maximum_prefill_tokens %v: must be positive (or zero for no cap)", a.MaxPrefillTokens)
	}
	return nil
}

// prefillCap is the cap as the reference holds it: +Inf for no cap.
func (a Action) prefillCap() float64 {
	if a.MaxPrefillTokens == 0 {
		return math.Inf(1)
	}
	return a.MaxPrefillTokens
}

// A Scheduler chooses the phase of each step. Name is reported as
// scheduler_name. Simulate calls Schedule once per step, in step order.
type Scheduler interface {
	Name() string
	Schedule(obs Observation) Action
}

// A ClockController requests a graphics clock in MHz for each step; the
// plant quantizes it down to a profile level and may lower it for thermal
// and power protection. Name is reported as controller_name. Simulate calls
// RequestClock once per step, in step order, after Schedule. A controller
// may keep state between calls: give every simulation its own instance.
type ClockController interface {
	Name() string
	RequestClock(obs Observation) float64
}

// StaticBatch finishes queued prefills before returning to decode
// (static_batch_scheduler).
type StaticBatch struct{}

// Name implements Scheduler.
func (StaticBatch) Name() string { return "static_batch_scheduler" }

// Schedule implements Scheduler.
func (s StaticBatch) Schedule(obs Observation) Action { return s.decide(&obs).action() }

func (StaticBatch) decide(obs *Observation) decision {
	switch {
	case obs.PrefillQueue > 0:
		return decidePrefill
	case obs.DecodeActive > 0:
		return decideDecode
	}
	return decideIdle
}

// ContinuousBatch gives active decodes strict priority, then admits another
// prompt (continuous_batch_scheduler).
type ContinuousBatch struct{}

// Name implements Scheduler.
func (ContinuousBatch) Name() string { return "continuous_batch_scheduler" }

// Schedule implements Scheduler.
func (s ContinuousBatch) Schedule(obs Observation) Action { return s.decide(&obs).action() }

func (ContinuousBatch) decide(obs *Observation) decision {
	switch {
	case obs.DecodeActive > 0:
		return decideDecode
	case obs.PrefillQueue > 0:
		return decidePrefill
	}
	return decideIdle
}

// ChunkedPrefillTokens is the chunked scheduler's prefill cap per step.
const ChunkedPrefillTokens = 512.0

// ChunkedPrefill interleaves at most 512 prefill tokens with decode service:
// with active decodes it decodes on odd steps and whenever KV occupancy is
// at least 70% of capacity (chunked_prefill_scheduler).
type ChunkedPrefill struct{}

// Name implements Scheduler.
func (ChunkedPrefill) Name() string { return "chunked_prefill_scheduler" }

// Schedule implements Scheduler.
func (s ChunkedPrefill) Schedule(obs Observation) Action { return s.decide(&obs).action() }

func (ChunkedPrefill) decide(obs *Observation) decision {
	if obs.DecodeActive == 0 && obs.PrefillQueue > 0 {
		return decideChunk
	}
	kvPressure := obs.KVTokens / obs.KVCapacityTokens
	// Odd steps: Python's step_index % 2 == 1, for any integer.
	if obs.DecodeActive > 0 && (kvPressure >= 0.7 || obs.StepIndex&1 == 1) {
		return decideDecode
	}
	if obs.PrefillQueue > 0 {
		return decideChunk
	}
	if obs.DecodeActive > 0 {
		return decideDecode
	}
	return decideIdle
}

// MaxClock always requests the highest level (maximum_clock_controller).
type MaxClock struct{}

// Name implements ClockController.
func (MaxClock) Name() string { return "maximum_clock_controller" }

// RequestClock implements ClockController.
func (c MaxClock) RequestClock(obs Observation) float64 { return c.clock(&obs) }

func (MaxClock) clock(obs *Observation) float64 {
	return obs.ClockLevelsMHz[len(obs.ClockLevelsMHz)-1]
}

// MinClock always requests the lowest level (the reference harness's
// minimum_clock_controller).
type MinClock struct{}

// Name implements ClockController.
func (MinClock) Name() string { return "minimum_clock_controller" }

// RequestClock implements ClockController.
func (c MinClock) RequestClock(obs Observation) float64 { return c.clock(&obs) }

func (MinClock) clock(obs *Observation) float64 { return obs.ClockLevelsMHz[0] }

// FixedClock always requests MHz (fixed_clock_controller).
type FixedClock struct {
	MHz float64 // requested clock, MHz
}

// Name implements ClockController: fixed_<MHz as Python's :g>_mhz.
func (f FixedClock) Name() string { return "fixed_" + formatG(f.MHz) + "_mhz" }

// RequestClock implements ClockController.
func (f FixedClock) RequestClock(Observation) float64 { return f.MHz }

func (f FixedClock) clock(*Observation) float64 { return f.MHz }

// Level is the level of profile p that the plant runs for this request
// before thermal and power protection: the highest level not above MHz,
// or the lowest level for a request below every level (QuantizeClock
// downward).
func (f FixedClock) Level(p *profile.Profile) float64 { return p.QuantizeClock(f.MHz, true) }

// formatG formats x like Python's format(x, "g"): six significant digits,
// trailing zeros removed, exponent form below 1e-4 and from 1e6.
func formatG(x float64) string {
	s := strconv.FormatFloat(x, 'g', 6, 64)
	if strings.ContainsAny(s, "e") {
		mantissa, exp, _ := strings.Cut(s, "e")
		if strings.Contains(mantissa, ".") {
			mantissa = strings.TrimRight(strings.TrimRight(mantissa, "0"), ".")
		}
		return mantissa + "e" + exp
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Reactive is a queue-and-temperature governor with one-step hysteresis
// (reactive_clock_controller): from the level whose realized clock is
// nearest the previous one, it steps down at 72 C or more, up when queue
// pressure (queued + 2 x decoding) is 8 or more or the oldest queued request
// has waited 1 s, down when pressure is at most 1, and otherwise holds.
type Reactive struct{}

// Name implements ClockController.
func (Reactive) Name() string { return "reactive_clock_controller" }

// RequestClock implements ClockController.
func (c Reactive) RequestClock(obs Observation) float64 { return c.clock(&obs) }

func (c Reactive) clock(obs *Observation) float64 {
	return obs.ClockLevelsMHz[c.levelFrom(c.previousLevel(obs), obs)]
}

// previousLevel is the index of the level whose realized clock is nearest
// the previous one (the first of equally near levels).
func (Reactive) previousLevel(obs *Observation) int {
	observed := obs.RealizedClockLevelsMHz
	if len(observed) == 0 {
		observed = obs.ClockLevelsMHz
	}
	previous := 0
	for i, level := range observed {
		if math.Abs(level-obs.PreviousClockMHz) < math.Abs(observed[previous]-obs.PreviousClockMHz) {
			previous = i
		}
	}
	return previous
}

// levelFrom is the index of the level requested from level index
// previous (previousLevel).
func (Reactive) levelFrom(previous int, obs *Observation) int {
	clocks := obs.ClockLevelsMHz
	pressure := obs.PrefillQueue + 2*obs.DecodeActive
	index := previous
	switch {
	case obs.TemperatureC >= 72.0:
		index = max(0, previous-1)
	case pressure >= 8 || obs.OldestPrefillAgeS >= 1.0:
		index = min(len(clocks)-1, previous+1)
	case pressure <= 1:
		index = max(0, previous-1)
	}
	return index
}

// SampleAndHold applies Inner at a fixed cadence and holds its request in
// between (SampleAndHoldClockController): Inner is consulted on the first
// step and whenever floor((time + TimeEpsilonS) / PeriodS) changes.
type SampleAndHold struct {
	Inner   ClockController // the controller sampled at each period boundary
	PeriodS float64         // hold period, s

	held        float64
	lastControl int
	started     bool
}

// NewSampleAndHold wraps inner with a hold period in seconds.
func NewSampleAndHold(inner ClockController, periodS float64) (*SampleAndHold, error) {
	if !(periodS > 0) || math.IsInf(periodS, 0) {
		return nil, fmt.Errorf("period_s %v: must be finite and positive", periodS)
	}
	return &SampleAndHold{Inner: inner, PeriodS: periodS, lastControl: -1}, nil
}

// Name implements ClockController: "sampled_" and the inner name.
func (s *SampleAndHold) Name() string { return "sampled_" + s.Inner.Name() }

// RequestClock implements ClockController.
func (s *SampleAndHold) RequestClock(obs Observation) float64 { return s.clock(&obs) }

func (s *SampleAndHold) clock(obs *Observation) float64 {
	control := int(math.Floor((obs.TimeS + TimeEpsilonS) / s.PeriodS))
	if !s.started || control != s.lastControl {
		s.held = requestClock(s.Inner, obs)
		s.lastControl = control
		s.started = true
	}
	return s.held
}

// SchedulerNames are the names NewScheduler accepts, in its order.
var SchedulerNames = []string{"static", "continuous", "chunked"}

// ControllerNames are the controller specs NewController accepts without an
// argument; fixed:MHZ, sampled-reactive:PERIOD_S and race-to-idle:MHZ take
// one.
var ControllerNames = []string{"max", "min", "reactive", "sampled-reactive", "race-to-idle", "mpc", "mpc-clairvoyant"}

// NewScheduler returns the built-in scheduler called name: static,
// continuous or chunked.
func NewScheduler(name string) (Scheduler, error) {
	switch name {
	case "static":
		return StaticBatch{}, nil
	case "continuous":
		return ContinuousBatch{}, nil
	case "chunked":
		return ChunkedPrefill{}, nil
	}
	return nil, fmt.Errorf("unknown scheduler %q: expected static, continuous or chunked", name)
}

// DefaultSamplePeriodS is the hold period of sampled-reactive without one.
const DefaultSamplePeriodS = 1.0

// ControllerOptions are the settings of the controllers that need more
// than their spec: those of exec:COMMAND.
type ControllerOptions struct {
	ExecTimeout time.Duration // longest wait for each answer of an exec: child; zero means execsession.DefaultTimeout
	ExecStderr  io.Writer     // where an exec: child's stderr goes; nil discards it
}

// NewController returns a new clock controller for spec with the default
// options: see NewControllerWith.
func NewController(spec string) (ClockController, error) {
	return NewControllerWith(spec, ControllerOptions{})
}

// NewControllerWith returns a new clock controller for spec: max, min,
// fixed:MHZ, reactive, sampled-reactive[:PERIOD_S] (period 1 s by default),
// race-to-idle[:MHZ] (the highest level by default), exec:COMMAND (an
// ExecController, which starts COMMAND only when first consulted and must be
// closed: Run closes it), mpc[:KEY=VALUE,...] or
// mpc-clairvoyant[:KEY=VALUE,...] (see NewMPC).
func NewControllerWith(spec string, opt ControllerOptions) (ClockController, error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	number := func(what string) (float64, error) {
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("controller %q: %s %q must be a finite positive number", spec, what, arg)
		}
		return v, nil
	}
	switch {
	case spec == "max":
		return MaxClock{}, nil
	case spec == "min":
		return MinClock{}, nil
	case spec == "reactive":
		return Reactive{}, nil
	case kind == "fixed" && hasArg:
		mhz, err := number("clock MHz")
		if err != nil {
			return nil, err
		}
		return FixedClock{MHz: mhz}, nil
	case kind == "sampled-reactive":
		period := DefaultSamplePeriodS
		if hasArg {
			var err error
			if period, err = number("period in seconds"); err != nil {
				return nil, err
			}
		}
		return NewSampleAndHold(Reactive{}, period)
	case kind == "race-to-idle":
		if !hasArg {
			return RaceToIdle{}, nil
		}
		mhz, err := number("clock MHz")
		if err != nil {
			return nil, err
		}
		return RaceToIdle{MHz: mhz}, nil
	case kind == "exec" && hasArg:
		if strings.TrimSpace(arg) == "" {
			return nil, fmt.Errorf("controller %q: expected a shell command after \"exec:\"", spec)
		}
		return NewExecController(arg, opt.ExecTimeout, opt.ExecStderr), nil
	case kind == "mpc" || kind == "mpc-clairvoyant":
		return NewMPC(spec)
	}
	return nil, errors.New("unknown controller " + strconv.Quote(spec) + ": expected max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S], race-to-idle[:MHZ], exec:COMMAND, mpc[:KEY=VALUE,...] or mpc-clairvoyant[:KEY=VALUE,...]")
}
