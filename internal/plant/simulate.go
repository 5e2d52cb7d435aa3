package plant

import (
	"context"
	"errors"
	"fmt"
	"math"

	"servesim/internal/profile"
)

// Options choose what a simulation keeps besides its metrics, and the
// objectives it judges requests by.
type Options struct {
	// Stride samples the trajectory at steps 0, Stride, 2*Stride, ... and
	// the last step, like the reference's as_dict(stride). Zero means 1.
	Stride int
	// Summary keeps no trajectory and no request records: memory is then
	// O(requests) whatever the number of steps.
	Summary bool
	// MaxSteps bounds the steps of the run (see CheckWork); zero means
	// DefaultMaxSteps.
	MaxSteps float64
	// SLO is what the violation rates and the slo block judge requests
	// by; a zero TTFTSeconds or TPOTSeconds takes the profile's (SLO.OrProfile).
	SLO SLO
	// Engine turns on the prefix cache and preemption; the zero value
	// keeps the reference's plant.
	Engine EngineOptions
	// Service chooses the service model: the zero value is the
	// reference's (one decode budget shared by the running requests); a
	// batched one serves a batch per engine iteration (see batched.go).
	Service ServiceModel
	// MaxConcurrency, when positive, closes the loop as a benchmark
	// client with that many slots does: a request is sent at the later of
	// its arrival and the moment fewer than MaxConcurrency requests are
	// outstanding, in arrival order; its record's arrival is when it was
	// sent. Zero is an open loop (every request at its arrival).
	MaxConcurrency int
	// RequestLog keeps, whatever Summary says, what a per-request log
	// needs: the request records and each request's KV-cache occupancy at
	// the start of its arrival step (Result.Log), one float per request.
	RequestLog bool
}

// requestProgress is a request's token progress during a simulation; its
// times are kept in its RequestRecord.
type requestProgress struct {
	outputTokens     float64
	prefillRemaining float64
	promptProcessed  float64
	generated        float64
	// scheduled is the tokens of the batched model's iteration in flight
	// for the request (0 when it has none).
	scheduled float64
}

// clockLevel is everything the plant needs about one profile level,
// evaluated once with the profile's own interpolation.
type clockLevel struct {
	mhz          float64
	realizedMHz  float64
	realizedErr  error
	prefillRate  float64
	decodeRate   float64
	prefillPower float64
	decodePower  float64
	idlePower    float64
	// idleStepPower is the power of a step that idles throughout:
	// stepPower(0, 0, time step).
	idleStepPower float64
	// governed is, for each phase a scheduler chooses (idle, prefill,
	// decode), the index of the level the power governor runs instead
	// of this one: the highest level not above it whose power in that
	// phase is within the power limit (the lowest if none is), this
	// level itself for a measured profile.
	governed [phaseDecode + 1]*clockLevel
	// lower is the level one below (the lowest level itself), where the
	// thermal protection moves.
	lower *clockLevel
	// quantized is the level a request of exactly this level's clock is
	// quantized down to (this level, unless two levels lie within
	// profile.ClockEpsilonMHz).
	quantized *clockLevel
	// memoryRate and computeRate are the batched model's memory
	// bandwidth (bytes/s) and compute (FLOP/s) at this level.
	memoryRate, computeRate float64
	// decode is the last decode-only step at this level: the tokens it
	// decoded (NaN before the first) and its power (decodeStepPower).
	decode struct {
		tokens, powerW float64
	}
}

// power is the profile power of phase at this level.
func (l *clockLevel) power(phase stepPhase) float64 {
	switch phase {
	case phasePrefill:
		return l.prefillPower
	case phaseDecode:
		return l.decodePower
	}
	return l.idlePower
}

