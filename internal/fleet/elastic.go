package fleet

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// Scaling makes a fleet elastic (Config.Scaling): replicas have a
// lifecycle, provisioning (the node comes up: billed, no power to the GPU)
// -> loading (weights and warm-up: billed, the GPU's idle power at its
// lowest clock) -> ready (routable) -> draining (no new request; it
// finishes its running and queued ones) -> released (not billed). Every
// IntervalS, from 0, the autoscaler is asked for a count, which the fleet
// clamps to [MinReplicas, MaxReplicas] and follows: a scale-up first
// returns draining replicas to service (their node never left), newest
// drain first, then starts new ones; a scale-down first cancels replicas
// not ready yet (provisioning, then loading, newest first), then drains
// the ready ones with the fewest outstanding requests (the newest on a
// tie). Routers see only the ready replicas; a request that arrives when
// none is ready waits at the router, and its wait counts in its TTFT.
//
// An elastic fleet runs in lock-step on a workload held whole, of one
// group: the replicas it starts are that group's. Every replica's plant
// run starts at the step it becomes ready (plant.Stepper.StartAt), so its
// metrics and trajectory are the reference's for the requests routed to
// it, from then on; the fleet's metrics combine them as for a fixed fleet.
// What the fleet is billed for is in ScalingResult.
type Scaling struct {
	Autoscaler Autoscaler
	// Spec is the autoscaler as --autoscale gave it, for the document.
	Spec        string
	MinReplicas int // 0 or more
	MaxReplicas int // MinReplicas to MaxReplicas (the package's), at least 1
	// InitialReplicas are ready at 0 (started before the trace), from
	// MinReplicas to MaxReplicas; a Planned autoscaler's own count, clamped
	// to the bounds, takes its place.
	InitialReplicas   int
	IntervalS         float64 // positive
	ProvisionS, LoadS float64 // 0 or more
	GPUCostPerHour    float64 // $ per billed replica-hour, 0 or more
	EnergyPricePerKWh float64 // $ per kWh, 0 or more
	// PowerLimitW, when positive, is the fleet's power budget: every step,
	// the budget rule PowerBudget gives each stepping replica a cap
	// (plant.Stepper.CapPower) out of it, less what the loading replicas
	// draw. 0: no budget.
	PowerLimitW float64
	// Groups, when not nil, scales each group of the fleet
	// (Config.Groups, in order) on its own: its autoscaler, bounds and
	// initial size; the fields above are then the fleet's defaults, and
	// the requests waiting at the router count in every group's
	// observation. Nil: the fleet is Config.Groups[0], scaled by the
	// fields above.
	Groups []GroupScaling
	// PowerBudget is the rule: BudgetEqual (or "") shares it equally,
	// BudgetQueue in proportion to each replica's queued and decoding
	// requests at the end of its last step, plus one.
	PowerBudget string
}

// GroupScaling is how one group of an elastic fleet scales.
type GroupScaling struct {
	Autoscaler                                Autoscaler // its own instance
	MinReplicas, MaxReplicas, InitialReplicas int
}

// The fleet power budget rules.
const (
	BudgetEqual = "equal"
	BudgetQueue = "queue"
)

// BudgetNames lists the fleet power budget rules.
var BudgetNames = []string{BudgetEqual, BudgetQueue}

// ScalingError is a bad Scaling setting: Field names it as the document
// does (min_replicas, max_replicas, initial_replicas, scale_interval_s,
// provision_time_s, load_time_s, gpu_cost_per_hour, energy_price_per_kwh).
type ScalingError struct {
	Field string
	Value float64
	Why   string
}

func (e *ScalingError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, fmtG(e.Value), e.Why)
}

