package plant

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"servesim/internal/plant/mpc"
	"servesim/internal/profile"
)

// MPC settings without a key in the controller spec.
const (
	DefaultMPCPeriodS = 1.0
	DefaultMPCHorizon = 30
	// DefaultMPCBudget is the model states a solve may expand by default:
	// enough for every solve of a profile of up to 90 levels at the
	// default horizon, so that only a smaller budget makes solves fall
	// back.
	DefaultMPCBudget = 2000
	// MaxMPCHorizon bounds the horizon (and so the work of a solve).
	MaxMPCHorizon = 1000
)

// MPCKeys are the keys an mpc or mpc-clairvoyant spec accepts, in the
// order of the controller's name.
var MPCKeys = []string{"attainment", "period", "horizon", "budget", "deadline"}

// MPC is the model-predictive clock controller (package mpc) on a plant:
// once per control period, at its first step with a request queued or
// decoding, it plans the busy clock of each period of the horizon from the
// ServerState and the profile, and runs the plan's first level while
// anything is queued or decoding (the lowest level otherwise). It publishes
// its plans (Planner). It works only under Simulate or a Stepper, which
// call Start and Observe.
type MPC struct {
	name        string
	settings    mpc.Settings
	clairvoyant bool
	future      []Request

	core   *mpc.Controller
	view   serverView
	levels []float64
	timed  bool
}

// ClairvoyantMPC is MPC told the future (Clairvoyant): the arrivals and
// output lengths of the whole workload. It is an evaluation bound, not a
// realizable controller.
type ClairvoyantMPC struct{ *MPC }

// Foresee implements Clairvoyant.
func (c ClairvoyantMPC) Foresee(requests []Request) {
	c.future = requests
	if c.core != nil {
		c.core.Foresee(futureRequests(requests))
	}
}

// futureRequests converts requests for the model.
func futureRequests(requests []Request) []mpc.Request {
	future := make([]mpc.Request, len(requests))
	for i, r := range requests {
		future[i] = mpc.Request{ID: r.ID, ArrivalS: r.ArrivalTimeS, Prompt: r.PromptTokens, Output: r.OutputTokens}
	}
	return future
}

// A SolveTimer measures the wall-clock time of its solves when asked (MPC
// and ClairvoyantMPC): machine-dependent numbers, for --verbose only.
type SolveTimer interface {
	TimeSolves()                 // measure from now on; call before the run
	SolveTimes() *mpc.SolveTimes // the times measured (nil before the run)
}

// NewMPC parses an mpc[:KEY=VALUE,...] spec into an *MPC, or an
// mpc-clairvoyant[:KEY=VALUE,...] spec into a ClairvoyantMPC. Keys: period
// (s, default 1), horizon (periods, default 30), budget (model states per
// solve, default DefaultMPCBudget), deadline (wall-clock seconds per solve;
// machine-dependent, default none) and attainment (the target SLO
// attainment A, 0 < A <= 1; default: the attainment the highest clock
// would reach, as predicted). The error names the key.
func NewMPC(spec string) (ClockController, error) {
	kind, args, hasArgs := strings.Cut(spec, ":")
	m := &MPC{settings: mpc.Settings{PeriodS: DefaultMPCPeriodS, Horizon: DefaultMPCHorizon, Budget: DefaultMPCBudget}}
	switch kind {
	case "mpc":
	case "mpc-clairvoyant":
		m.clairvoyant = true
	default:
		return nil, fmt.Errorf("controller %q: expected mpc or mpc-clairvoyant", spec)
	}
	given := map[string]string{}
	if hasArgs {
		for _, kv := range strings.Split(args, ",") {
			key, value, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("controller %q: %q: expected KEY=VALUE with KEY one of %s", spec, kv, strings.Join(MPCKeys, ", "))
			}
			if err := m.set(key, value); err != nil {
				return nil, fmt.Errorf("controller %q: %w", spec, err)
			}
			if _, dup := given[key]; dup {
				return nil, fmt.Errorf("controller %q: key %s given twice", spec, key)
			}
			given[key] = value
		}
	}
	base := "mpc"
	if m.clairvoyant {
		base = "mpc_clairvoyant"
	}
	var b strings.Builder
	b.WriteString(base)
	for _, key := range MPCKeys {
		if _, ok := given[key]; ok {
			b.WriteString("_" + key + "_" + m.canonical(key))
		}
	}
	m.name = b.String() + "_clock_controller"
	if m.clairvoyant {
		return ClairvoyantMPC{m}, nil
	}
	return m, nil
}

// canonical is the value of a key as the controller's name writes it: the
// shortest decimal that reads back as the value, so that one controller has
// one name however its spec spells a number (period=.5, period=0.50).
func (m *MPC) canonical(key string) string {
	switch key {
	case "period":
		return strconv.FormatFloat(m.settings.PeriodS, 'g', -1, 64)
	case "horizon":
		return strconv.Itoa(m.settings.Horizon)
	case "budget":
		return strconv.Itoa(m.settings.Budget)
	case "deadline":
		return strconv.FormatFloat(m.settings.DeadlineS, 'g', -1, 64)
	}
	// attainment, the last of MPCKeys
	return strconv.FormatFloat(m.settings.Attainment, 'g', -1, 64)
}

