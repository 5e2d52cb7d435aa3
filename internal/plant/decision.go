package plant

import (
	"fmt"
	"math"

	"servesim/internal/profile"
)

// stepPhase is a phase as the step loop handles it: a small code instead
// of the profile's name, which only the trajectory and the policies'
// Actions spell out.
type stepPhase uint8

// The phases of a step.
const (
	phaseIdle stepPhase = iota
	phasePrefill
	phaseDecode
	phaseInterleaved
)

// phaseNames are the profile's names of the step phases.
var phaseNames = [...]profile.Phase{
	phaseIdle:        profile.PhaseIdle,
	phasePrefill:     profile.PhasePrefill,
	phaseDecode:      profile.PhaseDecode,
	phaseInterleaved: profile.PhaseInterleaved,
}

// name is the profile's name of the phase.
func (p stepPhase) name() profile.Phase { return phaseNames[p] }

// phaseCode is the step phase called name (idle for a name of none).
func phaseCode(name profile.Phase) stepPhase {
	for code, n := range phaseNames {
		if n == name {
			return stepPhase(code)
		}
	}
	return phaseIdle
}

// decision is a scheduler's Action as the step loop holds it: the phase as
// a code and the prefill cap as the reference holds it (+Inf for no cap).
type decision struct {
	phase      stepPhase
	prefillCap float64
}

// Decisions of the built-in schedulers.
var (
	decideIdle    = decision{phaseIdle, math.Inf(1)}
	decidePrefill = decision{phasePrefill, math.Inf(1)}
	decideDecode  = decision{phaseDecode, math.Inf(1)}
	decideChunk   = decision{phasePrefill, ChunkedPrefillTokens}
)

// action is the decision as an Action.
func (d decision) action() Action {
	a := Action{Phase: d.phase.name()}
	if !math.IsInf(d.prefillCap, 1) {
		a.MaxPrefillTokens = d.prefillCap
	}
	return a
}

// decision is a valid Action as the step loop holds it.
func (a Action) decision() decision {
	d := decision{phase: phaseIdle, prefillCap: a.prefillCap()}
	switch a.Phase {
	case profile.PhasePrefill:
		d.phase = phasePrefill
	case profile.PhaseDecode:
		d.phase = phaseDecode
	}
	return d
}

// schedulerKind is how the step loop asks its scheduler: a built-in
// scheduler directly (its decide, inlined, with the observation in place),
// any other through Schedule, with a copy of the observation, its Action
// checked.
type schedulerKind uint8

// The kinds of scheduler.
const (
	schedulerOther schedulerKind = iota
	schedulerStatic
	schedulerContinuous
	schedulerChunked
)

// schedulerKindOf is the kind of s: a built-in kind only for the built-in
// schedulers themselves (a type that embeds one and overrides Schedule is
// another scheduler).
func schedulerKindOf(s Scheduler) schedulerKind {
	switch s.(type) {
	case StaticBatch:
		return schedulerStatic
	case ContinuousBatch:
		return schedulerContinuous
	case ChunkedPrefill:
		return schedulerChunked
	}
	return schedulerOther
}

// A builtinController is a clock controller of this package whose every
// request depends only on the fields of the observation that the step loop
// fills for the built-in policies (all but GeneratedDecodeTokens): the step
// loop asks it with the observation in place, not copied.
type builtinController interface {
	ClockController
	clock(obs *Observation) float64
}

// builtinClock returns c as a builtinController when it is one of the
// built-in controllers itself (a SampleAndHold of one), nil otherwise (a
// type that embeds one and overrides RequestClock is not).
func builtinClock(c ClockController) builtinController {
	switch c := c.(type) {
	case MaxClock:
		return c
	case MinClock:
		return c
	case FixedClock:
		return c
	case Reactive:
		return c
	case RaceToIdle:
		return c
	case *SampleAndHold:
		if builtinClock(c.Inner) != nil {
			return c
		}
	}
	return nil
}

// clockKind is how the step loop asks its clock controller.
type clockKind uint8

// The kinds of clock controller.
const (
	// clockOther is a controller of another package: asked through
	// RequestClock with a copy of the observation.
	clockOther clockKind = iota
	// clockBuiltin is a builtinController asked in place (clock).
	clockBuiltin
	// clockConstant requests the same finite clock at every step,
	// whatever it observes (max, min, fixed): simulation.constantMHz.
	clockConstant
	// clockReactive is Reactive, asked from the level nearest the previous
	// clock, which the simulation remembers for each previous clock.
	clockReactive
)

// clockKindOf is the kind of c and, for clockConstant, its request, with
// obs holding the profile's levels.
func clockKindOf(c ClockController, obs *Observation) (clockKind, float64) {
	switch c.(type) {
	case MaxClock, MinClock, FixedClock:
		if mhz := builtinClock(c).clock(obs); finite(mhz) {
			return clockConstant, mhz
		}
	case Reactive:
		return clockReactive, 0
	}
	if builtinClock(c) != nil {
		return clockBuiltin, 0
	}
	return clockOther, 0
}

// requestClock asks c for the clock of obs, in place when c is built in.
func requestClock(c ClockController, obs *Observation) float64 {
	if b := builtinClock(c); b != nil {
		return b.clock(obs)
	}
	return c.RequestClock(*obs)
}

// schedule is the scheduler's decision for the step observed in obs.
func (sim *simulation) schedule(obs *Observation) (decision, error) {
	switch sim.schedulerKind {
	case schedulerChunked:
		return ChunkedPrefill{}.decide(obs), nil
	case schedulerStatic:
		return StaticBatch{}.decide(obs), nil
	case schedulerContinuous:
		return ContinuousBatch{}.decide(obs), nil
	}
	action := sim.scheduler.Schedule(*obs)
	if err := action.Validate(); err != nil {
		return decision{}, fmt.Errorf("scheduler %s at step %d: %w", sim.scheduler.Name(), sim.step, err)
	}
	return action.decision(), nil
}

// requestClock is the controller's request for the step observed in obs.
func (sim *simulation) requestClock(obs *Observation) (float64, error) {
	var requested float64
	switch sim.clockKind {
	case clockConstant:
		return sim.constantMHz, nil
	case clockReactive:
		requested, _ := sim.reactiveClock(obs)
		return requested, nil
	case clockBuiltin:
		requested = sim.builtinController.clock(obs)
	default:
		requested = sim.controller.RequestClock(*obs)
	}
	if !finite(requested) {
		return 0, fmt.Errorf("clock controller %s at step %d: returned a non-finite request", sim.controller.Name(), sim.step)
	}
	return requested, nil
}