// simulation is the state of one run. Request i is records[i] (its
// identity and times, NaN until they happen, handed to the Result as they
// are) and progress[i]. The queue is head:pending (arrival order, served
// from the front); active holds indices of the decoding requests in
// admission order.
type simulation struct {
	plant      Plant
	scheduler  Scheduler
	controller ClockController
	levels     []clockLevel
	clockMHz   []float64
	realized   []float64
	measured   bool
	decay      float64

	// schedulerKind and clockKind say how the step loop asks the
	// scheduler and the controller: the built-in ones without copying the
	// observation, and without the sum of GeneratedDecodeTokens, which
	// only other policies read (fullObservation). builtinController is the
	// controller when it is built in (nil otherwise), constantMHz the
	// request of a clockConstant controller and constantLevel the level it
	// is quantized down to, and reactive the level nearest the previous
	// clock for a clockReactive one.
	schedulerKind     schedulerKind
	clockKind         clockKind
	builtinController builtinController
	constantMHz       float64
	constantLevel     *clockLevel
	reactive          struct {
		previousMHz float64
		index       int
	}
	fullObservation bool
	// idleFast says that a step with nothing queued or decoding may take
	// the idle path (idleStep): the policies are built in.
	idleFast bool
	// plainPolicies says that the policies are a built-in scheduler and a
	// clockConstant or clockReactive controller, without the engine
	// features: the step loop asks them in place with the fields they read
	// (observeLoad) and nothing else.
	plainPolicies bool
	// obs is the observation of the current step: under plainPolicies,
	// only the fields observeLoad fills are current.
	obs Observation

	// stream yields the requests not added yet (nil once it has ended, or
	// when they are added by a Stepper); upcoming is its next request, due
	// at upcomingS (+Inf without one).
	stream    RequestStream
	upcoming  Request
	upcomingS float64
	// compacting says that the run drops the records of completed
	// requests to make room for new ones (makeRoom), after adding them to
	// requests, the request statistics (nil when records are kept).
	compacting bool
	requests   *requestStats
	expected   int // requests the stream is expected to yield (0: unknown)
	// onRecord, when not nil, is given each record as it is dropped
	// (Stepper.Summarize).
	onRecord func(*RequestRecord)
	// lent, when not nil, gives the request statistics the samples they do
	// not keep (Stepper.LendSamples).
	lent func() (ttft, tpot, latency []float64)

	records      []RequestRecord
	progress     []requestProgress
	dropped      int // records dropped from the front (compact)
	pending      int
	head         int
	queuedPrompt int // prompt tokens of the queued requests
	active       []int
	completed    int
	// engine is the state of the engine features, nil when all are off.
	engine *engine
	// batched is the batched service model's state, nil under the
	// reference's model; lookaheadS is how far past a step's start the
	// requests are read (the batched model serves them at their own
	// arrival within the step; 0 for the reference's).
	batched    *batchEngine
	lookaheadS float64
	// gate is the closed loop of Options.MaxConcurrency (n = 0: open).
	gate gate
	// arrivalKV[i] is the KV occupancy at the start of request i's arrival
	// step; nil unless Options.RequestLog.
	arrivalKV []float64
	// prefilledOnly says that the requests are prefilled elsewhere
	// (Stepper.AddPrefilled), and heldKV is the KV held outside the
	// running requests (Stepper.HoldKV; +0 unless a disaggregated fleet
	// holds some), tokens.
	prefilledOnly bool
	heldKV        float64
	// keptKV is the KV of the completed requests that keep theirs
	// (Stepper.KeepKV), tokens: +0 unless a disaggregated fleet's prefill
	// replica keeps some.
	keptKV float64

	timeS float64
	step  int
	// capW is the power cap of the next step (Stepper.CapPower); +Inf
	// without one.
	capW float64
	// startStep and startS are the step and time the run starts at: 0,
	// unless a fleet started its replica late (Stepper.StartAt).
	startStep         int
	startS            float64
	kvAtEnd           float64 // KV-cache occupancy at the end of the last step (0 before the first)
	temperatureC      float64
	previousClockMHz  float64
	previousPowerW    float64
	cumulativeEnergyJ float64
	cumulativePrefill float64
	cumulativeDecode  float64

	// quantized is the last requested clock (NaN before the first) and
	// the level it is quantized down to.
	quantized struct {
		requestedMHz float64
		level        *clockLevel
	}

	// lastRequestedMHz and lastPhase are what the last step requested and
	// served; the rest of its sample is the state at its end (last).
	lastRequestedMHz float64
	lastPhase        stepPhase
	stats            stepStats
	keep             bool
	trace            Trajectory

	// observer and planner are the controller, when it implements
	// ServerStateController or Planner. An observer sees state, and
	// finished lists the requests in completion order for it; a planner's
	// plans are kept for the sampled steps.
	observer ServerStateController
	planner  Planner
	// holding is the controller when it is a holdingController, and held
	// its hold: a step it covers is taken in place (idleStep, or the busy
	// path of the built-in policies), without asking the controller.
	holding  holdingController
	held     heldRequest
	state    ServerState
	finished []int
	plans    planTrace
	// plan is the planner's plan for the current step.
	plan struct {
		clocks []float64
		startS float64
	}
}

// Simulate replays requests (sorted by arrival, unique IDs) on plant p under
// scheduler s and clock controller c: the reference's simulate. The run
// ends when every request has completed or after MaxSimulationTimeS.
func Simulate(requests []Request, p Plant, s Scheduler, c ClockController, opt Options) (*Result, error) {
	return SimulateContext(context.Background(), requests, p, s, c, opt)
}

// CancelCheckSteps is how many steps a run takes between two looks at its
// context: often enough to stop within milliseconds, rarely enough to cost
// nothing measurable (a step takes tens of nanoseconds to microseconds).
const CancelCheckSteps = 1 << 12

// SimulateContext is Simulate that stops, returning ctx's error, within
// CancelCheckSteps steps of ctx being done.
func SimulateContext(ctx context.Context, requests []Request, p Plant, s Scheduler, c ClockController, opt Options) (*Result, error) {
	return simulateContext(ctx, requests, p, s, c, opt, WorkloadChecksum)
}

// simulateContext is SimulateContext with the workload checksum of
// requests given by checksum.
func simulateContext(ctx context.Context, requests []Request, p Plant, s Scheduler, c ClockController, opt Options, checksum func([]Request) string) (*Result, error) {
	sim, err := startSimulation(requests, p, s, c, opt)
	if err != nil {
		return nil, err
	}
	if err := sim.runToEnd(ctx); err != nil {
		return nil, err
	}
	return sim.result(checksum(requests), opt), nil
}

// runToEnd steps the simulation until it is over, then drains what it
// still holds; it returns ctx's error within CancelCheckSteps steps of ctx
// being done.
func (sim *simulation) runToEnd(ctx context.Context) error {
	for {
		done, err := sim.steps(CancelCheckSteps)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return sim.drain()
}

// validateWorkload applies the reference's checks on a workload.
func validateWorkload(requests []Request) error {
	if len(requests) == 0 {
		return errors.New("workload must contain at least one request")
	}
	seen := make([]bool, len(requests))
	var sparse map[int]bool
	for i, r := range requests {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("request %d: %w", r.ID, err)
		}
		if r.ID < len(seen) {
			if seen[r.ID] {
				return errors.New("request identifiers must be unique")
			}
			seen[r.ID] = true
		} else {
			if sparse == nil {
				sparse = map[int]bool{}
			}
			if sparse[r.ID] {
				return errors.New("request identifiers must be unique")
			}
			sparse[r.ID] = true
		}
		if i > 0 && r.ArrivalTimeS < requests[i-1].ArrivalTimeS {
			return errors.New("workload must be sorted by arrival_time_s")
		}
	}
	return nil
}

