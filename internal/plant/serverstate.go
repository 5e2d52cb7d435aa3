package plant

import "math"

// ServerState is a read-only view of what a real server knows at the start
// of a step, beyond the aggregate Observation: every request that has
// arrived, in arrival order, with its prompt length; the queue and the
// decoding requests one by one, with their progress; and the requests that
// have completed, in completion order, with their output lengths. It never
// reveals the output length of a request that has not completed: the views
// of arrived, queued and decoding requests have no such field.
//
// A ServerState is valid only during the Observe call it is passed to (and
// the RequestClock call that follows in the same step); it costs nothing to
// build, and each accessor is O(1).
type ServerState struct {
	sim *simulation
}

// ArrivedRequest is a request that has arrived: what the server learns when
// it is submitted.
type ArrivedRequest struct {
	ID           int     // request_id
	ArrivalTimeS float64 // arrival time, s
	PromptTokens int     // prompt length, tokens
}

// QueuedRequest is a request waiting for (or in) prefill.
type QueuedRequest struct {
	ArrivedRequest
	PrefillRemainingTokens float64 // prompt tokens still to prefill
}

// ActiveRequest is a request that is decoding.
type ActiveRequest struct {
	ArrivedRequest
	// FirstTokenTimeS is the end of the step that produced its first output
	// token; NaN before that step has run.
	FirstTokenTimeS float64
	GeneratedTokens float64 // output tokens generated so far
}

// TimeS is the start of the current step, s.
func (s *ServerState) TimeS() float64 { return s.sim.timeS }

// StepIndex is the 0-based index of the current step.
func (s *ServerState) StepIndex() int { return s.sim.step }

// Arrived is the number of requests that have arrived so far.
func (s *ServerState) Arrived() int { return s.sim.pending }

// ArrivedAt returns the i-th request to arrive, 0 <= i < Arrived().
func (s *ServerState) ArrivedAt(i int) ArrivedRequest {
	if i < 0 || i >= s.sim.pending {
		panic("plant: ServerState.ArrivedAt: request has not arrived")
	}
	return s.sim.arrived(i)
}

// Queued is the number of requests waiting for (or in) prefill: with
// preemption (Options.Engine), the preempted requests waiting to be
// prefilled again come first.
func (s *ServerState) Queued() int { return s.sim.engine.waitingCount() + s.sim.pending - s.sim.head }

// QueuedAt returns the i-th queued request in service order (0 is the
// head, the only one that can be partly prefilled), 0 <= i < Queued().
func (s *ServerState) QueuedAt(i int) QueuedRequest {
	if i < 0 || i >= s.Queued() {
		panic("plant: ServerState.QueuedAt: index out of range")
	}
	var j int
	if waiting := s.sim.engine.waitingCount(); i < waiting {
		j = s.sim.engine.waiting[waiting-1-i] // served last in, first out
	} else {
		j = s.sim.head + i - waiting
	}
	return QueuedRequest{ArrivedRequest: s.sim.arrived(j), PrefillRemainingTokens: s.sim.progress[j].prefillRemaining}
}

// Active is the number of decoding requests.
func (s *ServerState) Active() int { return len(s.sim.active) }

// ActiveAt returns the i-th decoding request in admission order,
// 0 <= i < Active().
func (s *ServerState) ActiveAt(i int) ActiveRequest {
	var a ActiveRequest
	a.ID, a.ArrivalTimeS, a.PromptTokens, a.FirstTokenTimeS, a.GeneratedTokens = s.active(i)
	return a
}

// active returns ActiveAt's fields one by one (in registers: a struct built
// and copied is loaded with wide loads that stall on its narrow stores,
// which a caller filling its own record, as the mpc adapter does, avoids).
func (s *ServerState) active(i int) (id int, arrivalS float64, prompt int, firstTokenS, generated float64) {
	j := s.sim.active[i]
	r := &s.sim.records[j]
	return r.RequestID, r.ArrivalTimeS, r.PromptTokens, r.FirstTokenTimeS, s.sim.progress[j].generated
}

// Completed is the number of completed requests.
func (s *ServerState) Completed() int { return len(s.sim.finished) }

// CompletedAt returns the record of the i-th request to complete,
// 0 <= i < Completed(): a completed request's output length is known.
func (s *ServerState) CompletedAt(i int) RequestRecord { return s.sim.records[s.sim.finished[i]] }