// Validate checks the settings; errors are *ScalingError.
func (s *Scaling) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case s.Autoscaler == nil:
		return errors.New("elastic fleet without an autoscaler")
	case s.MinReplicas < 0 || s.MinReplicas > MaxReplicas:
		return &ScalingError{"min_replicas", float64(s.MinReplicas), fmt.Sprintf("expected a whole number from 0 to %d", MaxReplicas)}
	case s.MaxReplicas < 1 || s.MaxReplicas > MaxReplicas:
		return &ScalingError{"max_replicas", float64(s.MaxReplicas), fmt.Sprintf("expected a whole number from 1 to %d", MaxReplicas)}
	case s.MinReplicas > s.MaxReplicas:
		return &ScalingError{"min_replicas", float64(s.MinReplicas), fmt.Sprintf("above max_replicas %d", s.MaxReplicas)}
	case s.InitialReplicas < s.MinReplicas || s.InitialReplicas > s.MaxReplicas:
		return &ScalingError{"initial_replicas", float64(s.InitialReplicas), fmt.Sprintf("expected a count from min_replicas %d to max_replicas %d", s.MinReplicas, s.MaxReplicas)}
	case !(s.IntervalS > 0) || !finite(s.IntervalS):
		return &ScalingError{"scale_interval_s", s.IntervalS, "expected a positive finite number of seconds"}
	case !(s.ProvisionS >= 0) || !finite(s.ProvisionS):
		return &ScalingError{"provision_time_s", s.ProvisionS, "expected a finite number of seconds, 0 or more"}
	case !(s.LoadS >= 0) || !finite(s.LoadS):
		return &ScalingError{"load_time_s", s.LoadS, "expected a finite number of seconds, 0 or more"}
	case !(s.GPUCostPerHour >= 0) || !finite(s.GPUCostPerHour):
		return &ScalingError{"gpu_cost_per_hour", s.GPUCostPerHour, "expected a finite price, 0 or more"}
	case !(s.EnergyPricePerKWh >= 0) || !finite(s.EnergyPricePerKWh):
		return &ScalingError{"energy_price_per_kwh", s.EnergyPricePerKWh, "expected a finite price, 0 or more"}
	case !(s.PowerLimitW >= 0) || !finite(s.PowerLimitW):
		return &ScalingError{"fleet_power_limit_w", s.PowerLimitW, "expected a finite power, 0 (none) or more"}
	case s.PowerBudget != "" && s.PowerBudget != BudgetEqual && s.PowerBudget != BudgetQueue:
		return fmt.Errorf("fleet_power_budget %q: expected equal or queue", s.PowerBudget)
	}
	total := 0
	for i, g := range s.Groups {
		switch {
		case g.Autoscaler == nil:
			return fmt.Errorf("group %d: no autoscaler", i)
		case g.MinReplicas < 0 || g.MaxReplicas < 1 || g.MinReplicas > g.MaxReplicas:
			return &ScalingError{fmt.Sprintf("group %d: min_replicas", i), float64(g.MinReplicas), fmt.Sprintf("expected 0 to max_replicas %d (at least 1)", g.MaxReplicas)}
		case g.InitialReplicas < g.MinReplicas || g.InitialReplicas > g.MaxReplicas:
			return &ScalingError{fmt.Sprintf("group %d: initial_replicas", i), float64(g.InitialReplicas), fmt.Sprintf("expected a count from min_replicas %d to max_replicas %d", g.MinReplicas, g.MaxReplicas)}
		}
		if total += g.MaxReplicas; total > MaxReplicas {
			return &ScalingError{fmt.Sprintf("group %d: max_replicas", i), float64(g.MaxReplicas), fmt.Sprintf("the groups' max_replicas pass %d", MaxReplicas)}
		}
	}
	return nil
}

// groups are the groups' scalings: Groups, or the fleet's fields as one.
func (s *Scaling) groups() []GroupScaling {
	if s.Groups != nil {
		return s.Groups
	}
	return []GroupScaling{{Autoscaler: s.Autoscaler, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, InitialReplicas: s.InitialReplicas}}
}

// mostUp is the most replicas the fleet holds at once: the sum of the
// groups' maxima.
func (s *Scaling) mostUp() int {
	n := 0
	for _, g := range s.groups() {
		n += g.MaxReplicas
	}
	return n
}

// lifePhase is where a replica is in its lifecycle.
type lifePhase uint8

const (
	lifeProvisioning lifePhase = iota
	lifeLoading
	lifeReady
	lifeDraining
	lifeReleased
)

// instance is one replica an elastic fleet started.
type instance struct {
	group   int // its group's index
	replica int // replica number once ready, -1 before
	phase   lifePhase
	// The times it entered each phase (NaN: not reached).
	startedS, loadingS, readyS, drainingS, releasedS float64
	st                                               *plant.Stepper
	routed                                           []int // workload indices routed to it, in order (held whole)
	count                                            int
	deferred                                         deferredPower
	loadEnergyJ                                      float64 // drawn while loading
	energyJ                                          float64 // its plant's, every step (read at its end)
	returned                                         int     // times returned from draining to service
}

// elastic is an elastic run in progress.
type elastic struct {
	e      *engine
	sc     Scaling
	groups []*groupScale
	insts  []*instance // every replica started, in start order
	alive  []*instance // those not released, in start order
	ready  []*instance // the ready ones, in replica order
	states []ReplicaState
	// requested is the count the fleet follows: its groups' sum.
	requested int
	// queue holds the arrivals waiting at the router.
	queue     routerQueue
	step      int
	timeS     float64
	decisions int // decisions taken; the next is at decisions*IntervalS
	// loadingPowerW is a loading replica of the first group's draw.
	loadingPowerW float64
	// window holds the metrics pipeline's judgments of the completions
	// of the last MetricsWindowS, when an autoscaler observes (observing).
	window    []judgment
	observing bool
	// counts are the arrivals, completions and objectives met per scale
	// interval.
	counts   windowCounts
	events   []ScaleEvent
	series   ScaleSeries
	stride   int
	keep     bool
	peakW    float64
	obs      ScaleObservation
	fleetObs fleetObservation
	// Per scale interval: the steps, and the ready and billed replicas
	// summed over them.
	windowSteps, readySteps, billedSteps []int
	sampled                              int     // steps sampled in the series
	lastPowerW                           float64 // the last step's billed power
	initial                              int     // replicas ready at 0
	// The fleet power budget's greatest excess, and the steps over it.
	violationW     float64
	violationSteps int
	weights        []float64
	// pools, in a disaggregated fleet (elastic_disagg.go), are its prefill
	// and decode pools, which route, step and move the KV; index maps a
	// request's ID to its workload index (for the judgments of its
	// completion); nil otherwise.
	pools *disaggPools
	index map[int]int
	// poolAlive and poolReady are the step's stepping and routable
	// replicas of each pool, in start and replica order.
	poolAlive, poolReady [2][]int
}