// startSimulation validates requests and prepares their run.
func startSimulation(requests []Request, p Plant, s Scheduler, c ClockController, opt Options) (*simulation, error) {
	if err := validateWorkload(requests); err != nil {
		return nil, err
	}
	n := len(requests)
	sim, err := newSimulation(p, s, c, opt, windowCapacity(opt, c, n))
	if err != nil {
		return nil, err
	}
	if err := sim.feed(&sliceStream{requests}, opt, n, requests[n-1].ArrivalTimeS); err != nil {
		return nil, err
	}
	if seer, ok := c.(Clairvoyant); ok {
		seer.Foresee(requests)
	}
	return sim, nil
}

// compactWindow is the most room a run that drops the records of completed
// requests (Options.Summary) reserves for the records in flight at first,
// and the least room it adds at once once it holds as many: 5.8 MB of
// records. A variable, so
// that tests can make small runs drop records.
var compactWindow = 1 << 16

// windowCapacity is the room to reserve for the records of a run of n
// requests under opt and controller c: all of them, unless the run drops
// the records of completed requests.
func windowCapacity(opt Options, c ClockController, n int) int {
	if compacts(opt, c) {
		return min(n, compactWindow)
	}
	return n
}

// compacts reports whether a run under opt and controller c drops the
// records of completed requests: with Options.Summary, unless a request
// log, the engine features (whose per-request state follows the records)
// or a controller that sees the server state (which names requests by
// their place among the records) need them.
func compacts(opt Options, c ClockController) bool {
	_, observer := c.(ServerStateController)
	// The batched model keeps its own preemption state, which follows
	// the records.
	engineState := opt.Engine.PrefixCache || (opt.Engine.Enabled() && !opt.Service.Batched())
	return opt.Summary && !opt.RequestLog && !engineState && !observer
}

// feed makes stream the source of the run's requests: each is added when it
// arrives (pull). n is the number of requests expected (0 if unknown) and
// lastArrivalS the arrival of the last one (0 if unknown), which size the
// request statistics and the trajectory.
func (sim *simulation) feed(stream RequestStream, opt Options, n int, lastArrivalS float64) error {
	sim.stream = stream
	if compacts(opt, sim.controller) {
		sim.compact(opt, n)
	}
	sim.reserveTrajectory(lastArrivalS)
	return sim.fetch()
}

// compact makes the run drop the records of completed requests after
// adding them to new request statistics, judged by opt's objectives, with
// room for the samples of the n requests expected (0: unknown) unless the
// run lends them (Stepper.LendSamples).
func (sim *simulation) compact(opt Options, n int) {
	sim.compacting = true
	room := n
	if sim.lent != nil {
		room = 0
	}
	sim.requests = newRequestStats(sim.plant.ReportingHorizonS, opt.SLO.ObjectivesFor(sim.plant.Profile, opt.Service), room)
	sim.requests.lent = sim.lent
	sim.expected = n
}

// newSimulation prepares a run on plant p with room for capacity requests;
// add appends the requests and reserveTrajectory sizes the trajectory.
func newSimulation(p Plant, s Scheduler, c ClockController, opt Options, capacity int) (*simulation, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if opt.Stride < 0 {
		return nil, errors.New("stride must be positive")
	}
	if err := CheckWork(p, opt); err != nil {
		return nil, err
	}
	if err := opt.SLO.Validate(); err != nil {
		return nil, err
	}
	prof := p.Profile
	var err error
	sim := &simulation{
		plant:            p,
		scheduler:        s,
		controller:       c,
		clockMHz:         prof.ClockMHz,
		realized:         prof.RealizedClockLevelsMHz(),
		measured:         prof.IsMeasured(),
		decay:            math.Exp(-p.TimeStepS / p.ThermalTimeConstantS),
		records:          make([]RequestRecord, 0, capacity),
		progress:         make([]requestProgress, 0, capacity),
		active:           make([]int, 0, min(p.MaxActiveRequests, capacity)),
		temperatureC:     p.AmbientTemperatureC,
		previousClockMHz: prof.MinRealizedClockMHz(),
		previousPowerW:   prof.Power(profile.PhaseIdle, prof.MinClockMHz()),
		stats:            newStepStats(p),
		keep:             !opt.Summary,
		upcomingS:        math.Inf(1),
		capW:             math.Inf(1),
	}
	if err := opt.Engine.Validate(p); err != nil {
		return nil, err
	}
	if err := opt.Service.Validate(); err != nil {
		return nil, err
	}
	if opt.MaxConcurrency < 0 {
		return nil, &FieldError{Field: FieldMaxConcurrency, Value: float64(opt.MaxConcurrency), Why: "must be 0 (an open loop) or positive"}
	}
	sim.gate.n = opt.MaxConcurrency
	switch {
	case opt.Service.Batched():
		sim.batched = newBatchEngine(p, opt.Service, schedulerKindOf(s), opt.Engine.Preemption == PreemptionRecompute, capacity)
		if opt.Engine.PrefixCache {
			// The engine's block cache and per-request records; its
			// queue and serving are the batched model's.
			if sim.engine, err = newEngine(p, opt.Engine, capacity); err != nil {
				return nil, err
			}
		}
		sim.lookaheadS = p.TimeStepS
	case opt.Engine.Enabled():
		if sim.engine, err = newEngine(p, opt.Engine, capacity); err != nil {
			return nil, err
		}
	}
	if opt.RequestLog {
		sim.arrivalKV = make([]float64, 0, capacity)
	}
	sim.trace.Stride = max(1, opt.Stride)
	sim.quantized.requestedMHz = math.NaN()
	sim.obs.KVCapacityTokens = p.KVCapacityTokens
	sim.obs.ClockLevelsMHz = sim.clockMHz
	sim.obs.RealizedClockLevelsMHz = sim.realized
	sim.schedulerKind = schedulerKindOf(s)
	sim.clockKind, sim.constantMHz = clockKindOf(c, &sim.obs)
	sim.builtinController = builtinClock(c)
	sim.reactive.previousMHz = math.NaN()
	sim.fullObservation = sim.schedulerKind == schedulerOther || sim.builtinController == nil
	sim.idleFast = !sim.fullObservation
	sim.plainPolicies = sim.schedulerKind != schedulerOther && (sim.clockKind == clockConstant || sim.clockKind == clockReactive) && sim.engine == nil
	sim.planner, _ = c.(Planner)
	sim.holding = holderOf(c, sim.schedulerKind)
	if observer, ok := c.(ServerStateController); ok {
		sim.observer = observer
		sim.state.sim = sim
		sim.finished = make([]int, 0, capacity)
		info := RunInfo{Plant: p, SLO: opt.SLO.ObjectivesFor(prof, opt.Service), SchedulerName: s.Name()}
		if err := observer.Start(info); err != nil {
			return nil, fmt.Errorf("clock controller %s: %w", c.Name(), err)
		}
	}
	sim.levels = make([]clockLevel, 0, len(prof.ClockMHz))
	for _, mhz := range prof.ClockMHz {
		realized, err := prof.RealizedClockForLevel(mhz)
		sim.levels = append(sim.levels, clockLevel{
			mhz:          mhz,
			realizedMHz:  realized,
			realizedErr:  err,
			prefillRate:  prof.Rate(profile.PhasePrefill, mhz),
			decodeRate:   prof.Rate(profile.PhaseDecode, mhz),
			prefillPower: prof.Power(profile.PhasePrefill, mhz),
			decodePower:  prof.Power(profile.PhaseDecode, mhz),
			idlePower:    prof.Power(profile.PhaseIdle, mhz),
		})
		level := &sim.levels[len(sim.levels)-1]
		level.idleStepPower = level.stepPower(0, 0, p.TimeStepS)
		level.decode.tokens = math.NaN()
	}
	for i := range sim.levels {
		sim.levels[i].lower = &sim.levels[max(0, i-1)]
		sim.levels[i].quantized = sim.quantize(sim.levels[i].mhz)
		for phase := range sim.levels[i].governed {
			index := i
			for !sim.measured && index > 0 && sim.levels[index].power(stepPhase(phase)) > p.PowerLimitW+PowerEpsilonW {
				index--
			}
			sim.levels[i].governed[phase] = &sim.levels[index]
		}
	}
	if sim.clockKind == clockConstant {
		sim.constantLevel = sim.quantize(sim.constantMHz)
	}
	if sim.batched != nil {
		sim.batched.levelRates(sim.levels)
	}
	return sim, nil
}

