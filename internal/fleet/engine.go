package fleet

import (
	"context"
	"fmt"
	"runtime"
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
	// once its replica has finished.
	assignment []int
	records    []plant.RequestRecord
	replicas   []Replica
	sums       stepSums
}

func newEngine(ctx context.Context, requests []plant.Request, cfg Config, specs []replicaSpec, router Router) *engine {
	return &engine{
		ctx:        ctx,
		requests:   requests,
		cfg:        cfg,
		specs:      specs,
		router:     router,
		assignment: make([]int, len(requests)),
		records:    make([]plant.RequestRecord, len(requests)),
		replicas:   make([]Replica, len(specs)),
		sums:       stepSums{scale: powerScale(specs)},
	}
}

// expectedSteps is the room reserved for the fleet's step sums: twice the
// arrival span (a run rarely lasts longer), within the step cap; a longer
// run grows them.
func (e *engine) expectedSteps() int {
	p := &e.cfg.Plant
	span := e.requests[len(e.requests)-1].ArrivalTimeS
	return int(min(p.MaxSimulationTimeS/p.TimeStepS, 2*span/p.TimeStepS) + 3)
}

// arrival is what the router sees of request i.
func (e *engine) arrival(i int) Arrival {
	r := &e.requests[i]
	return Arrival{Index: i, ID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens}
}

// route asks the router for request i's replica and checks the answer.
func (e *engine) route(i int, states []ReplicaState) (int, error) {
	k := e.router.Route(e.arrival(i), states)
	if k < 0 || k >= len(states) {
		return 0, fmt.Errorf("router %s sent request %d to replica %d of %d", e.router.Name(), e.requests[i].ID, k, len(states))
	}
	e.assignment[i] = k
	return k, nil
}

// newStepper builds replica k's stepper.
func (e *engine) newStepper(k, capacityHint int) (*plant.Stepper, error) {
	s := e.specs[k]
	var built func(plant.ClockController)
	if e.cfg.ControllerBuilt != nil {
		built = func(c plant.ClockController) { e.cfg.ControllerBuilt(k, c) }
	}
	return s.newStepper(e.cfg.Groups[s.group], e.cfg.Options, capacityHint, built)
}

// finish stores replica k's result and copies its records (routed is the
// workload index of each, in the order they were added) into the fleet's.
func (e *engine) finish(k int, st *plant.Stepper, routed []int) {
	res, totals := st.Result()
	res.Requests = nil
	for j, rec := range st.Records() {
		e.records[routed[j]] = rec
	}
	s := e.specs[k]
	e.replicas[k] = Replica{
		Index:          k,
		Group:          s.group,
		GroupName:      e.cfg.Groups[s.group].Name,
		RequestsRouted: len(routed),
		Result:         res,
		Totals:         totals,
	}
}

// runParallel routes every request up front and simulates the replicas
// independently, Jobs at a time, each adding its steps to its worker's
// sums.
func (e *engine) runParallel() error {
	n := len(e.specs)
	zero := make([]ReplicaState, n)
	counts := make([]int, n+1)
	for i := range e.requests {
		k, err := e.route(i, zero)
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

	jobs := e.cfg.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	jobs = min(jobs, n)
	// Each worker adds into sums of its own, allocated apart so that the
	// workers never write to one cache line.
	workerSums := make([]*stepSums, jobs)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range jobs {
		sums := &stepSums{scale: e.sums.scale}
		sums.reserve(e.expectedSteps())
		workerSums[w] = sums
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				errs[k] = e.runAlone(k, routed[counts[k]:counts[k+1]], sums)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
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
// to the end.
func (e *engine) runAlone(k int, routed []int, sums *stepSums) (err error) {
	st, err := e.newStepper(k, len(routed))
	if err != nil {
		return err
	}
	defer func() {
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
	for len(routed) > 0 {
		step := st.Steps()
		done, err := st.Step()
		if err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
		if st.Steps() > step {
			sums.add(step, st.Last())
		}
		if done {
			break
		}
		if (step+1)%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
	}
	e.finish(k, st, routed)
	return nil
}

// lockStep is a lock-step run in progress: every fleet step routes the
// step's arrivals on the replicas' states at the start of the step, then
// steps every running replica once.
type lockStep struct {
	e        *engine
	steppers []*plant.Stepper
	states   []ReplicaState
	stopped  []bool
	deferred []deferredPower
	routed   [][]int // workload indices routed to each replica, in order
	next     int     // first request not routed yet
	step     int     // fleet step about to run
	timeS    float64 // its start
}

// newLockStep builds the replicas of a lock-step run.
func (e *engine) newLockStep() (*lockStep, error) {
	n := len(e.specs)
	ls := &lockStep{
		e:        e,
		steppers: make([]*plant.Stepper, n),
		states:   make([]ReplicaState, n),
		stopped:  make([]bool, n),
		deferred: make([]deferredPower, n),
		routed:   make([][]int, n),
	}
	hint := len(e.requests)/n + 1
	for k := range n {
		st, err := e.newStepper(k, hint)
		if err != nil {
			return nil, err
		}
		ls.steppers[k] = st
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
		for k, st := range ls.steppers {
			if st == nil {
				continue
			}
			if cerr := st.Close(); cerr != nil {
				err = fmt.Errorf("replica %d: %w", k, cerr)
			}
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
	if ls.next < len(e.requests) {
		if err := ls.routeUntil(e.requests[len(e.requests)-1].ArrivalTimeS); err != nil {
			return err
		}
	}
	for k, st := range ls.steppers {
		ls.deferred[k].drop()
		e.finish(k, st, ls.routed[k])
		ls.steppers[k], ls.routed[k] = nil, nil // its records are copied: free them
		if err := st.Close(); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
	}
	return nil
}

// advance runs one fleet step. It reports whether the run is over: every
// replica has stopped, or the grid has passed MaxSimulationTimeS.
func (ls *lockStep) advance() (bool, error) {
	e := ls.e
	p := &e.cfg.Plant
	if !(ls.timeS <= p.MaxSimulationTimeS+1e-12) {
		return true, nil
	}
	if ls.next < len(e.requests) && e.requests[ls.next].ArrivalTimeS <= ls.timeS+1e-12 {
		if err := ls.routeUntil(ls.timeS + 1e-12); err != nil {
			return true, err
		}
		if ls.next == len(e.requests) {
			// Nothing more will come: an idle replica has stopped (at
			// its checkpoint).
			for k, st := range ls.steppers {
				if st.Idle() {
					ls.stop(k)
				}
			}
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
		if done && ls.next == len(e.requests) {
			ls.stop(k)
			continue
		}
		running++
	}
	ls.step++
	ls.timeS += p.TimeStepS
	return running == 0, nil
}

// routeUntil routes the requests not routed yet that arrive by untilS.
// The states are read once, then updated for the replica that took each
// request.
func (ls *lockStep) routeUntil(untilS float64) error {
	e := ls.e
	for k, st := range ls.steppers {
		ls.states[k] = st.Load()
	}
	for ; ls.next < len(e.requests) && e.requests[ls.next].ArrivalTimeS <= untilS; ls.next++ {
		k, err := e.route(ls.next, ls.states)
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
		if err := st.Add(e.requests[ls.next]); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
		ls.routed[k] = append(ls.routed[k], ls.next)
		ls.states[k] = st.Load()
	}
	return nil
}

// stop ends replica k's stepping; held idle steps are rolled back.
func (ls *lockStep) stop(k int) {
	ls.stopped[k] = true
	ls.deferred[k].drop()
}
