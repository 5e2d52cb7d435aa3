package plant

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"servesim/internal/workload"
)

// A Stepper is one simulation run a step at a time, with the requests added
// as they arrive instead of all up front: the engine of a fleet, where a
// router decides at each arrival which replica's Stepper gets the request.
//
// Its run is Simulate's on the requests added, step for step and bit for
// bit, provided every request is added before the step in which it arrives
// (Add enforces this). One subtlety makes that hold when the requests are
// not all known up front: the reference stops after the step in which every
// request has arrived and completed, but a Stepper that has completed every
// request added so far cannot know whether more will come, so it may be
// stepped on (idle) past that point. It remembers the step at which it last
// became idle with nothing pending (the checkpoint; a Stepper that has no
// request yet is at its checkpoint before its first step) and, if no
// request is added after it, Result returns the run as of the checkpoint.
//
// A Stepper allocates nothing per step but the amortized growth of its
// trajectory and of its request list.
type Stepper struct {
	sim *simulation
	opt Options
	// lastStartS is the start of the last simulated step (-Inf before the
	// first): a request added now must arrive after it.
	lastStartS float64
	reserved   bool
	expired    bool
	// mark is the state at the checkpoint, valid while marked.
	mark   checkpoint
	marked bool
	// sum, when not nil, is the checksum of the requests added so far
	// (Summarize, Feed): their records may be gone at Result.
	sum *workload.Checksum
	// unsummed says that the Stepper keeps no checksum (SkipChecksum).
	unsummed bool
	// routed is Load's sum over the requests added and not yet arrived.
	routed routedSum
}

// SkipChecksum makes the Stepper keep no workload checksum of its
// requests: its Result's WorkloadChecksum is empty. A fleet's replica
// needs none (the fleet's names the workload), and a checksum costs a
// SHA-256 over every request's fields formatted. Call it before the first
// Add, Summarize or Feed.
func (st *Stepper) SkipChecksum() { st.unsummed = true }

// StartAt moves a Stepper that has not stepped yet to step step of its
// fleet's grid, which starts at timeS (the fleet's time, accumulated as the
// plant accumulates it): an elastic fleet's replica that becomes ready
// during the run. Its steps, trajectory and times continue the fleet's
// numbering; its metrics span its own steps (from the end of its first).
// It must be called before the first Step and any Add.
func (st *Stepper) StartAt(step int, timeS float64) error {
	sim := st.sim
	if sim.step != sim.startStep || len(sim.records) > 0 || st.reserved {
		return errors.New("StartAt after the stepper has started")
	}
	if step < 0 || !(timeS >= 0) || math.IsInf(timeS, 1) {
		return fmt.Errorf("StartAt step %d at %v s: expected a nonnegative step and time", step, timeS)
	}
	sim.step, sim.startStep, sim.timeS, sim.startS = step, step, timeS, timeS
	st.checkpoint()
	return nil
}

// AddWaited is Add for a request that waited elsewhere since its arrival (at
// a fleet's router while no replica was ready): it may arrive before the
// next step, and is then admitted at the next step, its record keeping its
// arrival, so that the wait counts in its TTFT. It must still arrive no
// earlier than the requests added before it.
func (st *Stepper) AddWaited(r Request) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("request %d: %w", r.ID, err)
	}
	if n := len(st.sim.records); n > 0 && r.ArrivalTimeS < st.sim.records[n-1].ArrivalTimeS {
		return errors.New("workload must be sorted by arrival_time_s")
	}
	st.sim.add(r)
	if st.sum != nil {
		st.sum.Add(r)
	}
	st.marked = false
	return nil
}

// CapPower caps the power of the steps to come at capW (a share of a
// fleet's power budget): the realized clock is lowered, as the power
// governor lowers it, while the scheduled phase's power at it exceeds
// capW, down to the lowest level (which may still exceed it). +Inf, or a
// cap at or above the plant's power limit, removes the cap.
func (st *Stepper) CapPower(capW float64) { st.sim.capW = capW }

// EnergyJ is the energy drawn over every step simulated so far, idle steps
// after the checkpoint included (Result drops those), J.
func (st *Stepper) EnergyJ() float64 { return st.sim.cumulativeEnergyJ }