// add appends a request; it arrives after every request added before.
func (sim *simulation) add(r Request) {
	if sim.compacting && len(sim.records) == cap(sim.records) {
		sim.makeRoom()
	}
	sim.records = append(sim.records, RequestRecord{
		RequestID:       r.ID,
		ArrivalTimeS:    r.ArrivalTimeS,
		PrefillStartS:   math.NaN(),
		FirstTokenTimeS: math.NaN(),
		CompletionTimeS: math.NaN(),
		PromptTokens:    r.PromptTokens,
		OutputTokens:    r.OutputTokens,
	})
	sim.progress = append(sim.progress, requestProgress{
		outputTokens:     float64(r.OutputTokens),
		prefillRemaining: float64(r.PromptTokens),
	})
	if sim.engine != nil {
		sim.engine.add(r)
	}
	if sim.arrivalKV != nil {
		sim.arrivalKV = append(sim.arrivalKV, 0)
	}
}

// reserveTrajectory preallocates the trajectory of a run that keeps one:
// room for twice the span of the arrivals (to lastArrivalS; a run rarely
// lasts longer), within the step cap; a longer run grows the trajectory
// geometrically, a few allocations in all.
func (sim *simulation) reserveTrajectory(lastArrivalS float64) {
	if !sim.keep {
		return
	}
	sim.trace.reserve(preallocatedSamples(sim.plant, lastArrivalS, sim.trace.Stride))
}

// occupancy is the KV-cache occupancy: the reference's sum over every queued
// and active request, formed over the only ones that can hold tokens (the
// queue head and the active requests) in the same order, which gives the
// same floating-point sum since the others add exactly 0.0. Under the
// engine features it is counted the engine's way.
func (sim *simulation) occupancy() float64 {
	if sim.batched != nil {
		return sim.batchedOccupancy()
	}
	if sim.engine != nil {
		return sim.engineOccupancy()
	}
	return sim.plainOccupancy()
}

// plainOccupancy is occupancy without the engine features.
func (sim *simulation) plainOccupancy() float64 {
	total := 0.0
	if sim.head < sim.pending {
		r := &sim.progress[sim.head]
		total += r.promptProcessed + r.generated
	}
	return sim.activeOccupancy(total)
}

// activeOccupancy adds the active requests' tokens to total in order.
func (sim *simulation) activeOccupancy(total float64) float64 {
	for _, i := range sim.active {
		r := &sim.progress[i]
		total += r.promptProcessed + r.generated
	}
	return total
}

// observe fills obs with the observation at the start of the current step.
// Its KV occupancy is the one at the end of the last step: between two
// steps only arrivals change the state, and an arrival holds no KV (it
// adds exactly 0.0 to the sum). GeneratedDecodeTokens, a sum over the
// decoding requests, is left zero unless a policy that reads it runs.
// The fields that never change (the capacity and the levels) are set once,
// by newSimulation.
func (sim *simulation) observe(obs *Observation) {
	sim.observeLoad(obs)
	generated := 0.0
	if sim.fullObservation {
		for _, i := range sim.active {
			generated += sim.progress[i].generated
		}
	}
	obs.TimeS = sim.timeS
	obs.PreviousPowerW = sim.previousPowerW
	obs.ArrivedRequests = sim.dropped + sim.pending
	obs.CompletedRequests = sim.completed
	obs.GeneratedDecodeTokens = generated
	obs.PrefillRemainingTokens = 0
	if sim.head < sim.pending {
		// Only the head can be partly prefilled; the rest are whole prompts.
		obs.PrefillRemainingTokens = sim.progress[sim.head].prefillRemaining + float64(sim.queuedPrompt-sim.records[sim.head].PromptTokens)
	}
	sim.observeWaiting(obs)
}