// set applies one key of a spec.
func (m *MPC) set(key, value string) error {
	number := func(expected string, ok func(float64) bool) (float64, error) {
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || !ok(v) {
			return 0, fmt.Errorf("%s %q: expected %s", key, value, expected)
		}
		return v, nil
	}
	count := func(expected string, limit int) (int, error) {
		v, err := strconv.Atoi(value)
		if err != nil || v < 1 || v > limit {
			return 0, fmt.Errorf("%s %q: expected %s", key, value, expected)
		}
		return v, nil
	}
	var err error
	switch key {
	case "period":
		m.settings.PeriodS, err = number("a finite positive number of seconds", func(v float64) bool { return v > 0 })
	case "horizon":
		m.settings.Horizon, err = count("a whole number of periods from 1 to "+strconv.Itoa(MaxMPCHorizon), MaxMPCHorizon)
	case "budget":
		m.settings.Budget, err = count("a whole number of model states from 1 to "+strconv.Itoa(math.MaxInt32), math.MaxInt32)
	case "deadline":
		m.settings.DeadlineS, err = number("a finite positive number of seconds", func(v float64) bool { return v > 0 })
	case "attainment":
		m.settings.Attainment, err = number("a share A with 0 < A <= 1", func(v float64) bool { return v > 0 && v <= 1 })
	default:
		err = fmt.Errorf("unknown key %q: expected %s", key, strings.Join(MPCKeys, ", "))
	}
	return err
}

// Name implements ClockController: mpc_clock_controller or
// mpc_clairvoyant_clock_controller, with each key given in the spec
// (mpc_attainment_0.9_clock_controller).
func (m *MPC) Name() string { return m.name }

// Start implements ServerStateController: it builds the model of the
// plant.
func (m *MPC) Start(info RunInfo) error {
	p := info.Plant
	prof := p.Profile
	if steps := m.settings.PeriodS / p.TimeStepS; !(steps >= 1-1e-9) || math.Abs(steps-math.Round(steps)) > 1e-9*steps {
		return fmt.Errorf("period %v s: expected a whole number of time steps of %v s (a plan's period starts and ends with a step)", m.settings.PeriodS, p.TimeStepS)
	}
	var scheduler mpc.Scheduler
	switch info.SchedulerName {
	case ChunkedPrefill{}.Name():
		scheduler = mpc.Chunked
	case StaticBatch{}.Name():
		scheduler = mpc.Static
	case ContinuousBatch{}.Name():
		scheduler = mpc.Continuous
	default:
		return fmt.Errorf("scheduler %s: the model knows only the built-in schedulers", info.SchedulerName)
	}
	model := mpc.Plant{
		TimeStepS:                p.TimeStepS,
		KVCapacityTokens:         p.KVCapacityTokens,
		KVReserveTokensPerActive: p.DecodeKVReserveTokensPerActive,
		MaxActive:                p.MaxActiveRequests,
		AmbientC:                 p.AmbientTemperatureC,
		ThermalTauS:              p.ThermalTimeConstantS,
		ThermalRCPerW:            p.ThermalResistanceCPerW,
		ThermalLimitC:            p.ThermalLimitC,
		PowerLimitW:              p.PowerLimitW,
		Governed:                 !prof.IsMeasured(),
		Scheduler:                scheduler,
		ChunkTokens:              ChunkedPrefillTokens,
		KVPressure:               chunkedKVPressure,
	}
	if scheduler != mpc.Chunked {
		model.ChunkTokens = math.Inf(1)
	}
	m.levels = prof.ClockMHz
	for _, mhz := range prof.ClockMHz {
		model.Levels = append(model.Levels, mpc.Level{
			MHz:           mhz,
			PrefillRate:   prof.Rate(profile.PhasePrefill, mhz),
			DecodeRate:    prof.Rate(profile.PhaseDecode, mhz),
			PrefillPowerW: prof.Power(profile.PhasePrefill, mhz),
			DecodePowerW:  prof.Power(profile.PhaseDecode, mhz),
			IdlePowerW:    prof.Power(profile.PhaseIdle, mhz),
		})
	}
	core, err := mpc.New(model, mpc.SLO{TTFTS: info.SLO.TTFTSeconds, TPOTS: info.SLO.TPOTSeconds, E2ES: info.SLO.E2ESeconds}, m.settings)
	if err != nil {
		return err
	}
	m.core = core
	if m.timed {
		core.TimeSolves()
	}
	if m.future != nil {
		core.Foresee(futureRequests(m.future))
	}
	return nil
}

// Observe implements ServerStateController.
func (m *MPC) Observe(state *ServerState) { m.view.state = state }

