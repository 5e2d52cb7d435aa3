package fleet

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"servesim/internal/plant"
)

// engine is one fleet run in progress.
type engine struct {
	ctx      context.Context // checked every plant.CancelCheckSteps steps
	requests []plant.Request
	cfg      Config
	specs    []replicaSpec
	router   Router
	// assignment[i] is the replica of request i; records[i] its record
	// once its replica has finished (nil in a streamed run).
	assignment []int
	records    []plant.RequestRecord
	replicas   []Replica
	sums       stepSums
	// lastArrivalS is the last request's arrival (0 when unknown, in a
	// streamed run without normalization): it sizes buffers.
	lastArrivalS float64
	// stream is a streamed run's (nil when the workload is held whole).
	stream *streamRun
	// elastic says the run is an elastic fleet's (Config.Scaling).
	elastic bool
	// costs, for a CostRouter, is the heap its choices are taken from in
	// a round of routing (reset on the round's states, updated as they
	// change); nil for another router.
	costs *costHeap
	// objectives are each group's SLO (objectivesByGroup).
	objectives []plant.SLO
	// loss, when set, stops a streamed run that can no longer meet its
	// target (Config.StopBelowAttainment).
	loss *lossBudget
}

func newEngine(ctx context.Context, requests []plant.Request, cfg Config, specs []replicaSpec, router Router) *engine {
	return &engine{
		ctx:          ctx,
		requests:     requests,
		cfg:          cfg,
		specs:        specs,
		router:       router,
		assignment:   make([]int, len(requests)),
		records:      make([]plant.RequestRecord, len(requests)),
		replicas:     make([]Replica, len(specs)),
		sums:         stepSums{scale: powerScale(specs)},
		lastArrivalS: requests[len(requests)-1].ArrivalTimeS,
		costs:        newCostHeap(router),
		objectives:   objectivesByGroup(&cfg),
	}
}

// expectedSteps is the room reserved for the fleet's step sums: twice the
// arrival span (a run rarely lasts longer), within the step cap; a longer
// run grows them.
func (e *engine) expectedSteps() int {
	p := &e.cfg.Plant
	return int(min(p.MaxSimulationTimeS/p.TimeStepS, 2*e.lastArrivalS/p.TimeStepS) + 3)
}

// route asks the router for the replica of request r, the workload's
// request i, and checks the answer.
func (e *engine) route(i int, r *plant.Request, states []ReplicaState) (int, error) {
	var k int
	if e.costs != nil {
		k = e.costs.top() // Route's choice on states, in O(1)
	} else {
		k = e.router.Route(Arrival{Index: i, ID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens}, states)
	}
	if k < 0 || k >= len(states) {
		return 0, fmt.Errorf("router %s sent request %d to replica %d of %d", e.router.Name(), r.ID, k, len(states))
	}
	if e.assignment != nil {
		e.assignment[i] = k
	}
	return k, nil
}

// newStepper builds replica k's stepper.
func (e *engine) newStepper(k, capacityHint int) (*plant.Stepper, error) {
	s := e.specs[k]
	var built func(plant.ClockController)
	if e.cfg.ControllerBuilt != nil {
		built = func(c plant.ClockController) { e.cfg.ControllerBuilt(k, c) }
	}
	g := e.cfg.Groups[s.group]
	st, err := s.newStepper(g, poolOptions(g, e.cfg.Options), capacityHint, built)
	if err != nil {
		return nil, err
	}
	if e.cfg.SkipReplicaChecksums {
		// Nothing reports them: the fleet's checksum names the workload.
		st.SkipChecksum()
	}
	return st, nil
}

// finish stores replica k's result, to which routed requests were routed,
// and, when the workload is held whole, copies its records (routed is then
// the workload index of each, in the order they were added) into the
// fleet's; in a streamed run, it writes the replica's last samples.
func (e *engine) finish(k int, st *plant.Stepper, routed []int, count int) {
	res, totals := st.Result()
	res.Requests = nil
	if e.stream != nil {
		e.stream.writers[k].flush()
	}
	if e.records != nil {
		for j, rec := range st.Records() {
			e.records[routed[j]] = rec
		}
	}
	s := e.specs[k]
	e.replicas[k] = Replica{
		Index:          k,
		Group:          s.group,
		GroupName:      e.cfg.Groups[s.group].Name,
		RequestsRouted: count,
		Result:         res,
		Totals:         totals,
	}
}

// jobs is the number of replicas simulated at once on the parallel path.
func (e *engine) jobs() int {
	jobs := e.cfg.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	return min(jobs, len(e.specs))
}