// observeLoad fills the fields of obs that the built-in schedulers and the
// plain controllers read (plainPolicies): the step, the queue and the
// decoding requests, the KV occupancy, the temperature, the previous
// clock and the age of the oldest queued request, without the engine's
// waiting requests (observeWaiting adds them).
func (sim *simulation) observeLoad(obs *Observation) {
	obs.StepIndex = sim.step
	obs.PrefillQueue = sim.pending - sim.head
	obs.DecodeActive = len(sim.active)
	obs.KVTokens = sim.kvAtEnd
	obs.TemperatureC = sim.temperatureC
	obs.PreviousClockMHz = sim.previousClockMHz
	obs.PowerCapW = sim.capW
	obs.OldestPrefillAgeS = 0
	if sim.head < sim.pending {
		obs.OldestPrefillAgeS = pyMax(0, sim.timeS-sim.records[sim.head].ArrivalTimeS)
	}
}

// advance simulates one step. It reports whether the run is over.
func (sim *simulation) advance() (bool, error) { return sim.steps(1) }

// steps simulates up to n steps, fewer when the run is over (it reports
// whether it is). The step loop runs here, so that its state stays at
// hand from one step to the next. What runs every step or on every plain
// busy step stays written out, as the calls in it inline: the arrivals,
// the idle test, the built-in policies asked in place, the phase giving
// way, a decode step, the occupancy and the step's end (an idle step costs
// about 20 ns, a call that does not inline a few more). Only the decision
// of other policies (decide) and a prefill step (prefillStep) are calls of
// their own.
func (sim *simulation) steps(n int) (bool, error) {
	dt := sim.plant.TimeStepS
	lastStartS := sim.plant.MaxSimulationTimeS + TimeEpsilonS
	for range n {
		if !(sim.timeS <= lastStartS) {
			return true, nil
		}
		if err := sim.pull(); err != nil {
			return true, err
		}
		arrived := sim.pending
		switch {
		case sim.batched != nil:
			// Sent as the iterations reach their arrival (serveBatched).
		case sim.gate.n > 0:
			sim.send(sim.timeS)
		default:
			for sim.pending < len(sim.records) && sim.records[sim.pending].ArrivalTimeS <= sim.timeS+TimeEpsilonS {
				sim.queuedPrompt += sim.records[sim.pending].PromptTokens
				sim.pending++
			}
		}
		if sim.prefilledOnly && sim.batched == nil {
			sim.admitPrefilled(sim.timeS, sim.plant.MaxActiveRequests)
			sim.kvAtEnd = sim.plainOccupancy()
		}
		var (
			requested, power float64
			level            *clockLevel
			phase            stepPhase
			planned          bool
			err              error
		)
		endS := sim.timeS + dt
		if (sim.idleFast || sim.held.valid) && sim.head == sim.pending && len(sim.active) == 0 && sim.waitingCount() == 0 &&
			(sim.batched == nil || sim.batchedIdle(endS)) {
			if requested, level, err = sim.idleStep(); err != nil {
				return true, err
			}
			power, phase = level.idleStepPower, phaseIdle
		} else {
			sim.noteArrivals(arrived, sim.kvAtEnd)
			var (
				action    decision
				quantized *clockLevel
			)
			if sim.plainPolicies {
				// The built-in scheduler and a plain controller, asked in place
				// with the fields they read.
				obs := &sim.obs
				sim.observeLoad(obs)
				switch sim.schedulerKind {
				case schedulerChunked:
					action = ChunkedPrefill{}.decide(obs)
				case schedulerStatic:
					action = StaticBatch{}.decide(obs)
				default:
					action = ContinuousBatch{}.decide(obs)
				}
				requested, quantized = sim.constantMHz, sim.constantLevel
				if sim.clockKind == clockReactive {
					// reactiveClock, written out: its parts are inlined.
					i := Reactive{}.levelFrom(sim.reactivePrevious(obs), obs)
					requested, quantized = sim.clockMHz[i], sim.levels[i].quantized
				}
			} else if action, requested, quantized, planned, err = sim.decide(); err != nil {
				return true, err
			}

			// A phase with nothing to serve gives way to the other one.
			phase = action.phase
			switch {
			case sim.batched != nil:
				phase = sim.batchedPhase(endS)
			case phase == phasePrefill && !sim.queued():
				phase = phaseIdle
				if len(sim.active) > 0 {
					phase = phaseDecode
				}
			case phase == phaseDecode && len(sim.active) == 0:
				phase = phaseIdle
				if sim.queued() {
					phase = phasePrefill
				}
			}
			level = sim.realizedLevel(quantized, phase)
			if level.realizedErr != nil {
				return true, level.realizedErr
			}

			switch {
			case sim.batched != nil:
				power, phase = sim.serveBatched(level, sim.timeS, endS)
			case phase == phasePrefill:
				power, phase = sim.prefillStep(level, action.prefillCap, dt, endS)
			case phase == phaseDecode:
				decoded := sim.serveDecode(level.decodeRate*dt, endS, true)
				sim.cumulativeDecode += decoded
				if decoded <= TokenEpsilon {
					phase = phaseIdle
				}
				power = level.decodeStepPower(decoded, dt)
			default:
				power = level.idleStepPower
			}

			switch {
			case sim.batched != nil:
				sim.kvAtEnd = sim.batchedOccupancy()
			case sim.engine == nil:
				sim.kvAtEnd = sim.plainOccupancy()
			default:
				sim.kvAtEnd = sim.engineOccupancy()
			}
		}

		// The step's end: the temperature and energy, the state of the next
		// step, the statistics and, when sampled, the trajectory.
		sim.heat(power)
		sim.previousClockMHz = level.realizedMHz
		sim.previousPowerW = power
		sim.lastRequestedMHz, sim.lastPhase = requested, phase
		sim.timeS += dt
		sim.step++
		sim.stats.add(sim.cumulativeDecode, power, sim.temperatureC, sim.kvAtEnd, level.realizedMHz,
			sim.pending-sim.head+sim.waitingCount()+len(sim.active), len(sim.active))
		// The stride rule of as_dict: every stride-th step, and every step
		// holding a plan.
		if sim.keep && ((sim.step-1)%sim.trace.Stride == 0 || planned) {
			last := sim.last()
			sim.trace.append(&last)
			if sim.planner != nil {
				if !planned {
					sim.plan.clocks, sim.plan.startS = nil, math.NaN()
				}
				sim.plans.append(sim.plan.clocks, sim.plan.startS)
			}
		}
		if sim.over() {
			return true, nil
		}
	}
	return false, nil
}