// RequestClock implements ClockController. Consulted outside a simulation
// (without Start and Observe) it has no state to plan from and races to
// idle, as a failed solve does.
func (m *MPC) RequestClock(obs Observation) float64 {
	if m.core == nil || m.view.state == nil {
		return RaceToIdle{}.RequestClock(obs)
	}
	m.view.observe(&obs)
	return m.levels[m.core.Step(&m.view)]
}

// hold implements holdingController: between two solves the core requests
// the lowest level at an idle step and the period's level at a busy one
// (mpc.Controller.Holding).
func (m *MPC) hold() (clockHold, bool) {
	if m.core == nil || m.view.state == nil {
		return clockHold{}, false
	}
	level, untilS := m.core.Holding()
	return clockHold{idleMHz: m.levels[0], busyMHz: m.levels[level], busyUntilS: untilS}, true
}

// StepPlan implements Planner.
func (m *MPC) StepPlan() ([]float64, float64, bool) { return m.core.Plan() }

// PlanDtS implements Planner: the control period.
func (m *MPC) PlanDtS() float64 { return m.settings.PeriodS }

// Diagnostics implements Planner.
func (m *MPC) Diagnostics() MPCDiagnostics {
	d := MPCDiagnostics{
		ControlPeriodS:            m.settings.PeriodS,
		HorizonSteps:              m.settings.Horizon,
		AcceptedSolvesMetDeadline: true,
	}
	if m.core != nil {
		counts := m.core.Diagnostics()
		d.SuccessfulSolves, d.FallbackCount = counts.Solves, counts.Fallbacks
	}
	if m.settings.DeadlineS > 0 {
		deadline := m.settings.DeadlineS
		d.SolveTimeDeadlineS = &deadline
	}
	return d
}

// TimeSolves asks m to measure the wall-clock time of its solves; call it
// before the run.
func (m *MPC) TimeSolves() { m.timed = true }

// SolveTimes returns the solve times measured with TimeSolves (nil before
// the run).
func (m *MPC) SolveTimes() *mpc.SolveTimes {
	if m.core == nil {
		return nil
	}
	return m.core.Times()
}

// chunkedKVPressure is the KV occupancy share at which ChunkedPrefill
// decodes every step.
const chunkedKVPressure = 0.7

// serverView shows a ServerState (and what the model reads of the step's
// Observation) to the model. It forwards only what a real server knows: no
// unfinished request's output length is reachable through a ServerState.
type serverView struct {
	state *ServerState
	// Of the Observation: step start, step index, temperature, KV
	// occupancy and prompt tokens queued. (Copied field by field: a whole
	// Observation copied at every step the model is asked cost more.)
	timeS        float64
	stepIndex    int
	temperatureC float64
	kvTokens     float64
	queuedTokens float64
}

// observe takes what the model reads of obs.
func (v *serverView) observe(obs *Observation) {
	v.timeS, v.stepIndex, v.temperatureC = obs.TimeS, obs.StepIndex, obs.TemperatureC
	v.kvTokens, v.queuedTokens = obs.KVTokens, obs.PrefillRemainingTokens
}

func (v *serverView) TimeS() float64              { return v.timeS }
func (v *serverView) StepIndex() int              { return v.stepIndex }
func (v *serverView) TemperatureC() float64       { return v.temperatureC }
func (v *serverView) KVTokens() float64           { return v.kvTokens }
func (v *serverView) QueuedPromptTokens() float64 { return v.queuedTokens }
func (v *serverView) Arrived() int                { return v.state.Arrived() }
func (v *serverView) Queued() int                 { return v.state.Queued() }
func (v *serverView) Active() int                 { return v.state.Active() }
func (v *serverView) Completed() int              { return v.state.Completed() }

func (v *serverView) ArrivedAt(i int) mpc.Arrival { return arrival(v.state.ArrivedAt(i)) }

func (v *serverView) QueuedAt(i int) mpc.Queued {
	q := v.state.QueuedAt(i)
	return mpc.Queued{Arrival: arrival(q.ArrivedRequest), PrefillLeft: q.PrefillRemainingTokens}
}

func (v *serverView) AppendActive(dst []mpc.Active) []mpc.Active {
	for i := range v.state.Active() {
		dst = append(dst, mpc.Active{})
		d := &dst[len(dst)-1] // filled in place (see ServerState.active)
		d.ID, d.ArrivalS, d.Prompt, d.FirstTokenS, d.Generated = v.state.active(i)
	}
	return dst
}

func (v *serverView) CompletedAt(i int) mpc.Completion {
	r := v.state.CompletedAt(i)
	return mpc.Completion{
		Arrival:     mpc.Arrival{ID: r.RequestID, ArrivalS: r.ArrivalTimeS, Prompt: r.PromptTokens},
		Output:      r.OutputTokens,
		FirstTokenS: r.FirstTokenTimeS,
		CompletionS: r.CompletionTimeS,
	}
}

func arrival(a ArrivedRequest) mpc.Arrival {
	return mpc.Arrival{ID: a.ID, ArrivalS: a.ArrivalTimeS, Prompt: a.PromptTokens}
}