// runParallel routes every request up front and simulates the replicas
// independently, Jobs at a time, each adding its steps to its worker's
// sums.
func (e *engine) runParallel() error {
	n := len(e.specs)
	zero := make([]ReplicaState, n)
	counts := make([]int, n+1)
	for i := range e.requests {
		k, err := e.route(i, &e.requests[i], zero)
		if err != nil {
			return err
		}
		counts[k+1]++
	}
	// routed[counts[k]:counts[k+1]] are replica k's requests, in order.
	for k := range n {
		counts[k+1] += counts[k]
	}
	routed := make([]int, len(e.requests))
	fill := append([]int(nil), counts[:n]...)
	for i, k := range e.assignment {
		routed[fill[k]] = i
		fill[k]++
	}

	jobs := e.jobs()
	// Each worker adds into sums of its own, allocated apart so that the
	// workers never write to one cache line.
	workerSums := make([]*stepSums, jobs)
	errs := make([]error, n)
	closeErrs := make([]error, n)
	var closes sync.WaitGroup
	closing := func(k int, st *plant.Stepper) {
		closes.Go(func() {
			if err := st.Close(); err != nil {
				closeErrs[k] = fmt.Errorf("replica %d: %w", k, err)
			}
		})
	}
	var next atomic.Int64
	var failed atomic.Bool // no replica starts after one failed
	var wg sync.WaitGroup
	for w := range jobs {
		sums := &stepSums{scale: e.sums.scale}
		sums.reserve(e.expectedSteps())
		workerSums[w] = sums
		wg.Go(func() {
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				if errs[k] = e.runAlone(k, routed[counts[k]:counts[k+1]], sums, closing); errs[k] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	closes.Wait()
	for _, err := range append(errs, closeErrs...) {
		if err != nil {
			return err
		}
	}
	e.sums.reserve(e.expectedSteps())
	for _, sums := range workerSums {
		e.sums.merge(sums)
	}
	return nil
}

// runAlone simulates replica k on its requests (workload indices routed)
// to the end, and hands its Stepper to closing, which closes it (and may
// take up to a controller's timeout to let its child go) while the next
// replica runs; on an error it closes it itself.
func (e *engine) runAlone(k int, routed []int, sums *stepSums, closing func(k int, st *plant.Stepper)) (err error) {
	st, err := e.newStepper(k, len(routed))
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			closing(k, st)
			return
		}
		// A controller's Close error says why it stopped the run, as
		// plant.Run reports it.
		if cerr := st.Close(); cerr != nil {
			err = fmt.Errorf("replica %d: %w", k, cerr)
		}
	}()
	for _, i := range routed {
		if err := st.Add(e.requests[i]); err != nil {
			return err
		}
	}
	if len(routed) > 0 {
		if canceled, err := e.stepToEnd(k, st, sums); canceled {
			return err
		} else if err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
	}
	e.finish(k, st, routed, len(routed))
	return nil
}

// stepSink takes a replica's steps in order: the fleet's sums, or a run of
// them on its way there.
type stepSink interface {
	add(step int, l plant.StepLoad)
}

// stepToEnd steps st until it is done, handing each step taken to sink. It
// returns a step's error, or (canceled) the context's error once it is
// done, checked every plant.CancelCheckSteps steps.
func (e *engine) stepToEnd(k int, st *plant.Stepper, sink stepSink) (canceled bool, err error) {
	for {
		step := st.Steps()
		done, err := st.Step()
		if err != nil {
			return false, err
		}
		if st.Steps() > step {
			sink.add(step, st.Last())
		}
		if e.loss != nil {
			if err := e.loss.check(k, step, st); err != nil {
				return false, err
			}
		}
		if done {
			return false, nil
		}
		if (step+1)%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return true, err
			}
		}
	}
}

// lockStep is a lock-step run in progress: every fleet step routes the
// step's arrivals on the replicas' states at the start of the step, then
// steps every running replica once.
type lockStep struct {
	e        *engine
	arrivals arrivals
	steppers []*plant.Stepper
	states   []ReplicaState
	stopped  []bool
	deferred []deferredPower
	routed   [][]int // workload indices routed to each replica, in order (held whole)
	counts   []int   // requests routed to each replica
	next     int     // workload index of the first request not routed yet
	step     int     // fleet step about to run
	timeS    float64 // its start
	// loop is the closed loop of Options.MaxConcurrency (slots 0: open).
	loop closedLoop
}

