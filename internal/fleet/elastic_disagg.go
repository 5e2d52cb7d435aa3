package fleet

import (
	"errors"

	"servesim/internal/plant"
)

// An elastic disaggregated fleet: each pool scales on its own. Its groups
// (each of role prefill or decode) are Scaling.Groups, each with its own
// autoscaler, bounds and initial size, as any elastic fleet of several
// groups; a replica of a group joins its group's pool when it becomes
// ready and leaves it when released. The fleet's router chooses among the
// ready prefill replicas, and a request that arrives when none is ready
// waits at the router; the decode router chooses among the ready decode
// replicas, and a first token that finds none ready waits, its KV kept by
// its prefill replica, until one is. A draining replica takes no new
// request but finishes its own: a prefill replica is released once its
// requests are prefilled and their KV has left, a decode replica once the
// transfers routed to it have arrived and decoded.
//
// What an autoscaler of a pool sees (ScaleObservation) is its own
// replicas: a decode replica's waiting requests count the transfers routed
// to it and not arrived (as the decode router sees them), RouterWaiting of
// the decode pool is the first tokens waiting for a ready decode replica,
// and Role names the pool. The arrival rate and the SLO attainment are the
// fleet's. A request's completion is judged when its last token comes, at
// its decode replica (or its prefill replica for a request of one output
// token), on the fleet's record: its TTFT up to its first token.

// makePools gives an elastic run of a disaggregated fleet its pools.
func (el *elastic) makePools() error {
	e := el.e
	if e.stream != nil {
		return errors.New("a disaggregated fleet holds its workload whole: it cannot be streamed")
	}
	pools, err := e.newDisaggPools()
	if err != nil {
		return err
	}
	el.pools = pools
	el.index = make(map[int]int, len(e.requests))
	for i := range e.requests {
		el.index[e.requests[i].ID] = i
	}
	return nil
}

// judge counts the completion of record r, judged by slo, in its window
// and, when an autoscaler observes, in the metrics pipeline's.
func (el *elastic) judge(r *plant.RequestRecord, slo plant.SLO) {
	met := slo.Met(r)
	el.counts.complete(r, met)
	if el.observing {
		el.window = append(el.window, judgment{timeS: r.CompletionTimeS, met: met})
	}
}

// judgePooled is replica k's completion callback in a disaggregated
// fleet: a prefill replica's completion is a request's only for a request
// of one output token; a decode replica's is judged on the fleet's record,
// by the objectives of its prefill replica's profile (the replica that
// served it, as the fleet's metrics judge it).
func (el *elastic) judgePooled(k int) func(*plant.RequestRecord) {
	e := el.e
	d := el.pools
	slo := e.slo(k)
	if d.poolOf(e.specs[k].group) == poolPrefill {
		return func(r *plant.RequestRecord) {
			if e.requests[el.index[r.RequestID]].OutputTokens < 2 {
				el.judge(r, slo)
			}
		}
	}
	return func(r *plant.RequestRecord) {
		i := el.index[r.RequestID]
		rec := d.fleetRecord(i, r.CompletionTimeS)
		el.judge(&rec, e.slo(d.xfers[i].prefill))
	}
}

// load is what the router and the autoscaler see of replica in.
func (el *elastic) load(in *instance) ReplicaState {
	if el.pools != nil {
		return el.pools.state(in.replica)
	}
	return in.st.Load()
}

// idle reports whether draining replica in has finished its work.
func (el *elastic) idle(in *instance) bool {
	if el.pools != nil {
		return el.pools.idle(in.replica)
	}
	return in.st.Idle()
}

// finish ends replica in's run: its result and its records into the
// fleet's.
func (el *elastic) finish(in *instance) {
	if d := el.pools; d != nil {
		d.finishReplica(in.replica)
		d.steppers[in.replica] = nil // its records are kept
		in.count = len(d.routed[in.replica])
		return
	}
	in.deferred.drop()
	el.e.finish(in.replica, in.st, in.routed, in.count)
	in.routed = nil
}

// gatherPools sorts the replicas into their pools: those that step (ready
// or draining, in start order) and those a router may choose (ready, in
// replica order). It runs once a step, after its lifecycle changes; the
// requests routed after the last step see the last step's.
func (el *elastic) gatherPools() {
	d := el.pools
	for pool := range el.poolAlive {
		el.poolAlive[pool] = el.poolAlive[pool][:0]
		el.poolReady[pool] = el.poolReady[pool][:0]
	}
	for _, in := range el.alive {
		if in.phase == lifeReady || in.phase == lifeDraining {
			el.poolAlive[d.role[in.replica]] = append(el.poolAlive[d.role[in.replica]], in.replica)
		}
	}
	for _, in := range el.ready {
		el.poolReady[d.role[in.replica]] = append(el.poolReady[d.role[in.replica]], in.replica)
	}
}

// routePrefill routes the requests waiting at the router to the ready
// prefill replicas, on their states read once and updated for the replica
// that took each request; with none ready they wait.
func (el *elastic) routePrefill() error {
	e := el.e
	d := el.pools
	candidates := el.poolReady[poolPrefill]
	if len(candidates) == 0 {
		return nil
	}
	d.readStates(poolPrefill, candidates)
	waitedS := el.timeS - e.cfg.Plant.TimeStepS + plant.TimeEpsilonS
	for ; el.queue.len() > 0; el.queue.pop() {
		r, i := el.queue.front()
		j, err := d.route(e.router, poolPrefill, Arrival{Index: i, ID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens})
		if err != nil {
			return err
		}
		k := candidates[j]
		if err := d.admit(k, i, r, r.ArrivalTimeS <= waitedS); err != nil {
			return err
		}
		d.states[poolPrefill][j] = d.state(k)
	}
	return nil
}

// stepPools runs the pools' step (see disagg.go for its order): the
// prefill replicas, the first tokens to the decode pool, the transfers,
// the decode replicas; and counts the loading replicas' draw. It returns
// the step's billed power and 1 while the pools are busy (or more requests
// are to come), else 0.
func (el *elastic) stepPools(more bool) (powerW float64, running int, err error) {
	d := el.pools
	for _, in := range el.alive {
		powerW += el.loadingStep(in)
	}
	d.timeS = el.timeS
	stepPool := func(pool int) (idle bool, err error) {
		idle = true
		for _, k := range el.poolAlive[pool] {
			took, err := d.stepReplica(k, el.step)
			if err != nil {
				return false, err
			}
			if took {
				powerW += d.steppers[k].Last().PowerW
			}
			idle = idle && d.steppers[k].Idle()
		}
		return idle, nil
	}
	if _, err := stepPool(poolPrefill); err != nil {
		return 0, 0, err
	}
	d.takeFirstTokens(el.poolAlive[poolPrefill])
	if err := d.routeDecode(el.poolReady[poolDecode]); err != nil {
		return 0, 0, err
	}
	d.startTransfers(el.poolAlive[poolDecode])
	d.moveLinks(el.poolAlive[poolPrefill], el.timeS+el.e.cfg.Plant.TimeStepS)
	if err := d.deliver(); err != nil {
		return 0, 0, err
	}
	idle, err := stepPool(poolDecode)
	if err != nil {
		return 0, 0, err
	}
	if more || d.prefillBusy > 0 || d.outstanding > 0 || !idle {
		running = 1
	}
	return powerW, running, nil
}