// budget gives each stepping replica its cap of the fleet's power budget
// for the step: what the loading replicas leave, shared by the rule.
func (el *elastic) budget() {
	avail := el.sc.PowerLimitW
	el.weights = el.weights[:0]
	total := 0.0
	for _, in := range el.alive {
		switch in.phase {
		case lifeLoading:
			avail -= el.groups[in.group].loadingPowerW
		case lifeReady, lifeDraining:
			w := 1.0
			if el.sc.PowerBudget == BudgetQueue {
				w += float64(in.st.Last().Queued)
			}
			el.weights = append(el.weights, w)
			total += w
		}
	}
	avail = max(0, avail)
	j := 0
	for _, in := range el.alive {
		if in.phase == lifeReady || in.phase == lifeDraining {
			in.st.CapPower(avail * el.weights[j] / total)
			j++
		}
	}
}

// groupScale is one group of an elastic run.
type groupScale struct {
	GroupScaling
	index     int
	name      string
	template  replicaSpec
	requested int
	// loadingPowerW is a loading replica's draw: its profile's idle power
	// at its lowest clock.
	loadingPowerW float64
}

// judgment is one completion the metrics pipeline judged.
type judgment struct {
	timeS float64
	met   bool
}

// ScaleEvent is one change of the requested replica count.
type ScaleEvent struct {
	TimeS float64 `json:"time_s"` // time_s: when, s since the first arrival
	// Group is the group scaled, in a fleet whose groups scale on their
	// own (left out otherwise).
	Group  string `json:"group,omitempty"`
	From   int    `json:"from"`   // from: the count asked for before
	To     int    `json:"to"`     // to: the count asked for now
	Reason string `json:"reason"` // reason: the autoscaler's
}

// ScaleSeries is an elastic fleet's replica counts over time, sampled as
// the replicas' trajectories are (every Stride-th step and the last): at
// the end of each step, the count asked for, the replicas in each phase,
// the requests waiting at the router, and the fleet's billed power (every
// stepping replica's plus the loading ones').
type ScaleSeries struct {
	TimeS         []float64 `json:"time_s"`
	Requested     []int     `json:"requested"`
	Provisioning  []int     `json:"provisioning"`
	Loading       []int     `json:"loading"`
	Ready         []int     `json:"ready"`
	Draining      []int     `json:"draining"`
	RouterWaiting []int     `json:"router_waiting"`
	PowerW        []float64 `json:"power_w"`
	// GroupReady is, in a fleet whose groups scale on their own, each
	// group's ready replicas (in group order) at each sample; left out
	// otherwise.
	GroupReady [][]int `json:"group_ready,omitempty"`
}

// ScalingResult is what an elastic run adds to a fleet's: its lifecycle,
// events and series, and the billed time and energy.
type ScalingResult struct {
	Scaling Scaling
	// Lifecycles has one entry per replica started, in start order.
	Lifecycles []Lifecycle
	Events     []ScaleEvent
	Windows    []ScaleWindow
	Series     ScaleSeries // empty with Summary
	EndS       float64     // the end of the run's last step: replicas still up are billed to it
	PeakPowerW float64     // the greatest billed power of a step
	// LoadingPowerW is a loading replica's draw.
	LoadingPowerW float64
	// InitialReplicas were ready at 0.
	InitialReplicas int
	// PowerViolationW is the most the billed power passed the fleet's
	// power budget in a step (0 without one), and PowerViolationSteps the
	// steps it did.
	PowerViolationW     float64
	PowerViolationSteps int
}

// Lifecycle is one replica's lifecycle; a phase never reached is NaN
// (null).
type Lifecycle struct {
	Group      int     `json:"-"`           // its group's index in Config.Groups
	Replica    int     `json:"replica"`     // replica: its number among the replicas that became ready; -1 if it never did
	StartedS   float64 `json:"started_s"`   // started_s: provisioning began (0 for those up before the trace)
	LoadingS   float64 `json:"loading_s"`   // loading_s: loading began
	ReadyS     float64 `json:"ready_s"`     // ready_s: routable from
	DrainingS  float64 `json:"draining_s"`  // draining_s: drained from (the last drain if returned to service)
	ReleasedS  float64 `json:"released_s"`  // released_s: no longer billed; null if up at the end
	BilledS    float64 `json:"billed_s"`    // billed_s: from started_s to its release or the end of the run
	EnergyJ    float64 `json:"energy_j"`    // energy_j: drawn while billed (loading at idle power, then every step of its plant)
	Requests   int     `json:"requests"`    // requests: routed to it
	ReturnedTo int     `json:"returned_to"` // returned_to: times a scale-up returned it from draining to service
}