// decide asks for the step's decision and clock when the policies are not
// the plain ones the loop asks in place: the hold's busy clock with the
// built-in scheduler, or the policies (askPolicies, which reports whether
// the step holds a plan). It returns the clock requested and its
// quantized level.
func (sim *simulation) decide() (action decision, requested float64, quantized *clockLevel, planned bool, err error) {
	if sim.holdsBusy() {
		// The hold's request, and the built-in scheduler asked in
		// place.
		obs := &sim.obs
		if sim.engine == nil {
			sim.observeLoad(obs)
		} else {
			sim.observe(obs)
		}
		if action, err = sim.schedule(obs); err != nil {
			return action, 0, nil, false, err
		}
		return action, sim.held.busyMHz, sim.held.busy, false, nil
	}
	if action, requested, planned, err = sim.askPolicies(); err != nil {
		return action, requested, nil, planned, err
	}
	return action, requested, sim.quantizedLevel(requested), planned, nil
}

// prefillStep serves a prefill step of dt ending at endS at level: at most
// prefillCap prompt tokens, then the decoding requests in the time left.
// It returns the step's power and the phase it served in (interleaved when
// it did both).
func (sim *simulation) prefillStep(level *clockLevel, prefillCap, dt, endS float64) (float64, stepPhase) {
	budget := pyMin(level.prefillRate*dt, prefillCap)
	served := sim.servePrefill(budget)
	sim.cumulativePrefill += served
	prefillTime, decodeTime := served/pyMax(level.prefillRate, RateFloorTokensPerS), 0.0
	sim.engine.chargeRecompute(level.prefillRate, sim.records)
	remaining := pyMax(0, dt-prefillTime)
	if len(sim.active) > 0 && remaining > TimeEpsilonS {
		decoded := sim.serveDecode(level.decodeRate*remaining, endS, false)
		sim.cumulativeDecode += decoded
		decodeTime = decoded / pyMax(level.decodeRate, RateFloorTokensPerS)
	}
	var phase stepPhase
	switch {
	case served > TokenEpsilon && decodeTime > TimeEpsilonS:
		phase = phaseInterleaved
	case served > TokenEpsilon:
		phase = phasePrefill
	case decodeTime > TimeEpsilonS:
		phase = phaseDecode
	default:
		phase = phaseIdle
	}
	return level.stepPower(prefillTime, decodeTime, dt), phase
}

// span is the span of the steps simulated: the first ends at 0 + the
// time step, the last at the current time.
func (sim *simulation) span() stepSpan {
	if sim.step == sim.startStep {
		return stepSpan{}
	}
	return stepSpan{firstTimeS: sim.startS + sim.plant.TimeStepS, lastTimeS: sim.timeS, energyJ: sim.cumulativeEnergyJ}
}

// last is the sample of the last step: the state at its end, which only
// the next step changes (or the drain of a run that drops its records,
// which keeps no trajectory), and what it requested and served.
func (sim *simulation) last() stepSample {
	return stepSample{
		index:             sim.step - 1,
		timeS:             sim.timeS,
		prefillQueue:      sim.pending - sim.head + sim.waitingCount(),
		decodeActive:      len(sim.active),
		completed:         sim.completed,
		kvTokens:          sim.kvAtEnd,
		temperatureC:      sim.temperatureC,
		powerW:            sim.previousPowerW,
		requestedClockMHz: sim.lastRequestedMHz,
		realizedClockMHz:  sim.previousClockMHz,
		energyJ:           sim.cumulativeEnergyJ,
		phase:             sim.lastPhase,
		cumulativePrefill: sim.cumulativePrefill,
		cumulativeDecode:  sim.cumulativeDecode,
	}
}

// queued reports whether any request waits for prefill.
func (sim *simulation) queued() bool {
	return sim.head < sim.pending || sim.engine.waitingCount() > 0
}

// waitingCount is the number of preempted requests waiting to be
// prefilled again: the engine features' or the batched model's.
func (sim *simulation) waitingCount() int {
	return sim.engine.waitingCount() + sim.batched.preemptedCount()
}

// over reports whether the run is over after a step: every request
// has arrived and completed.
func (sim *simulation) over() bool {
	return len(sim.active) == 0 && sim.head == sim.pending && sim.pending == len(sim.records) && sim.stream == nil && sim.waitingCount() == 0
}

// askPolicies observes the step in full and asks the scheduler, the
// controller and, when the controller is one, the server-state observer
// and the planner (whose plan it keeps in plan): any policies, as their
// interfaces say. It returns the scheduler's decision, the requested
// clock, and whether the planner made a plan.
func (sim *simulation) askPolicies() (action decision, requested float64, planned bool, err error) {
	obs := &sim.obs
	sim.observe(obs)
	if action, err = sim.schedule(obs); err != nil {
		return action, 0, false, err
	}
	if sim.observer != nil {
		sim.observer.Observe(&sim.state)
	}
	if requested, err = sim.requestClock(obs); err != nil {
		return action, 0, false, err
	}
	if sim.holding != nil {
		sim.refreshHold()
	}
	if sim.planner != nil {
		sim.plan.clocks, sim.plan.startS, planned = sim.planner.StepPlan()
	}
	return action, requested, planned, nil
}