// routedSum is Load's queued prompt tokens as of the last call: the queue's
// tokens (base) plus the prompts of the requests added and not yet arrived,
// from from up to next, added in that order. Between two steps, where
// nothing but Add changes the state (a router asking a replica again at
// every request routed; at the end of a run that passed
// MaxSimulationTimeS, every remaining request at once), the next call adds
// only the requests added since, in the same order, so the sum is the same
// to the bit and a run of n such calls costs O(n), not O(n^2).
type routedSum struct {
	valid               bool
	step, dropped, from int
	next                int
	base, tokens        float64
}

// checkpoint is what an idle step changes in a simulation: rolling back to
// one undoes the idle steps taken after it.
type checkpoint struct {
	step              int
	timeS             float64
	temperatureC      float64
	previousClockMHz  float64
	previousPowerW    float64
	cumulativeEnergyJ float64
	cumulativePrefill float64
	cumulativeDecode  float64
	lastRequestedMHz  float64
	lastPhase         stepPhase
	stats             stepStats
	samples           int
}

// NewStepper returns a Stepper on plant p under scheduler s and clock
// controller c, at time 0 with no request. capacityHint is the number of
// requests expected (room is reserved for them; more may be added).
func NewStepper(p Plant, s Scheduler, c ClockController, opt Options, capacityHint int) (*Stepper, error) {
	if _, ok := c.(Clairvoyant); ok {
		return nil, fmt.Errorf("clock controller %s needs the whole workload in advance, which a fleet replica never has (its router hands it each request as it arrives): run it on one GPU", c.Name())
	}
	sim, err := newSimulation(p, s, c, opt, max(0, capacityHint))
	if err != nil {
		return nil, err
	}
	st := &Stepper{sim: sim, opt: opt, lastStartS: math.Inf(-1)}
	st.checkpoint()
	return st, nil
}

// Add appends request r, which must be valid, arrive no earlier than the
// requests added before it and after the start of the last step simulated
// (it is then admitted at the step its arrival falls in, as in Simulate).
// Request identifiers must be unique; Add does not check that (a fleet
// checks its whole workload once with ValidateWorkload).
func (st *Stepper) Add(r Request) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("request %d: %w", r.ID, err)
	}
	if st.sim.prefilledOnly {
		return errors.New("a replica takes either requests to prefill or prefilled ones, not both")
	}
	if n := len(st.sim.records); n > 0 && r.ArrivalTimeS < st.sim.records[n-1].ArrivalTimeS {
		return errors.New("workload must be sorted by arrival_time_s")
	}
	if r.ArrivalTimeS <= st.lastStartS+TimeEpsilonS {
		return fmt.Errorf("request %d arrives at %v s, before the next step of the run (%v s)", r.ID, r.ArrivalTimeS, st.sim.timeS)
	}
	st.sim.add(r)
	if st.sum != nil {
		st.sum.Add(r)
	}
	st.marked = false
	return nil
}

// Step simulates one step. It reports whether the run would stop here under
// the reference's rule for the requests added so far: every one of them
// has arrived and completed, or the run has passed MaxSimulationTimeS (then
// Step simulates nothing; see Expired).
func (st *Stepper) Step() (done bool, err error) {
	sim := st.sim
	if st.expired || !(sim.timeS <= sim.plant.MaxSimulationTimeS+TimeEpsilonS) {
		st.expired = true
		return true, nil
	}
	if !st.reserved {
		lastArrivalS := 0.0
		if n := len(sim.records); n > 0 {
			lastArrivalS = sim.records[n-1].ArrivalTimeS
		}
		sim.reserveTrajectory(max(0, lastArrivalS-sim.startS))
		st.reserved = true
	}
	st.lastStartS = sim.timeS
	finished, err := sim.advance()
	if err != nil {
		return true, err
	}
	if finished && !st.marked {
		st.checkpoint()
	}
	return finished, nil
}

// LogCompletions makes the stepper keep the completion time of every
// request (Completions): a fleet's closed loop sends a waiting request
// when one completes.
func (st *Stepper) LogCompletions() { st.sim.gate.logged = true }

// OnComplete makes the stepper call f with the record of each request
// as it completes, within the Step that completes it (the record is the
// stepper's: f must not keep it).
func (st *Stepper) OnComplete(f func(*RequestRecord)) { st.sim.gate.onComplete = f }