// closedLoop is a benchmark client with slots outstanding requests at
// most over the whole fleet: a request is sent (routed) at the later of
// its arrival and the completion that frees a slot for it.
type closedLoop struct {
	slots, outstanding int
	// releaseS is when the last completion freed a slot of a full loop:
	// a request that arrived before waited until then.
	releaseS float64
	// completions is the step's completion times over the replicas.
	completions []float64
}

// newLockStep builds the replicas of a lock-step run; a streamed run's
// replicas summarize (plant.Stepper.Summarize).
func (e *engine) newLockStep() (*lockStep, error) {
	n := len(e.specs)
	ls := &lockStep{
		e:        e,
		arrivals: &heldArrivals{requests: e.requests},
		steppers: make([]*plant.Stepper, n),
		states:   make([]ReplicaState, n),
		stopped:  make([]bool, n),
		deferred: make([]deferredPower, n),
		routed:   make([][]int, n),
		counts:   make([]int, n),
	}
	ls.loop.slots = e.cfg.MaxConcurrency
	hint := len(e.requests)/n + 1
	if e.stream != nil {
		ls.arrivals, hint = &streamedArrivals{ws: e.stream.ws}, 0
	}
	for k := range n {
		st, err := e.newStepper(k, hint)
		if err != nil {
			return nil, err
		}
		ls.steppers[k] = st
		if ls.loop.slots > 0 {
			st.LogCompletions()
		}
		if e.stream != nil {
			e.lend(k, st)
			st.Summarize(e.stream.expected/n, e.stream.writers[k].record)
			continue
		}
		ls.routed[k] = make([]int, 0, hint)
	}
	e.sums.reserve(e.expectedSteps())
	return ls, nil
}

// runLockStep runs the fleet in lock-step to the end.
func (e *engine) runLockStep() (err error) {
	ls, err := e.newLockStep()
	if err != nil {
		return err
	}
	defer func() {
		// On an error, the replicas not finished yet still hold their
		// controllers; a controller's Close error says why it stopped the
		// run, as plant.Run reports it.
		if cerr := closeAll(ls.steppers); cerr != nil {
			err = cerr
		}
	}()
	for {
		done, err := ls.advance()
		if err != nil {
			return err
		}
		if done {
			break
		}
		if ls.step%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
	}
	// Requests arriving after the run are routed on the final states.
	if err := ls.routeUntil(math.Inf(1)); err != nil {
		return err
	}
	if err := ls.arrivals.err(); err != nil {
		return err
	}
	for k, st := range ls.steppers {
		ls.deferred[k].drop()
		e.finish(k, st, ls.routed[k], ls.counts[k])
		ls.routed[k] = nil // its records are copied: free them
	}
	steppers := ls.steppers
	ls.steppers = nil
	return closeAll(steppers)
}

