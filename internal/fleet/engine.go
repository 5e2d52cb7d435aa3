package fleet

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"servesim/internal/plant"
)

// engine is one fleet run in progress.
type engine struct {
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

func newEngine(requests []plant.Request, cfg Config, specs []replicaSpec, router Router) *engine {
	return &engine{
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
	return s.newStepper(e.cfg.Groups[s.group], e.cfg.Options, capacityHint)
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
	workerSums := make([]stepSums, jobs)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range jobs {
		workerSums[w].scale = e.sums.scale
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				errs[k] = e.runAlone(k, routed[counts[k]:counts[k+1]], &workerSums[w])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for w := range workerSums {
		e.sums.merge(&workerSums[w])
	}
	return nil
}

// runAlone simulates replica k on its requests (workload indices routed)
// to the end.
func (e *engine) runAlone(k int, routed []int, sums *stepSums) error {
	st, err := e.newStepper(k, len(routed))
	if err != nil {
		return err
	}
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
	}
	e.finish(k, st, routed)
	return nil
}

// lockStep is the state of a lock-step run besides the engine's.
type lockStep struct {
	steppers []*plant.Stepper
	states   []ReplicaState
	stopped  []bool
	deferred []deferredPower
	routed   [][]int // workload indices routed to each replica, in order
}

// runLockStep steps every replica once per fleet step, routing each step's
// arrivals first on the replicas' states at the start of the step.
func (e *engine) runLockStep() error {
	n := len(e.specs)
	ls := lockStep{
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
			return err
		}
		ls.steppers[k] = st
	}
	p := &e.cfg.Plant
	next := 0
	timeS := 0.0
	for step := 0; timeS <= p.MaxSimulationTimeS+1e-12; step++ {
		if next < len(e.requests) && e.requests[next].ArrivalTimeS <= timeS+1e-12 {
			var err error
			if next, err = e.routeUntil(&ls, next, timeS+1e-12); err != nil {
				return err
			}
			if next == len(e.requests) {
				// Nothing more will come: an idle replica has stopped
				// (at its checkpoint).
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
				return fmt.Errorf("replica %d: %w", k, err)
			}
			load := st.Last()
			if mark, ok := st.Checkpoint(); ok && step >= mark {
				// An idle step after the checkpoint: it counts only if
				// a request is routed to the replica later.
				ls.deferred[k].hold(step, e.sums.fixed(load.PowerW))
			} else {
				e.sums.add(step, load)
			}
			if done && next == len(e.requests) {
				ls.stop(k)
				continue
			}
			running++
		}
		if running == 0 {
			break
		}
		timeS += p.TimeStepS
	}
	// Requests arriving after the run are routed on the final states.
	if next < len(e.requests) {
		if _, err := e.routeUntil(&ls, next, e.requests[len(e.requests)-1].ArrivalTimeS); err != nil {
			return err
		}
	}
	for k, st := range ls.steppers {
		ls.deferred[k].drop()
		e.finish(k, st, ls.routed[k])
	}
	return nil
}

// routeUntil routes the requests from next on that arrive by untilS and
// returns the index of the first one left. The states are read once, then
// updated for the replica that took each request.
func (e *engine) routeUntil(ls *lockStep, next int, untilS float64) (int, error) {
	for k, st := range ls.steppers {
		ls.states[k] = st.Load()
	}
	for ; next < len(e.requests) && e.requests[next].ArrivalTimeS <= untilS; next++ {
		k, err := e.route(next, ls.states)
		if err != nil {
			return next, err
		}
		st := ls.steppers[k]
		if ls.stopped[k] {
			return next, fmt.Errorf("replica %d has stopped", k)
		}
		if _, marked := st.Checkpoint(); marked {
			ls.deferred[k].flush(&e.sums)
		}
		if err := st.Add(e.requests[next]); err != nil {
			return next, fmt.Errorf("replica %d: %w", k, err)
		}
		ls.routed[k] = append(ls.routed[k], next)
		ls.states[k] = st.Load()
	}
	return next, nil
}

// stop ends replica k's stepping; held idle steps are rolled back.
func (ls *lockStep) stop(k int) {
	ls.stopped[k] = true
	ls.deferred[k].drop()
}