// arrived is the submission view of request j.
func (sim *simulation) arrived(j int) ArrivedRequest {
	r := &sim.records[j]
	return ArrivedRequest{ID: r.RequestID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens}
}

// RunInfo is what a ServerStateController learns once, before the first
// step: the plant it controls (limits, thermal constants and profile), the
// objectives requests are judged by (resolved: no zero TTFT or TPOT) and
// the scheduler's name.
type RunInfo struct {
	Plant         Plant
	SLO           SLO
	SchedulerName string
}

// A ServerStateController is a ClockController that also sees the server
// state a real serving engine knows. Simulate calls Start once before the
// first step, then, at every step, Observe and then RequestClock (this
// package's MPC only at the steps its request does not hold through:
// holdingController).
type ServerStateController interface {
	ClockController
	Start(info RunInfo) error
	Observe(state *ServerState)
}

// A Clairvoyant controller is given the whole workload, future arrivals and
// output lengths included, before the first step: an evaluation bound, not
// a realizable controller. Simulate calls Foresee after Start (for a
// ServerStateController) and before the first step. A fleet cannot run one
// (its replicas learn their requests only as they arrive).
type Clairvoyant interface {
	ClockController
	Foresee(requests []Request)
}

// A Planner is a ClockController that publishes the clock plans it makes,
// as the reference's model-predictive controllers do; the Result carries
// them (planned_clock_mhz, planned_clock_start_time_s, plan_dt_s) and its
// diagnostics (mpc_diagnostics).
type Planner interface {
	ClockController
	// StepPlan returns the plan made by the last RequestClock call, if it
	// made one: clocks in MHz, one per PlanDtS from startS. The slice may
	// be reused after the next RequestClock call.
	StepPlan() (plan []float64, startS float64, ok bool)
	// PlanDtS is the spacing of plan entries, s.
	PlanDtS() float64
	// Diagnostics summarizes the solves of the run so far.
	Diagnostics() MPCDiagnostics
}

// MPCDiagnostics is the reference's mpc_diagnostics block: how the solves of
// a model-predictive controller went. Wall-clock solve times are never part
// of it (they differ between machines).
type MPCDiagnostics struct {
	SuccessfulSolves int     `json:"successful_solves"` // successful_solves: solves whose plan was applied
	FallbackCount    int     `json:"fallback_count"`    // fallback_count: solves that ran out of budget or found no feasible plan
	ControlPeriodS   float64 `json:"control_period_s"`  // control_period_s: the control period, s
	HorizonSteps     int     `json:"horizon_steps"`     // horizon_steps: control periods in a plan
	// solve_time_deadline_s: the wall-clock deadline of a solve, s; nil
	// (null) without one (the default: solves are bounded by work only).
	SolveTimeDeadlineS *float64 `json:"solve_time_deadline_s"`
	// accepted_solves_met_deadline: every applied plan was found within
	// the deadline (a solve past it falls back, so this always holds).
	AcceptedSolvesMetDeadline bool `json:"accepted_solves_met_deadline"`
}

// planTrace holds the plans of the sampled steps of a Planner's run: the
// plan of sample i is arena[offsets[i]:offsets[i+1]] (empty without one)
// and starts[i] its start time (NaN without one).
type planTrace struct {
	arena   []float64
	offsets []int
	starts  []float64
}

// append adds the plan of one sample.
func (p *planTrace) append(plan []float64, startS float64) {
	if len(p.offsets) == 0 {
		p.offsets = append(p.offsets, 0)
	}
	p.arena = append(p.arena, plan...)
	p.offsets = append(p.offsets, len(p.arena))
	p.starts = append(p.starts, startS)
}

// truncate keeps the plans of the first n samples.
func (p *planTrace) truncate(n int) {
	if len(p.offsets) == 0 {
		return
	}
	p.arena = p.arena[:p.offsets[n]]
	p.offsets = p.offsets[:n+1]
	p.starts = p.starts[:n]
}

// columns returns the plan columns of the result: each sample's plan
// (empty without one) and start time (nil without one).
func (p *planTrace) columns() ([][]float64, []*float64) {
	plans := make([][]float64, len(p.starts))
	starts := make([]*float64, len(p.starts))
	for i := range p.starts {
		plans[i] = p.arena[p.offsets[i]:p.offsets[i+1]:p.offsets[i+1]]
		if !math.IsNaN(p.starts[i]) {
			starts[i] = &p.starts[i]
		}
	}
	return plans, starts
}