// closeAll closes the steppers that are not nil, at once (a controller may
// take up to its timeout to let its child go), and returns the first
// error in replica order.
func closeAll(steppers []*plant.Stepper) error {
	errs := make([]error, len(steppers))
	var wg sync.WaitGroup
	for k, st := range steppers {
		if st != nil {
			wg.Go(func() {
				if err := st.Close(); err != nil {
					errs[k] = fmt.Errorf("replica %d: %w", k, err)
				}
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// advance runs one fleet step. It reports whether the run is over: every
// replica has stopped, or the grid has passed MaxSimulationTimeS.
func (ls *lockStep) advance() (bool, error) {
	e := ls.e
	p := &e.cfg.Plant
	if !(ls.timeS <= p.MaxSimulationTimeS+plant.TimeEpsilonS) {
		return true, nil
	}
	// The batched service model serves a request at its own arrival
	// within a step: it is routed before the step it arrives in.
	untilS := ls.timeS + plant.TimeEpsilonS
	if e.cfg.Service.Batched() {
		untilS += p.TimeStepS
	}
	if r, ok := ls.arrivals.peek(); ok && r.ArrivalTimeS <= untilS {
		if err := ls.routeUntil(untilS); err != nil {
			return true, err
		}
		if _, more := ls.arrivals.peek(); !more {
			// Nothing more will come: an idle replica has stopped (at
			// its checkpoint).
			for k, st := range ls.steppers {
				if st.Idle() {
					ls.stop(k)
				}
			}
		}
	}
	_, more := ls.arrivals.peek()
	if !more {
		if err := ls.arrivals.err(); err != nil {
			return true, err
		}
	}
	running := 0
	for k, st := range ls.steppers {
		if ls.stopped[k] {
			continue
		}
		done, err := st.Step()
		if err != nil {
			return true, fmt.Errorf("replica %d: %w", k, err)
		}
		load := st.Last()
		if mark, ok := st.Checkpoint(); ok && ls.step >= mark {
			// An idle step after the checkpoint: it counts only if a
			// request is routed to the replica later.
			ls.deferred[k].hold(ls.step, e.sums.fixed(load.PowerW))
		} else {
			e.sums.add(ls.step, load)
		}
		if e.loss != nil {
			if err := e.loss.check(k, ls.step, st); err != nil {
				return true, err
			}
		}
		if done && !more {
			ls.stop(k)
			continue
		}
		running++
	}
	if ls.loop.slots > 0 {
		if err := ls.release(); err != nil {
			return true, err
		}
	}
	ls.step++
	ls.timeS += p.TimeStepS
	return running == 0, nil
}

// release takes the step's completions in time order: each frees a slot
// of the closed loop, and a request that arrived by then is routed at once,
// sent at the completion.
func (ls *lockStep) release() error {
	l := &ls.loop
	l.completions = l.completions[:0]
	for _, st := range ls.steppers {
		l.completions = st.Completions(l.completions)
	}
	slices.Sort(l.completions)
	for _, c := range l.completions {
		if l.outstanding >= l.slots {
			l.releaseS = c
		}
		l.outstanding--
		if err := ls.routeUntil(c); err != nil {
			return err
		}
	}
	return nil
}

// routeUntil routes the requests not routed yet that arrive by untilS.
// The states are read once, then updated for the replica that took each
// request.
func (ls *lockStep) routeUntil(untilS float64) error {
	e := ls.e
	if r, ok := ls.arrivals.peek(); !ok || r.ArrivalTimeS > untilS {
		return nil
	}
	for k, st := range ls.steppers {
		ls.states[k] = st.Load()
	}
	if e.costs != nil {
		e.costs.reset(ls.states)
	}
	for {
		r, ok := ls.arrivals.peek()
		if !ok || r.ArrivalTimeS > untilS {
			return nil
		}
		if l := &ls.loop; l.slots > 0 {
			if l.outstanding >= l.slots {
				return nil // it waits for a completion (release)
			}
			r.ArrivalTimeS = max(r.ArrivalTimeS, l.releaseS)
			l.outstanding++
		}
		k, err := e.route(ls.next, &r, ls.states)
		if err != nil {
			return err
		}
		if ls.stopped[k] {
			return fmt.Errorf("replica %d has stopped", k)
		}
		st := ls.steppers[k]
		if _, marked := st.Checkpoint(); marked {
			ls.deferred[k].flush(&e.sums)
		}
		if e.stream != nil {
			e.stream.samples.grow(ls.next)
			e.stream.samples.route(ls.next, k)
			e.stream.writers[k].queue.push(ls.next)
		} else {
			ls.routed[k] = append(ls.routed[k], ls.next)
		}
		if err := st.Add(r); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
		ls.counts[k]++
		ls.states[k] = st.Load()
		if e.costs != nil {
			e.costs.update(k, &ls.states[k])
		}
		ls.arrivals.take()
		ls.next++
	}
}

// stop ends replica k's stepping; held idle steps are rolled back.
func (ls *lockStep) stop(k int) {
	ls.stopped[k] = true
	ls.deferred[k].drop()
	if e := ls.e; e.loss != nil {
		e.loss.end(k, ls.steppers[k])
	}
}

// arrivals are the workload's requests as the lock-step engine takes
// them, in order.
type arrivals interface {
	// peek returns the next request not taken yet, or false after the
	// last one or at a read error (err).
	peek() (plant.Request, bool)
	take()
	err() error
}

// heldArrivals are the requests of a workload held whole.
type heldArrivals struct {
	requests []plant.Request
	next     int
}

func (a *heldArrivals) peek() (plant.Request, bool) {
	if a.next == len(a.requests) {
		return plant.Request{}, false
	}
	return a.requests[a.next], true
}

func (a *heldArrivals) take()      { a.next++ }
func (a *heldArrivals) err() error { return nil }

// streamedArrivals are the requests of a workload read as it runs.
type streamedArrivals struct {
	ws     *plant.WorkloadStream
	next   plant.Request
	ok     bool
	peeked bool
}

func (a *streamedArrivals) peek() (plant.Request, bool) {
	if !a.peeked {
		a.next, a.ok = a.ws.Next()
		a.peeked = true
	}
	return a.next, a.ok
}

func (a *streamedArrivals) take()      { a.peeked = false }
func (a *streamedArrivals) err() error { return a.ws.Err() }