// runElastic runs an elastic fleet to the end.
func (e *engine) runElastic(sc *Scaling) (el *elastic, err error) {
	if e.cfg.MaxConcurrency > 0 {
		return nil, errors.New("an elastic fleet has no closed loop (max concurrency)")
	}
	el = &elastic{
		e: e, sc: *sc,
		stride: max(1, e.cfg.Stride), keep: !e.cfg.Summary,
		counts: windowCounts{intervalS: sc.IntervalS},
	}
	el.queue.src = &heldArrivals{requests: e.requests}
	if e.stream != nil {
		el.queue.src = &streamedArrivals{ws: e.stream.ws}
	}
	el.queue.onTake = func(i int, arrivalS float64) {
		el.counts.arrive(arrivalS)
		if e.stream != nil {
			e.stream.samples.grow(i)
		}
	}
	static := true
	var most []replicaSpec
	for i, g := range sc.groups() {
		gs := &groupScale{GroupScaling: g, index: i}
		if sc.Groups != nil {
			gs.name = e.cfg.Groups[i].Name
		}
		// The group's replicas are built as prepare builds a fixed
		// fleet's (a group may start with none).
		p := e.cfg.Plant
		p.Profile = e.cfg.Groups[i].Profile
		gs.template = replicaSpec{group: i, plant: p, options: e.cfg.ControllerOptions}
		prof := gs.template.plant.Profile
		gs.loadingPowerW = prof.Power(profile.PhaseIdle, prof.MinClockMHz())
		el.groups = append(el.groups, gs)
		if _, ok := g.Autoscaler.(Static); !ok {
			static = false
			el.observing = true
		}
		for range g.MaxReplicas {
			most = append(most, gs.template)
		}
	}
	el.loadingPowerW = el.groups[0].loadingPowerW
	// The fixed point of the power sums holds the most replicas up at
	// once (a static fleet's: its own, today's quantum).
	if static {
		most = e.specs
	}
	e.sums.scale = powerScale(most)
	e.specs, e.replicas = nil, nil
	e.sums.reserve(e.expectedSteps())
	if Disaggregated(e.cfg.Groups) {
		if err := el.makePools(); err != nil {
			return el, err
		}
	}
	defer func() {
		for _, g := range el.groups {
			if closer, ok := g.Autoscaler.(io.Closer); ok {
				if cerr := closer.Close(); cerr != nil && err == nil {
					err = cerr
				}
			}
		}
		var steppers []*plant.Stepper
		for _, in := range el.alive {
			if in.st != nil {
				steppers = append(steppers, in.st)
			}
		}
		if cerr := closeAll(steppers); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for _, g := range el.groups {
		initial := g.InitialReplicas
		if p, ok := g.Autoscaler.(Planned); ok {
			initial = min(max(p.InitialReplicas(sc.ProvisionS+sc.LoadS+sc.IntervalS), g.MinReplicas), g.MaxReplicas)
		}
		if s, ok := g.Autoscaler.(*Stabilized); ok {
			s.seed(initial)
		}
		g.requested = initial
		el.requested += initial
		el.initial += initial
		hint := 0 // a streamed run's summarizing replicas
		if e.stream == nil {
			hint = len(e.requests)/max(1, initial) + 1
		}
		for range initial {
			in := el.start(g.index, 0)
			in.loadingS, in.readyS = 0, 0
			if err := el.makeReady(in, hint); err != nil {
				return el, err
			}
		}
	}
	el.sortReady()
	for {
		done, err := el.advance()
		if err != nil {
			return el, err
		}
		if done {
			break
		}
		if el.step%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return el, err
			}
		}
	}
	if el.step > 0 && el.sampled != el.step {
		el.step--
		el.sample(el.lastPowerW, true, el.timeS)
		el.step++
	}
	// Requests arriving after the run are routed on the final states,
	// when a replica is ready.
	if len(el.ready) > 0 {
		if err := el.routeUntil(math.Inf(1)); err != nil {
			return el, err
		}
	}
	if err := el.queue.src.err(); err != nil {
		return el, err
	}
	return el, el.finishAll()
}

// start starts a replica of group g provisioning at timeS.
func (el *elastic) start(g int, timeS float64) *instance {
	in := &instance{group: g, replica: -1, phase: lifeProvisioning, startedS: timeS,
		loadingS: math.NaN(), readyS: math.NaN(), drainingS: math.NaN(), releasedS: math.NaN()}
	el.insts = append(el.insts, in)
	el.alive = append(el.alive, in)
	return in
}

// makeReady gives in its plant, starting at the current step, and its
// replica number.
func (el *elastic) makeReady(in *instance, hint int) error {
	e := el.e
	k := len(e.specs)
	e.specs = append(e.specs, el.groups[in.group].template)
	e.replicas = append(e.replicas, Replica{})
	st, err := e.newStepper(k, hint)
	if err != nil {
		return err
	}
	if s := e.stream; s != nil {
		w := newSampleWriter(&s.samples, e.cfg.Plant.ReportingHorizonS, e.slo(k))
		s.writers = append(s.writers, w)
		st.Summarize(0, w.record)
	}
	if el.pools != nil {
		st.OnComplete(el.judgePooled(k))
	} else {
		slo := e.slo(k)
		st.OnComplete(func(r *plant.RequestRecord) { el.judge(r, slo) })
	}
	if err := st.StartAt(el.step, el.timeS); err != nil {
		st.Close()
		return err
	}
	in.st, in.replica, in.phase = st, k, lifeReady
	switch {
	case el.pools != nil:
		el.pools.add(k, st)
	case e.stream == nil:
		in.routed = make([]int, 0, hint)
	}
	el.ready = append(el.ready, in)
	return nil
}

