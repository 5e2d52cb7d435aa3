package fleet

import (
	"math"

	"servesim/internal/plant"
)

// disaggRun is a fixed disaggregated fleet's run in progress (see
// disagg.go): every replica of its pools takes requests from the start.
type disaggRun struct {
	*disaggPools
	arrivals   heldArrivals
	next, step int
}

// runDisaggregated runs a disaggregated fleet and returns its result.
func (e *engine) runDisaggregated() (*Result, error) {
	if e.cfg.Scaling != nil {
		return e.runElasticResult() // its pools scale (elastic_disagg.go)
	}
	d, err := e.newDisaggRun()
	if err != nil {
		return nil, err
	}
	if err := d.run(); err != nil {
		return nil, err
	}
	res := e.result()
	res.Disaggregation = d.report(res)
	return res, nil
}

// newDisaggRun checks a disaggregated fleet and builds its replicas.
func (e *engine) newDisaggRun() (*disaggRun, error) {
	pools, err := e.newDisaggPools()
	if err != nil {
		return nil, err
	}
	d := &disaggRun{disaggPools: pools, arrivals: heldArrivals{requests: e.requests}}
	perPool := [2]int{}
	for _, s := range e.specs {
		perPool[d.poolOf(s.group)]++
	}
	for k, s := range e.specs {
		st, err := e.newStepper(k, len(e.requests)/perPool[d.poolOf(s.group)]+1)
		if err != nil {
			_ = closeAll(d.steppers)
			return nil, err
		}
		d.add(k, st)
	}
	return d, nil
}

// run steps the fleet to the end and assembles its replicas and records.
func (d *disaggRun) run() (err error) {
	e := d.e
	defer func() {
		if cerr := closeAll(d.steppers); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for {
		done, err := d.advance()
		if err != nil {
			return err
		}
		if done {
			break
		}
		if d.step%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
	}
	// Requests arriving after the run are routed on the final states.
	if err := d.routeUntil(math.Inf(1)); err != nil {
		return err
	}
	for k := range d.steppers {
		d.finishReplica(k)
	}
	d.finishRecords()
	return nil
}

// advance runs one fleet step (see disagg.go for its order). It reports
// whether the run is over: every request served and every replica idle,
// or the grid past MaxSimulationTimeS.
func (d *disaggRun) advance() (bool, error) {
	e := d.e
	p := &e.cfg.Plant
	if !(d.timeS <= p.MaxSimulationTimeS+plant.TimeEpsilonS) {
		return true, nil
	}
	untilS := d.timeS + plant.TimeEpsilonS
	if e.cfg.Service.Batched() {
		untilS += p.TimeStepS // served at its own arrival within the step
	}
	if err := d.routeUntil(untilS); err != nil {
		return true, err
	}
	for _, k := range d.members[poolPrefill] {
		if _, err := d.stepReplica(k, d.step); err != nil {
			return true, err
		}
	}
	d.takeFirstTokens(d.members[poolPrefill])
	if err := d.routeDecode(d.members[poolDecode]); err != nil {
		return true, err
	}
	d.startTransfers(d.members[poolDecode])
	d.moveLinks(d.members[poolPrefill], d.timeS+p.TimeStepS)
	if err := d.deliver(); err != nil {
		return true, err
	}
	idle := true
	for _, k := range d.members[poolDecode] {
		if _, err := d.stepReplica(k, d.step); err != nil {
			return true, err
		}
		idle = idle && d.steppers[k].Idle()
	}
	d.step++
	d.timeS += p.TimeStepS
	_, more := d.arrivals.peek()
	return !more && d.prefillBusy == 0 && d.outstanding == 0 && idle, nil
}

// routeUntil routes the requests that arrive by untilS to the prefill
// pool.
func (d *disaggRun) routeUntil(untilS float64) error {
	if r, ok := d.arrivals.peek(); !ok || r.ArrivalTimeS > untilS {
		return nil
	}
	members := d.members[poolPrefill]
	d.readStates(poolPrefill, members)
	for {
		r, ok := d.arrivals.peek()
		if !ok || r.ArrivalTimeS > untilS {
			return nil
		}
		j, err := d.route(d.e.router, poolPrefill, Arrival{Index: d.next, ID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens})
		if err != nil {
			return err
		}
		k := members[j]
		if err := d.admit(k, d.next, r, false); err != nil {
			return err
		}
		d.states[poolPrefill][j] = d.state(k)
		d.arrivals.take()
		d.next++
	}
}