// reactivePrevious is Reactive's previous level for obs, remembered for
// each previous clock (reactiveClock).
func (sim *simulation) reactivePrevious(obs *Observation) int {
	if sim.reactive.previousMHz != obs.PreviousClockMHz {
		sim.rememberReactivePrevious(obs)
	}
	return sim.reactive.index
}

// reactiveClock is Reactive's request for obs and the level it is
// quantized down to.
func (sim *simulation) reactiveClock(obs *Observation) (float64, *clockLevel) {
	i := Reactive{}.levelFrom(sim.reactivePrevious(obs), obs)
	return sim.clockMHz[i], sim.levels[i].quantized
}

// rememberReactivePrevious finds Reactive's previous level for obs.
func (sim *simulation) rememberReactivePrevious(obs *Observation) {
	sim.reactive.previousMHz = obs.PreviousClockMHz
	sim.reactive.index = Reactive{}.previousLevel(obs)
}

// idleStep is the clock request and the level of a step in which nothing
// is queued or decoding, under built-in policies (idleFast) or a held
// controller's request (held, under a built-in scheduler), and it sets the
// KV occupancy at the step's end: the scheduler would choose the idle
// phase, so it is not asked, nothing is served and the step's power is its
// level's idle power, computed once (idleStepPower). The clock, the
// temperature, the energy and time itself still advance step by step with
// the arithmetic of a busy step, so the run stays the reference's bit for
// bit.
func (sim *simulation) idleStep() (requested float64, level *clockLevel, err error) {
	obs := &sim.obs
	requested, quantized := sim.constantMHz, sim.constantLevel
	switch {
	case sim.held.valid:
		requested, quantized = sim.held.idleMHz, sim.held.idle
	case !sim.plainPolicies:
		sim.observe(obs)
		if requested, err = sim.requestClock(obs); err != nil {
			return 0, nil, err
		}
		quantized = sim.quantizedLevel(requested)
	case sim.clockKind == clockReactive:
		sim.observeLoad(obs)
		requested, quantized = sim.reactiveClock(obs)
	}
	level = sim.realizedLevel(quantized, phaseIdle)
	if level.realizedErr != nil {
		return 0, nil, level.realizedErr
	}
	switch {
	case sim.engine != nil && sim.batched == nil:
		sim.kvAtEnd = sim.engineOccupancy()
	case sim.batched != nil:
		sim.kvAtEnd = sim.keptKV // nothing else holds KV
	default:
		sim.kvAtEnd = 0 // nothing holds KV
	}
	return requested, level, nil
}

// stepPower is the power drawn over a step of dt at this level that
// prefills for prefillTime, decodes for decodeTime and idles the rest.
func (l *clockLevel) stepPower(prefillTime, decodeTime, dt float64) float64 {
	idleTime := pyMax(0, dt-prefillTime-decodeTime)
	energy := l.prefillPower*prefillTime + l.decodePower*decodeTime + l.idlePower*idleTime
	return energy / dt
}

// decodeStepPower is the power of a step of dt that only decodes decoded
// tokens at this level: stepPower(0, decoded / rate, dt), remembered for
// the last tokens decoded, which a steady decode repeats step after step.
func (l *clockLevel) decodeStepPower(decoded, dt float64) float64 {
	if decoded != l.decode.tokens {
		l.decode.tokens = decoded
		l.decode.powerW = l.stepPower(0, decoded/pyMax(l.decodeRate, RateFloorTokensPerS), dt)
	}
	return l.decode.powerW
}

// heat advances the temperature and the energy over a step drawing power.
func (sim *simulation) heat(power float64) {
	p := &sim.plant
	equilibrium := p.AmbientTemperatureC + p.ThermalResistanceCPerW*power
	sim.temperatureC = equilibrium + (sim.temperatureC-equilibrium)*sim.decay
	sim.cumulativeEnergyJ += power * p.TimeStepS
}

// realizedLevel is the profile level the plant runs for a request
// quantized down to level (the reference's _realized_clock): one level
// lower at or above the thermal limit, and for an unmeasured profile
// lowered further while the scheduled phase's power exceeds the power
// limit (governed).
func (sim *simulation) realizedLevel(level *clockLevel, phase stepPhase) *clockLevel {
	if sim.temperatureC >= sim.plant.ThermalLimitC {
		level = level.lower
	}
	level = level.governed[phase]
	if sim.capW < sim.plant.PowerLimitW {
		// A fleet's power budget (Stepper.CapPower): lower still while
		// the phase's power exceeds the replica's share.
		for level != level.lower && level.power(phase) > sim.capW+PowerEpsilonW {
			level = level.lower
		}
	}
	return level
}

// quantizedLevel is the level QuantizeClock(requested, true) picks.
// Controllers mostly repeat their request, so the last answer is kept.
func (sim *simulation) quantizedLevel(requested float64) *clockLevel {
	if sim.quantized.requestedMHz != requested {
		sim.quantized.requestedMHz, sim.quantized.level = requested, sim.quantize(requested)
	}
	return sim.quantized.level
}

// quantize is the level QuantizeClock(requested, true) picks.
func (sim *simulation) quantize(requested float64) *clockLevel {
	applied := sim.plant.Profile.QuantizeClock(requested, true)
	for i := range sim.levels {
		if sim.levels[i].mhz == applied {
			return &sim.levels[i]
		}
	}
	return &sim.levels[0]
}