// WaitingLongerThan is the number of requests waiting to be scheduled
// that arrived more than waitS before the next step starts, the queue's
// head excepted (it may have started its prefill): none of them can
// have its first token within waitS of its arrival, so each misses a TTFT
// objective of waitS. The waiting requests are kept in arrival order: a
// binary search, O(log queue).
func (st *Stepper) WaitingLongerThan(waitS float64) int {
	sim := st.sim
	if sim.pending-sim.head < 2 {
		return 0
	}
	cutoffS := sim.timeS - waitS
	waiting := sim.records[sim.head+1 : sim.pending]
	return sort.Search(len(waiting), func(i int) bool { return !(waiting[i].ArrivalTimeS < cutoffS) })
}

// Completions appends to dst the completion times since the last call (in
// the order the requests completed, which is the order of their times),
// and forgets them; none unless LogCompletions was called.
func (st *Stepper) Completions(dst []float64) []float64 {
	g := &st.sim.gate
	dst = append(dst, g.times...)
	g.times = g.times[:0]
	return dst
}

// Expired reports whether the run has passed MaxSimulationTimeS: no step
// can follow.
func (st *Stepper) Expired() bool { return st.expired }

// Idle reports whether every request added so far has completed.
func (st *Stepper) Idle() bool {
	sim := st.sim
	return sim.head == len(sim.records) && len(sim.active) == 0 && sim.waitingCount() == 0
}

// Steps is the number of steps simulated so far.
func (st *Stepper) Steps() int { return st.sim.step }

// Requests is the number of requests added so far.
func (st *Stepper) Requests() int { return len(st.sim.records) }

// checkpoint remembers the current state as the checkpoint.
func (st *Stepper) checkpoint() {
	sim := st.sim
	st.mark = checkpoint{
		step:              sim.step,
		timeS:             sim.timeS,
		temperatureC:      sim.temperatureC,
		previousClockMHz:  sim.previousClockMHz,
		previousPowerW:    sim.previousPowerW,
		cumulativeEnergyJ: sim.cumulativeEnergyJ,
		cumulativePrefill: sim.cumulativePrefill,
		cumulativeDecode:  sim.cumulativeDecode,
		lastRequestedMHz:  sim.lastRequestedMHz,
		lastPhase:         sim.lastPhase,
		stats:             sim.stats,
		samples:           sim.trace.Len(),
	}
	st.marked = true
}

// Checkpoint returns the number of steps at the checkpoint, and false when
// a request was added after it (the run cannot be rolled back).
func (st *Stepper) Checkpoint() (steps int, ok bool) { return st.mark.step, st.marked }

// rollback restores the checkpoint, undoing the idle steps after it.
func (st *Stepper) rollback() {
	sim, m := st.sim, &st.mark
	sim.step = m.step
	sim.timeS = m.timeS
	sim.temperatureC = m.temperatureC
	sim.previousClockMHz = m.previousClockMHz
	sim.previousPowerW = m.previousPowerW
	sim.cumulativeEnergyJ = m.cumulativeEnergyJ
	sim.cumulativePrefill = m.cumulativePrefill
	sim.cumulativeDecode = m.cumulativeDecode
	sim.lastRequestedMHz, sim.lastPhase = m.lastRequestedMHz, m.lastPhase
	sim.stats = m.stats
	sim.trace.truncate(m.samples)
	sim.plans.truncate(m.samples)
}

// Load is what a load balancer sees of a replica: its queue and KV cache,
// its temperature and clock, never a request's output length.
type Load struct {
	QueuedRequests int // requests added and not yet admitted to decoding (waiting for or in prefill)
	ActiveDecodes  int // requests decoding
	// QueuedPromptTokens is the prompt tokens still to prefill over the
	// queued requests.
	QueuedPromptTokens float64
	KVTokens           float64 // KV-cache occupancy, tokens
	TemperatureC       float64 // temperature at the end of the last step, degrees C
	ClockMHz           float64 // realized clock of the last step (the minimum realized clock before the first), MHz
	// Prefix is a view of its prefix cache (the zero view without one).
	Prefix PrefixCache
}