// sortReady keeps the ready replicas in replica order.
func (el *elastic) sortReady() {
	slices.SortFunc(el.ready, func(a, b *instance) int { return a.replica - b.replica })
}

// transitions moves the replicas whose phase is over into the next one:
// provisioning to loading to ready, and draining replicas that have
// finished their requests to released.
func (el *elastic) transitions() error {
	const eps = 1e-6
	changed := false
	kept := el.alive[:0]
	for _, in := range el.alive {
		if in.phase == lifeProvisioning && el.timeS >= in.startedS+el.sc.ProvisionS-eps {
			in.phase, in.loadingS = lifeLoading, el.timeS
		}
		if in.phase == lifeLoading && el.timeS >= in.loadingS+el.sc.LoadS-eps {
			in.readyS = el.timeS
			if err := el.makeReady(in, 0); err != nil {
				return err
			}
			changed = true
		}
		if in.phase == lifeDraining && el.idle(in) {
			if err := el.release(in); err != nil {
				return err
			}
			continue
		}
		kept = append(kept, in)
	}
	clear(el.alive[len(kept):])
	el.alive = kept
	if changed {
		el.sortReady()
	}
	return nil
}

// release ends replica in's billing at the current time.
func (el *elastic) release(in *instance) error {
	in.phase, in.releasedS = lifeReleased, el.timeS
	if in.st == nil {
		return nil
	}
	in.energyJ = in.st.EnergyJ()
	el.finish(in)
	st := in.st
	in.st = nil
	if err := st.Close(); err != nil {
		return fmt.Errorf("replica %d: %w", in.replica, err)
	}
	return nil
}

// finishAll ends the run: the replicas still up are billed to its end.
func (el *elastic) finishAll() error {
	for _, in := range el.alive {
		if in.st == nil {
			continue
		}
		in.energyJ = in.st.EnergyJ()
		el.finish(in)
	}
	// Requests never routed (no replica was ready): unfinished; in a
	// streamed run, a writer of their own counts them.
	e := el.e
	el.queue.arrive(math.Inf(1))
	var unrouted *sampleWriter
	if s := e.stream; s != nil && el.queue.len() > 0 {
		unrouted = newSampleWriter(&s.samples, e.cfg.Plant.ReportingHorizonS, e.slo(-1))
		s.writers = append(s.writers, unrouted)
	}
	for ; el.queue.len() > 0; el.queue.pop() {
		r, i := el.queue.front()
		rec := unroutedRecord(&r)
		if unrouted != nil {
			unrouted.queue.push(i)
			unrouted.record(&rec)
			continue
		}
		e.assignment[i] = -1
		e.records[i] = rec
	}
	if unrouted != nil {
		unrouted.flush()
	}
	if err := el.queue.src.err(); err != nil {
		return err
	}
	if el.pools != nil {
		el.pools.finishRecords()
	}
	var steppers []*plant.Stepper
	for _, in := range el.alive {
		if in.st != nil {
			steppers = append(steppers, in.st)
			in.st = nil
		}
	}
	return closeAll(steppers)
}

// advance runs one fleet step; it reports whether the run is over: no
// request left to arrive or waiting at the router, and every replica done,
// or the grid past MaxSimulationTimeS.
func (el *elastic) advance() (bool, error) {
	e := el.e
	p := &e.cfg.Plant
	if !(el.timeS <= p.MaxSimulationTimeS+plant.TimeEpsilonS) {
		return true, nil
	}
	if err := el.transitions(); err != nil {
		return true, err
	}
	if el.timeS >= float64(el.decisions)*el.sc.IntervalS-1e-6 {
		el.decisions++
		if err := el.decide(); err != nil {
			return true, err
		}
		if err := el.transitions(); err != nil { // a cold start of 0
			return true, err
		}
	}
	if el.pools != nil {
		el.gatherPools() // the step's replicas, now that none will change
	}
	untilS := el.timeS + plant.TimeEpsilonS
	if e.cfg.Service.Batched() {
		untilS += p.TimeStepS
	}
	el.queue.arrive(untilS)
	if len(el.ready) > 0 {
		if err := el.routeUntil(untilS); err != nil {
			return true, err
		}
	}
	more := el.queue.more()
	if el.sc.PowerLimitW > 0 {
		el.budget()
	}
	var powerW float64
	var running int
	var err error
	if el.pools != nil {
		powerW, running, err = el.stepPools(more)
	} else {
		powerW, running, err = el.stepReplicas(more)
	}
	if err != nil {
		return true, err
	}
	el.peakW = max(el.peakW, powerW)
	if over := powerW - el.sc.PowerLimitW; el.sc.PowerLimitW > 0 && over > 1e-9 {
		el.violationW = max(el.violationW, over)
		el.violationSteps++
	}
	el.lastPowerW = powerW
	el.count(len(el.ready), len(el.alive))
	dt := p.TimeStepS
	el.sample(powerW, false, el.timeS+dt)
	el.step++
	el.timeS += dt
	return running == 0 && !more, nil
}