// servePrefill is the reference's _serve_prefill: it prefills the queue
// from the front within budget tokens, admitting each finished prompt to
// decoding while fewer than MaxActiveRequests decode and KV room remains.
// It returns the prompt tokens served.
func (sim *simulation) servePrefill(budget float64) float64 {
	if sim.engine != nil {
		return sim.enginePrefill(budget)
	}
	if sim.head == sim.pending || budget <= 0 || sim.prefilledOnly {
		return 0
	}
	p := &sim.plant
	remaining := budget
	total := 0.0
	for sim.head < sim.pending && remaining > 1e-10 {
		item := &sim.progress[sim.head]
		if record := &sim.records[sim.head]; math.IsNaN(record.PrefillStartS) {
			record.PrefillStartS = sim.timeS
		}
		reserved := float64(len(sim.active)+1) * p.DecodeKVReserveTokensPerActive
		freeKV := pyMax(0, p.KVCapacityTokens-sim.heldKV-sim.occupancy()-reserved)
		local := remaining
		if len(sim.active) >= p.MaxActiveRequests && item.prefillRemaining <= local {
			local = pyMax(0, item.prefillRemaining-1e-9)
		}
		served := pyMin(pyMin(local, item.prefillRemaining), freeKV)
		if served <= TokenEpsilon {
			break
		}
		item.prefillRemaining -= served
		item.promptProcessed += served
		total += served
		remaining -= served
		if !(item.prefillRemaining <= 1e-8 && len(sim.active) < p.MaxActiveRequests) {
			break
		}
		item.prefillRemaining = 0
		sim.queuedPrompt -= sim.records[sim.head].PromptTokens
		sim.active = append(sim.active, sim.head)
		sim.head++
	}
	return total
}

// serveDecode is the reference's _serve_decode: it shares budget tokens
// (at most the free KV room) equally among the active requests, round after
// round, until it is spent or nobody progresses. Requests that reach their
// output length complete at endS. It returns the tokens served (none
// without active requests or budget: the rounds do not start). unserved
// says that nothing was served earlier in the step.
func (sim *simulation) serveDecode(budget, endS float64, unserved bool) float64 {
	if sim.engine != nil {
		return sim.engineDecode(budget, endS)
	}
	var occupied float64
	if head := sim.head; unserved && (head == sim.pending || sim.progress[head].promptProcessed+sim.progress[head].generated == 0) {
		// Since the end of the last step only arrivals, which hold no
		// KV, have changed the state, and the queue head holds none:
		// the last step's occupancy is the active requests' KV, summed
		// in the same order from the same +0.
		occupied = sim.kvAtEnd
	} else {
		occupied = sim.activeOccupancy(0)
	}
	freeKV := pyMax(0, sim.plant.KVCapacityTokens-sim.heldKV-occupied)
	remaining := pyMin(budget, freeKV)
	total := 0.0
	active, progress := sim.active, sim.progress
	for remaining > 1e-10 && len(active) > 0 {
		share := remaining
		if n := len(active); n > 1 {
			// Dividing by one is exact: a lone request skips the division.
			share = remaining / float64(n)
		}
		progressed := 0.0
		finished := 0
		for _, i := range active {
			item := &progress[i]
			served := pyMin(share, item.outputTokens-item.generated)
			if served <= 0 {
				continue
			}
			if item.generated == 0 {
				// The first token (without the engine features, a
				// request's first token time is NaN until then).
				sim.records[i].FirstTokenTimeS = endS
			}
			item.generated += served
			total += served
			remaining -= served
			progressed += served
			if item.generated >= item.outputTokens-1e-8 {
				item.generated = item.outputTokens
				sim.records[i].CompletionTimeS = endS
				sim.gate.complete(&sim.records[i])
				finished++
				if sim.observer != nil {
					sim.finished = append(sim.finished, i)
				}
			}
		}
		if finished > 0 {
			sim.dropCompleted(finished)
			active = sim.active
		}
		if progressed <= TokenEpsilon {
			break
		}
	}
	return total
}

// result assembles the Result after the last step; checksum is the
// workload's.
func (sim *simulation) result(checksum string, opt Options) *Result {
	records := sim.records
	requests := sim.requests
	if requests == nil {
		requests = newRequestStats(sim.plant.ReportingHorizonS, opt.SLO.ObjectivesFor(sim.plant.Profile, opt.Service), len(records))
	}
	requests.addAll(records)
	metrics, slo := sim.stats.metrics(sim.span(), requests, sim.plant)
	res := &Result{
		ControllerName:   sim.controller.Name(),
		SchedulerName:    sim.scheduler.Name(),
		Metrics:          metrics,
		ProfileStatus:    sim.plant.Profile.Status,
		WorkloadChecksum: checksum,
		SLO:              slo,
		Steps:            sim.step,
		Engine:           sim.engineReport(),
		Service:          sim.serviceReport(),
		Log:              sim.requestLog(),
	}
	if sim.planner != nil {
		diagnostics := sim.planner.Diagnostics()
		res.MPCDiagnostics = &diagnostics
	}
	if opt.Summary {
		return res
	}
	res.Engine.markRecords(records)
	if n := sim.trace.Len(); n == 0 || sim.trace.StepIndex[n-1] != sim.step-1 {
		last := sim.last()
		sim.trace.append(&last)
		if sim.planner != nil {
			sim.plans.append(nil, math.NaN())
		}
	}
	res.Trajectory = sim.trace
	res.Requests = records
	if sim.planner == nil {
		res.PlannedClockMHz = make([][]float64, sim.trace.Len())
		res.PlannedClockStartTimeS = make([]*float64, sim.trace.Len())
		return res
	}
	res.PlannedClockMHz, res.PlannedClockStartTimeS = sim.plans.columns()
	dt := sim.planner.PlanDtS()
	res.PlanDtS = &dt
	return res
}

// dropCompleted removes the finished requests that completed in this
// decode round from the active list, keeping admission order, and counts
// them as completed.
func (sim *simulation) dropCompleted(finished int) {
	kept := sim.active[:0]
	for _, i := range sim.active {
		if math.IsNaN(sim.records[i].CompletionTimeS) {
			kept = append(kept, i)
		}
	}
	sim.active = kept
	sim.completed += finished
}