// Load returns the replica's state at the start of the next step,
// counting the requests already added for it. It costs O(active requests
// plus requests added and not yet arrived) at the first call after a step,
// O(active requests plus requests added since the last call) at the next.
func (st *Stepper) Load() Load {
	sim := st.sim
	l := Load{
		QueuedRequests: len(sim.records) - sim.head + sim.waitingCount(),
		ActiveDecodes:  len(sim.active),
		KVTokens:       sim.occupancy(),
		TemperatureC:   sim.temperatureC,
		ClockMHz:       sim.previousClockMHz,
	}
	if sim.engine != nil {
		l.Prefix = PrefixCache{sim.engine.cache}
	}
	base := 0.0
	if sim.head < sim.pending {
		base = sim.progress[sim.head].prefillRemaining + float64(sim.queuedPrompt-sim.records[sim.head].PromptTokens)
	}
	base += sim.waitingPrefill()
	from := max(sim.head, sim.pending)
	r := &st.routed
	if !r.valid || r.step != sim.step || r.dropped != sim.dropped || r.from != from || r.base != base {
		*r = routedSum{valid: true, step: sim.step, dropped: sim.dropped, from: from, next: from, base: base, tokens: base}
	}
	for ; r.next < len(sim.records); r.next++ {
		r.tokens += float64(sim.records[r.next].PromptTokens)
	}
	l.QueuedPromptTokens = r.tokens
	return l
}

// StepLoad is what the last simulated step drew and held.
type StepLoad struct {
	PowerW float64 // power drawn during the step, W
	Queued int     // requests queued or decoding at its end
}

// Last returns the last simulated step's power and queue (zero before the
// first step).
func (st *Stepper) Last() StepLoad {
	if st.sim.step == st.sim.startStep {
		return StepLoad{}
	}
	s := st.sim.last()
	return StepLoad{PowerW: s.powerW, Queued: s.prefillQueue + s.decodeActive}
}

// Totals are step counts of a run that a fleet adds up over its replicas.
type Totals struct {
	Steps        int     // steps simulated
	ActiveSteps  int     // steps with decoding requests
	StalledSteps int     // of those, steps that generated no decode token
	DurationS    float64 // end of the last step minus end of the first, 0 without steps
}

// Result ends the run: it rolls back to the checkpoint if no request was
// added after it, and returns what Simulate returns for the requests added
// (with no request: no step, no trajectory, and the metrics of an empty
// run). Call it once, after the last Step.
func (st *Stepper) Result() (*Result, Totals) {
	if st.marked {
		st.rollback()
	}
	st.handHeld()
	sim := st.sim
	span := sim.span()
	totals := Totals{
		Steps:        sim.step,
		ActiveSteps:  sim.stats.activeSteps,
		StalledSteps: sim.stats.stalledSteps,
		DurationS:    span.lastTimeS - span.firstTimeS,
	}
	records := sim.records
	checksum := st.checksum()
	if sim.step == sim.startStep {
		// No step: nothing sampled, not even a last step.
		res := sim.result(checksum, Options{Summary: true, SLO: st.opt.SLO})
		if !st.opt.Summary {
			res.Requests = records
		}
		return res, totals
	}
	return sim.result(checksum, st.opt), totals
}

// Records returns the request records, in the order the requests were
// added; they are final after Result.
func (st *Stepper) Records() []RequestRecord { return st.sim.records }

// ValidateWorkload applies the reference's checks on a workload: at least
// one request, each valid, unique identifiers, sorted by arrival.
func ValidateWorkload(requests []Request) error { return validateWorkload(requests) }

// truncate keeps the first n samples.
func (t *Trajectory) truncate(n int) {
	t.StepIndex = t.StepIndex[:n]
	t.TimeS = t.TimeS[:n]
	t.PrefillQueue = t.PrefillQueue[:n]
	t.DecodeActive = t.DecodeActive[:n]
	t.CompletedRequests = t.CompletedRequests[:n]
	t.KVTokens = t.KVTokens[:n]
	t.TemperatureC = t.TemperatureC[:n]
	t.PowerW = t.PowerW[:n]
	t.RequestedClockMHz = t.RequestedClockMHz[:n]
	t.RealizedClockMHz = t.RealizedClockMHz[:n]
	t.EnergyJ = t.EnergyJ[:n]
	t.Phase = t.Phase[:n]
	t.CumulativePrefillTokens = t.CumulativePrefillTokens[:n]
	t.CumulativeDecodeTokens = t.CumulativeDecodeTokens[:n]
}

// Close releases what the stepper's controller holds when it is an
// io.Closer (an exec: controller's child process) and returns its error,
// which says why the controller stopped the run; otherwise it does nothing.
// Every Stepper must be closed once it is no longer stepped.
func (st *Stepper) Close() error {
	if closer, ok := st.sim.controller.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}