// stepReplicas steps the replicas of a fleet without pools once, and
// counts the loading ones' draw; it returns the step's billed power and
// the replicas still running (not done, or more requests to come).
func (el *elastic) stepReplicas(more bool) (powerW float64, running int, err error) {
	e := el.e
	for _, in := range el.alive {
		if in.phase == lifeLoading || in.phase == lifeProvisioning {
			powerW += el.loadingStep(in)
			continue
		}
		st := in.st
		before := st.Steps()
		done, err := st.Step()
		if err != nil {
			return 0, 0, fmt.Errorf("replica %d: %w", in.replica, err)
		}
		if st.Steps() == before {
			continue // past MaxSimulationTimeS
		}
		load := st.Last()
		powerW += load.PowerW
		if mark, ok := st.Checkpoint(); ok && el.step >= mark {
			in.deferred.hold(el.step, e.sums.fixed(load.PowerW))
		} else {
			e.sums.add(el.step, load)
		}
		if !done || more {
			running++
		}
	}
	return powerW, running, nil
}

// loadingStep is what a replica not ready yet draws in a step: a loading
// one its group's idle power, counted in its energy; a provisioning one
// nothing.
func (el *elastic) loadingStep(in *instance) float64 {
	if in.phase != lifeLoading {
		return 0
	}
	w := el.groups[in.group].loadingPowerW
	in.loadEnergyJ += w * el.e.cfg.Plant.TimeStepS
	return w
}

// sample records the step's counts in the series, the step ending at endS
// (every stride-th step; last forces it).
func (el *elastic) sample(powerW float64, last bool, endS float64) {
	if !el.keep || (el.step%el.stride != 0 && !last) {
		return
	}
	el.sampled = el.step + 1
	s := &el.series
	var counts [lifeReleased]int
	for _, in := range el.alive {
		counts[in.phase]++
	}
	s.TimeS = append(s.TimeS, endS)
	s.Requested = append(s.Requested, el.requested)
	s.Provisioning = append(s.Provisioning, counts[lifeProvisioning])
	s.Loading = append(s.Loading, counts[lifeLoading])
	s.Ready = append(s.Ready, counts[lifeReady])
	s.Draining = append(s.Draining, counts[lifeDraining])
	s.RouterWaiting = append(s.RouterWaiting, el.queue.len())
	s.PowerW = append(s.PowerW, powerW)
	if el.sc.Groups != nil {
		if s.GroupReady == nil {
			s.GroupReady = make([][]int, len(el.groups))
		}
		for g := range s.GroupReady {
			s.GroupReady[g] = append(s.GroupReady[g], 0)
		}
		for _, in := range el.ready {
			s.GroupReady[in.group][len(s.GroupReady[in.group])-1]++
		}
	}
}

// routeUntil routes the requests not routed yet that arrive by untilS to
// the ready replicas, on their states read once and updated for the
// replica that took each request; there must be a ready replica.
func (el *elastic) routeUntil(untilS float64) error {
	e := el.e
	el.queue.arrive(untilS)
	if el.queue.len() == 0 {
		return nil
	}
	if el.pools != nil {
		return el.routePrefill()
	}
	// A state-free router is shown zero states: reading them costs a
	// step of every ready replica's.
	stateFree := IsStateFree(e.router)
	el.states = el.states[:0]
	for _, in := range el.ready {
		var l ReplicaState
		if !stateFree {
			l = in.st.Load()
		}
		el.states = append(el.states, l)
	}
	if e.costs != nil {
		e.costs.reset(el.states)
	}
	waitedS := el.timeS - e.cfg.Plant.TimeStepS + plant.TimeEpsilonS
	for ; el.queue.len() > 0; el.queue.pop() {
		r, i := el.queue.front()
		j, err := e.route(i, &r, el.states)
		if err != nil {
			return err
		}
		in := el.ready[j]
		st := in.st
		if _, marked := st.Checkpoint(); marked {
			in.deferred.flush(&e.sums)
		}
		if s := e.stream; s != nil {
			s.writers[in.replica].queue.push(i)
		} else {
			e.assignment[i] = in.replica
			in.routed = append(in.routed, i)
		}
		if r.ArrivalTimeS <= waitedS {
			err = st.AddWaited(r) // it waited at the router
		} else {
			err = st.Add(r)
		}
		if err != nil {
			return fmt.Errorf("replica %d: %w", in.replica, err)
		}
		in.count++
		if !stateFree {
			el.states[j] = st.Load()
		}
		if e.costs != nil {
			e.costs.update(j, &el.states[j])
		}
	}
	return nil
}

// decide asks each group's autoscaler for a count and follows it.
func (el *elastic) decide() error {
	observed := false
	for _, g := range el.groups {
		if _, static := g.Autoscaler.(Static); static {
			continue
		}
		if !observed {
			el.observeFleet()
			observed = true
		}
		el.observe(g)
		n, reason, err := g.Autoscaler.Scale(&el.obs)
		if _, exec := g.Autoscaler.(*ExecAutoscaler); exec && err != nil {
			return err // it names itself and the decision
		} else if err != nil {
			return fmt.Errorf("autoscaler %s at %s s: %w", g.Autoscaler.Name(), fmtG(el.timeS), err)
		}
		n = min(max(n, g.MinReplicas), g.MaxReplicas)
		if n != g.requested {
			el.events = append(el.events, ScaleEvent{TimeS: el.timeS, Group: g.name, From: g.requested, To: n, Reason: reason})
			el.requested += n - g.requested
			g.requested = n
		}
		if err := el.follow(g); err != nil {
			return err
		}
	}
	return nil
}

// follow starts, returns or drains replicas until those not draining are
// the count requested.
func (el *elastic) follow(g *groupScale) error {
	active := 0
	for _, in := range el.alive {
		if in.group == g.index && in.phase != lifeDraining {
			active++
		}
	}
	outstanding := func(in *instance) int {
		l := el.load(in)
		return l.QueuedRequests + l.ActiveDecodes
	}
	// Scale up: the replicas draining most recently first, then new ones.
	for active < g.requested {
		var back *instance
		for _, in := range el.alive {
			if in.group == g.index && in.phase == lifeDraining && (back == nil || in.drainingS >= back.drainingS) {
				back = in
			}
		}
		if back == nil {
			break
		}
		back.phase = lifeReady
		back.returned++
		el.ready = append(el.ready, back)
		el.sortReady()
		active++
	}
	for ; active < g.requested; active++ {
		if len(el.insts) >= MaxReplicaStarts {
			return fmt.Errorf("the autoscaler started more than %d replicas", MaxReplicaStarts)
		}
		el.start(g.index, el.timeS)
	}
	// Scale down: cancel the replicas not ready yet, newest first, then
	// drain the ready ones with the least work.
	for active > g.requested {
		var victim *instance
		for i := len(el.alive) - 1; i >= 0 && victim == nil; i-- {
			if in := el.alive[i]; in.group == g.index && in.phase == lifeProvisioning {
				victim = in
			}
		}
		for i := len(el.alive) - 1; i >= 0 && victim == nil; i-- {
			if in := el.alive[i]; in.group == g.index && in.phase == lifeLoading {
				victim = in
			}
		}
		if victim != nil {
			victim.phase, victim.releasedS = lifeReleased, el.timeS
			el.alive = slices.DeleteFunc(el.alive, func(in *instance) bool { return in == victim })
			active--
			continue
		}
		best, bestWork := -1, 0
		for j, in := range el.ready {
			if in.group != g.index {
				continue
			}
			if w := outstanding(in); best < 0 || w < bestWork || (w == bestWork && in.replica > el.ready[best].replica) {
				best, bestWork = j, w
			}
		}
		in := el.ready[best]
		in.phase, in.drainingS = lifeDraining, el.timeS
		el.ready = slices.Delete(el.ready, best, best+1)
		active--
	}
	return nil
}

// observeFleet gathers what the metrics pipeline shows of the whole fleet
// now: the requests waiting at the router, the arrival rate and the SLO
// attainment over the last MetricsWindowS (fleet, in el.obs's fields).
func (el *elastic) observeFleet() {
	now := el.timeS
	el.queue.arrive(now + plant.TimeEpsilonS)
	f := &el.fleetObs
	f.routerWaiting = el.queue.len()
	f.ratePerS = float64(el.queue.arrivedSince(now-MetricsWindowS+plant.TimeEpsilonS)) / MetricsWindowS
	slices.SortStableFunc(el.window, func(a, b judgment) int {
		switch {
		case a.timeS < b.timeS:
			return -1
		case a.timeS > b.timeS:
			return 1
		}
		return 0
	})
	cut := 0
	for cut < len(el.window) && el.window[cut].timeS <= now-MetricsWindowS+plant.TimeEpsilonS {
		cut++
	}
	el.window = el.window[:copy(el.window, el.window[cut:])]
	met := 0
	for _, j := range el.window {
		if j.met {
			met++
		}
	}
	f.attainment = math.NaN()
	if len(el.window) > 0 {
		f.attainment = float64(met) / float64(len(el.window))
	}
}

// fleetObservation is what observeFleet found.
type fleetObservation struct {
	routerWaiting int
	ratePerS      float64
	attainment    float64 // NaN: none completed
}

// observe fills el.obs with what the metrics pipeline shows group g now
// (observeFleet first): its replicas, with the fleet's router queue,
// arrival rate and attainment.
func (el *elastic) observe(g *groupScale) {
	o := &el.obs
	f := &el.fleetObs
	replicas := o.Replicas[:0]
	*o = ScaleObservation{TimeS: el.timeS, Requested: g.requested, WindowS: MetricsWindowS,
		MaxActiveRequests: g.template.plant.MaxActiveRequests, MinReplicas: g.MinReplicas, MaxReplicas: g.MaxReplicas,
		RouterWaiting: f.routerWaiting, Waiting: f.routerWaiting, ArrivalRatePerS: f.ratePerS}
	if d := el.pools; d != nil {
		// A pool's: the decode pool's router holds the first tokens that
		// found no decode replica ready.
		o.Role = RolePrefill
		if d.poolOf(g.index) == poolDecode {
			o.Role = RoleDecode
			o.RouterWaiting, o.Waiting = d.unrouted.len(), d.unrouted.len()
		}
	}
	if !math.IsNaN(f.attainment) {
		a := f.attainment
		o.SLOAttainment = &a
	}
	kv := 0.0
	for _, in := range el.alive {
		if in.group != g.index {
			continue
		}
		switch in.phase {
		case lifeProvisioning:
			o.Provisioning++
			continue
		case lifeLoading:
			o.Loading++
			continue
		case lifeDraining:
			o.Draining++
		case lifeReady:
			o.Ready++
		}
		l := el.load(in)
		o.Waiting += l.QueuedRequests
		o.Running += l.ActiveDecodes
		if in.phase == lifeReady {
			kv += l.KVTokens / g.template.plant.KVCapacityTokens
			replicas = append(replicas, ReplicaLoad{Replica: in.replica, Waiting: l.QueuedRequests, Running: l.ActiveDecodes, KVTokens: l.KVTokens})
		}
	}
	slices.SortFunc(replicas, func(a, b ReplicaLoad) int { return a.Replica - b.Replica })
	if replicas == nil {
		replicas = []ReplicaLoad{}
	}
	o.Replicas = replicas
	if o.Ready > 0 {
		o.KVUsage = kv / float64(o.Ready)
	}
}

// scalingResult is the run's ScalingResult.
func (el *elastic) scalingResult() *ScalingResult {
	endS := el.timeS
	r := &ScalingResult{Scaling: el.sc, Events: el.events, Series: el.series, EndS: endS, Windows: el.windows(),
		PeakPowerW: el.peakW, LoadingPowerW: el.loadingPowerW, InitialReplicas: el.initial,
		PowerViolationW: el.violationW, PowerViolationSteps: el.violationSteps}
	for _, in := range el.insts {
		end := endS
		if !math.IsNaN(in.releasedS) {
			end = math.Min(end, in.releasedS)
		}
		r.Lifecycles = append(r.Lifecycles, Lifecycle{
			Group: in.group, Replica: in.replica, StartedS: in.startedS, LoadingS: in.loadingS, ReadyS: in.readyS,
			DrainingS: in.drainingS, ReleasedS: in.releasedS, BilledS: math.Max(0, end-in.startedS),
			EnergyJ: in.loadEnergyJ + in.energyJ, Requests: in.count, ReturnedTo: in.returned,
		})
	}
	return r
}

// windows are the run's scale intervals, from 0 to the end of the run: the
// requests that arrived in each, the share of them that met their
// objectives (NaN: none arrived), and the mean replicas ready and billed
// over its steps.
func (el *elastic) windows() []ScaleWindow {
	n := len(el.readySteps)
	out := make([]ScaleWindow, n)
	arrivals, completed, met := el.counts.fold(n)
	for i := range out {
		out[i].StartS = float64(i) * el.sc.IntervalS
		out[i].SLOAttainment = math.NaN()
		if steps := el.windowSteps[i]; steps > 0 {
			out[i].MeanReady = float64(el.readySteps[i]) / float64(steps)
			out[i].MeanBilled = float64(el.billedSteps[i]) / float64(steps)
		}
		out[i].Arrivals, out[i].Completed = arrivals[i], completed[i]
	}
	for i := range out {
		if out[i].Arrivals > 0 {
			out[i].SLOAttainment = float64(met[i]) / float64(out[i].Arrivals)
		}
	}
	return out
}

// ScaleWindow is one scale interval of an elastic run.
type ScaleWindow struct {
	StartS        float64 `json:"start_s"`        // start_s: the window's start, s
	Arrivals      int     `json:"arrivals"`       // arrivals: requests that arrived in it
	Completed     int     `json:"completed"`      // completed: of those, the ones completed
	SLOAttainment float64 `json:"slo_attainment"` // slo_attainment: of those, the share that met their objectives; null with none
	MeanReady     float64 `json:"mean_ready"`     // mean_ready: ready replicas, mean over its steps
	MeanBilled    float64 `json:"mean_billed"`    // mean_billed: billed replicas (every phase but released), mean over its steps
}

// count adds the step's ready and billed replicas to its window.
func (el *elastic) count(ready, billed int) {
	w := int(el.timeS/el.sc.IntervalS + 1e-9)
	for len(el.readySteps) <= w {
		el.readySteps = append(el.readySteps, 0)
		el.billedSteps = append(el.billedSteps, 0)
		el.windowSteps = append(el.windowSteps, 0)
	}
	el.readySteps[w] += ready
	el.billedSteps[w] += billed
	el.windowSteps[w]++
}

// Resample keeps every stride-th sample and the last, as the replicas'
// trajectories are thinned.
func (s ScaleSeries) Resample(stride int) ScaleSeries {
	if stride <= 1 {
		return s
	}
	n := len(s.TimeS)
	var keep []int
	for i := 0; i < n; i += stride {
		keep = append(keep, i)
	}
	if n > 0 && keep[len(keep)-1] != n-1 {
		keep = append(keep, n-1)
	}
	pickF := func(v []float64) []float64 {
		out := make([]float64, len(keep))
		for j, i := range keep {
			out[j] = v[i]
		}
		return out
	}
	pickI := func(v []int) []int {
		out := make([]int, len(keep))
		for j, i := range keep {
			out[j] = v[i]
		}
		return out
	}
	out := ScaleSeries{TimeS: pickF(s.TimeS), Requested: pickI(s.Requested), Provisioning: pickI(s.Provisioning),
		Loading: pickI(s.Loading), Ready: pickI(s.Ready), Draining: pickI(s.Draining),
		RouterWaiting: pickI(s.RouterWaiting), PowerW: pickF(s.PowerW)}
	for _, g := range s.GroupReady {
		out.GroupReady = append(out.GroupReady, pickI(g))
	}
	return out
}
