package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"servesim/internal/numeric"
	"servesim/internal/plant"
	"servesim/internal/texttable"
)

// transfer is one request's KV on its way from its prefill replica to its
// decode replica (times NaN until they happen).
type transfer struct {
	prefill, decode int // replicas; decode is -1 until routed
	local           int // its index among the prefill replica's records
	tokens, bytes   float64
	// readyS is the first token (the KV ready to move), startS the
	// transfer's start (after any wait for room), sentS its last byte
	// leaving, arriveS the KV at the decode replica.
	readyS, startS, sentS, arriveS float64
	remaining                      float64 // bytes not sent yet
}

// kvLink is one prefill replica's link: its transfers share its bandwidth
// equally (processor sharing).
type kvLink struct {
	bytesPerS float64
	active    []int // transfers sending (workload indices)
	starting  []int // transfers to join at their startS, in time order
	timeS     float64
}

// Pool indices.
const (
	poolPrefill = iota
	poolDecode
)

// disaggRun is a disaggregated run in progress (see disagg.go).
type disaggRun struct {
	e             *engine
	link          Link
	bytesPerToken float64
	decodeRouter  Router
	// members[pool] are the replicas of each pool; role[k] and at[k] are
	// replica k's pool and its place in it.
	members  [2][]int
	role, at []int
	steppers []*plant.Stepper
	states   [2][]ReplicaState
	routed   [][]int // workload indices added to each replica, in order
	deferred []deferredPower
	sums     [2]stepSums
	// prefilling[j] are the requests (indices into the stepper's records)
	// prefill replica j has not finished.
	prefilling [][]int
	links      []kvLink // one per prefill replica
	// keep says the prefill replicas have the prefix cache: a request to
	// move keeps its blocks there (plant.Stepper.KeepKV) instead of its
	// KV being held from the end of its first token's step.
	keep bool
	// waiting[j] are the transfers held back for room at decode replica
	// j, waitingTokens their KV and inflight the transfers under way to it.
	waiting       []fifo[int]
	waitingTokens []float64
	inflight      []int
	xfers         []transfer // by workload index
	ready, sent   []int      // the step's
	decoded       int        // requests routed to the decode pool so far
	arrivals      heldArrivals
	next, step    int
	timeS         float64
	// prefillBusy counts requests routed and not finished at their
	// prefill replica; outstanding, transfers routed and not arrived.
	prefillBusy, outstanding int
}

// runDisaggregated runs a disaggregated fleet and returns its result.
func (e *engine) runDisaggregated() (*Result, error) {
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
	cfg := &e.cfg
	if err := CheckRoles(cfg.Groups); err != nil {
		return nil, err
	}
	dis := Disaggregation{Link: Link{BandwidthGBps: DefaultKVTransferBandwidthGBps, LatencyS: DefaultKVTransferLatencyS}}
	if cfg.Disaggregation != nil {
		dis = *cfg.Disaggregation
	}
	if err := dis.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Scaling != nil:
		return nil, errNoPoolScaling
	case cfg.MaxConcurrency > 0:
		return nil, errors.New("a disaggregated fleet runs an open loop: --max-concurrency is not supported")
	case !cfg.Service.Batched() && cfg.Engine.Preemption == plant.PreemptionRecompute:
		return nil, errors.New("a disaggregated fleet under the reference service model runs without preemption: its preemption prefills a request again where it decodes, and a decode replica, which takes each request's KV whole, holds no prefill state to do it with")
	}
	switch dis.DecodeRouter.(type) {
	case nil:
		dis.DecodeRouter = &RoundRobin{}
	case *PrefixAware:
		// The decode pool keeps no prefix cache (poolOptions): prefix-aware
		// there is least-outstanding, as it is on prompts no replica holds.
		dis.DecodeRouter = LeastOutstanding{}
	}
	if b, ok := dis.DecodeRouter.(binder); ok {
		// What the fleet's router is bound to (a session router's
		// sessions), the decode router is too.
		if err := b.bind(cfg); err != nil {
			return nil, err
		}
	}
	n := len(e.specs)
	d := &disaggRun{
		e:             e,
		link:          dis.Link,
		bytesPerToken: dis.bytesPerToken(cfg.Service),
		decodeRouter:  dis.DecodeRouter,
		role:          make([]int, n),
		at:            make([]int, n),
		steppers:      make([]*plant.Stepper, n),
		routed:        make([][]int, n),
		deferred:      make([]deferredPower, n),
		xfers:         make([]transfer, len(e.requests)),
		arrivals:      heldArrivals{requests: e.requests},
		keep:          cfg.Engine.PrefixCache,
	}
	for k, s := range e.specs {
		pool := poolPrefill
		if cfg.Groups[s.group].Role == RoleDecode {
			pool = poolDecode
		}
		d.role[k], d.at[k] = pool, len(d.members[pool])
		d.members[pool] = append(d.members[pool], k)
	}
	np, nd := len(d.members[poolPrefill]), len(d.members[poolDecode])
	d.states = [2][]ReplicaState{make([]ReplicaState, np), make([]ReplicaState, nd)}
	d.prefilling = make([][]int, np)
	d.links = make([]kvLink, np)
	for j := range d.links {
		d.links[j].bytesPerS = d.link.BandwidthGBps * 1e9
	}
	d.waiting = make([]fifo[int], nd)
	d.waitingTokens = make([]float64, nd)
	d.inflight = make([]int, nd)
	for k := range n {
		st, err := e.newStepper(k, len(e.requests)/len(d.members[d.role[k]])+1)
		if err != nil {
			_ = closeAll(d.steppers)
			return nil, err
		}
		d.steppers[k] = st
	}
	for pool := range d.sums {
		d.sums[pool] = stepSums{scale: e.sums.scale}
		d.sums[pool].reserve(e.expectedSteps())
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
	d.finish()
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
		if err := d.stepReplica(k); err != nil {
			return true, err
		}
	}
	d.takeFirstTokens()
	if err := d.routeDecode(); err != nil {
		return true, err
	}
	d.startTransfers()
	endS := d.timeS + p.TimeStepS
	d.sent = d.sent[:0]
	for j := range d.links {
		d.sent = d.links[j].move(d.xfers, endS, d.sent)
	}
	if err := d.deliver(); err != nil {
		return true, err
	}
	idle := true
	for _, k := range d.members[poolDecode] {
		if err := d.stepReplica(k); err != nil {
			return true, err
		}
		idle = idle && d.steppers[k].Idle()
	}
	d.step++
	d.timeS += p.TimeStepS
	_, more := d.arrivals.peek()
	return !more && d.prefillBusy == 0 && d.outstanding == 0 && idle, nil
}

// stepReplica steps replica k once and adds its step to its pool's sums
// (held while it idles past its checkpoint: it counts only if a request
// comes to it later).
func (d *disaggRun) stepReplica(k int) error {
	st := d.steppers[k]
	before := st.Steps()
	if _, err := st.Step(); err != nil {
		return fmt.Errorf("replica %d: %w", k, err)
	}
	if st.Steps() == before {
		return nil
	}
	sums := &d.sums[d.role[k]]
	if mark, ok := st.Checkpoint(); ok && d.step >= mark {
		d.deferred[k].hold(d.step, sums.fixed(st.Last().PowerW))
	} else {
		sums.add(d.step, st.Last())
	}
	return nil
}

// adding readies replica k for a request: its held idle steps count.
func (d *disaggRun) adding(k int) {
	if _, marked := d.steppers[k].Checkpoint(); marked {
		d.deferred[k].flush(&d.sums[d.role[k]])
	}
}

// state is what a router sees of replica k: its load, with the KV it holds
// and, for a decode replica, the transfers routed to it and not arrived
// (as queued requests and their KV).
func (d *disaggRun) state(k int) ReplicaState {
	st := d.steppers[k]
	l := st.Load()
	l.KVTokens += st.HeldKV()
	if d.role[k] == poolDecode {
		j := d.at[k]
		l.KVTokens += d.waitingTokens[j]
		l.QueuedRequests += d.waiting[j].len() + d.inflight[j]
	}
	return l
}

// route asks router for a replica of pool for req and checks the answer.
func (d *disaggRun) route(router Router, pool int, req Arrival) (int, error) {
	states := d.states[pool]
	j := router.Route(req, states)
	if j < 0 || j >= len(states) {
		return 0, fmt.Errorf("router %s sent request %d to replica %d of a pool of %d", router.Name(), req.ID, j, len(states))
	}
	return j, nil
}

// routeUntil routes the requests that arrive by untilS to the prefill
// pool, each to be prefilled with one output token: its first.
func (d *disaggRun) routeUntil(untilS float64) error {
	if r, ok := d.arrivals.peek(); !ok || r.ArrivalTimeS > untilS {
		return nil
	}
	members := d.members[poolPrefill]
	for j, k := range members {
		d.states[poolPrefill][j] = d.state(k)
	}
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
		st := d.steppers[k]
		d.adding(k)
		first := r
		first.OutputTokens = 1
		if err := st.Add(first); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
		local := len(d.routed[k])
		if d.keep && r.OutputTokens > 1 {
			if err := st.KeepKV(local); err != nil {
				return fmt.Errorf("replica %d: %w", k, err)
			}
		}
		d.e.assignment[d.next] = k
		d.prefilling[j] = append(d.prefilling[j], local)
		d.routed[k] = append(d.routed[k], d.next)
		d.states[poolPrefill][j] = d.state(k)
		d.prefillBusy++
		d.arrivals.take()
		d.next++
	}
}

// takeFirstTokens collects the requests whose first token came in the
// step (in d.ready, in time order): each with more tokens to come has its
// KV held at its prefill replica until sent.
func (d *disaggRun) takeFirstTokens() {
	d.ready = d.ready[:0]
	svc := d.e.cfg.Service
	for j, k := range d.members[poolPrefill] {
		st := d.steppers[k]
		records := st.Records()
		kept := d.prefilling[j][:0]
		for _, local := range d.prefilling[j] {
			rec := &records[local]
			if math.IsNaN(rec.CompletionTimeS) {
				kept = append(kept, local)
				continue
			}
			d.prefillBusy--
			i := d.routed[k][local]
			r := &d.e.requests[i]
			if r.OutputTokens < 2 {
				continue // served whole by its prefill replica
			}
			tokens := plant.PrefilledKVTokens(svc, r.PromptTokens)
			d.xfers[i] = transfer{prefill: k, decode: -1, local: local, tokens: tokens, bytes: tokens * d.bytesPerToken,
				readyS: rec.CompletionTimeS, startS: math.NaN(), sentS: math.NaN(), arriveS: math.NaN()}
			if !d.keep {
				st.HoldKV(tokens)
			}
			d.ready = append(d.ready, i)
			d.outstanding++
		}
		d.prefilling[j] = kept
	}
	slices.SortFunc(d.ready, func(a, b int) int {
		return cmp.Or(cmp.Compare(d.xfers[a].readyS, d.xfers[b].readyS), cmp.Compare(a, b))
	})
}

// routeDecode routes the step's first tokens to the decode pool, where
// each waits for room.
func (d *disaggRun) routeDecode() error {
	if len(d.ready) == 0 {
		return nil
	}
	members := d.members[poolDecode]
	for j, k := range members {
		d.states[poolDecode][j] = d.state(k)
	}
	for _, i := range d.ready {
		x := &d.xfers[i]
		r := &d.e.requests[i]
		j, err := d.route(d.decodeRouter, poolDecode, Arrival{Index: d.decoded, ID: r.ID, ArrivalTimeS: x.readyS, PromptTokens: r.PromptTokens})
		if err != nil {
			return err
		}
		d.decoded++
		x.decode = members[j]
		d.waiting[j].push(i)
		d.waitingTokens[j] += x.tokens
		d.states[poolDecode][j] = d.state(members[j])
	}
	return nil
}

// startTransfers starts, in each decode replica's order, the transfers
// that have room there: the room is reserved until the KV arrives. Room
// is the request's KV plus, as the reference's admission reserves it,
// DecodeKVReserveTokensPerActive for each request decoding, waiting or
// arriving there, itself included (their tokens to come).
func (d *disaggRun) startTransfers() {
	reserve := d.e.cfg.Plant.DecodeKVReserveTokensPerActive
	for j, k := range d.members[poolDecode] {
		q := &d.waiting[j]
		if q.len() == 0 {
			continue
		}
		st := d.steppers[k]
		l := st.Load()
		there := l.ActiveDecodes + l.QueuedRequests + d.inflight[j]
		for q.len() > 0 {
			i := q.front()
			x := &d.xfers[i]
			if st.FreeKV()-float64(there+1)*reserve < x.tokens {
				break // held back: the prefill replica keeps the KV
			}
			q.pop()
			d.waitingTokens[j] -= x.tokens
			st.HoldKV(x.tokens)
			d.inflight[j]++
			there++
			x.startS = max(x.readyS, d.timeS)
			x.remaining = x.bytes
			l := &d.links[d.at[x.prefill]]
			l.starting = append(l.starting, i)
		}
	}
}

// move runs the link to endS: its transfers join at their start and share
// its bandwidth equally; it appends to sent those whose last byte left.
func (l *kvLink) move(xs []transfer, endS float64, sent []int) []int {
	if len(l.active) == 0 && len(l.starting) == 0 {
		return sent
	}
	slices.SortFunc(l.starting, func(a, b int) int {
		return cmp.Or(cmp.Compare(xs[a].startS, xs[b].startS), cmp.Compare(a, b))
	})
	s := 0 // l.starting[s:] have not joined
	for {
		if len(l.active) == 0 {
			if s == len(l.starting) || xs[l.starting[s]].startS > endS {
				break
			}
			l.timeS = max(l.timeS, xs[l.starting[s]].startS)
		}
		for s < len(l.starting) && xs[l.starting[s]].startS <= l.timeS {
			l.active = append(l.active, l.starting[s])
			s++
		}
		horizon := endS
		if s < len(l.starting) {
			horizon = min(horizon, xs[l.starting[s]].startS)
		}
		if math.IsInf(l.bytesPerS, 1) {
			for _, i := range l.active {
				xs[i].remaining, xs[i].sentS = 0, l.timeS
				sent = append(sent, i)
			}
			l.active = l.active[:0]
			continue
		}
		share := l.bytesPerS / float64(len(l.active))
		least := math.Inf(1)
		for _, i := range l.active {
			least = min(least, xs[i].remaining)
		}
		if finishS := l.timeS + least/share; finishS <= horizon {
			kept := l.active[:0]
			for _, i := range l.active {
				x := &xs[i]
				x.remaining -= least
				if x.remaining <= 1e-9*x.bytes {
					x.remaining, x.sentS = 0, finishS
					sent = append(sent, i)
					continue
				}
				kept = append(kept, i)
			}
			l.active = kept
			l.timeS = finishS
			continue
		}
		moved := share * (horizon - l.timeS)
		for _, i := range l.active {
			xs[i].remaining -= moved
		}
		l.timeS = horizon
		if horizon >= endS {
			break
		}
	}
	l.starting = append(l.starting[:0], l.starting[s:]...)
	return sent
}

// deliver frees the sent transfers' KV at their prefill replicas and hands
// each to its decode replica, to arrive LatencyS after its last byte.
func (d *disaggRun) deliver() error {
	if len(d.sent) == 0 {
		return nil
	}
	for _, i := range d.sent {
		x := &d.xfers[i]
		x.arriveS = x.sentS + d.link.LatencyS
		if d.keep {
			d.steppers[x.prefill].ReleaseKeptKV(x.local)
		} else {
			d.steppers[x.prefill].ReleaseKV(x.tokens)
		}
	}
	slices.SortFunc(d.sent, func(a, b int) int {
		return cmp.Or(cmp.Compare(d.xfers[a].arriveS, d.xfers[b].arriveS), cmp.Compare(a, b))
	})
	for _, i := range d.sent {
		x := &d.xfers[i]
		k := x.decode
		st := d.steppers[k]
		d.adding(k)
		st.ReleaseKV(x.tokens)
		r := d.e.requests[i]
		r.ArrivalTimeS = x.arriveS
		if err := st.AddPrefilled(r); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
		d.routed[k] = append(d.routed[k], i)
		d.inflight[d.at[k]]--
		d.outstanding--
	}
	return nil
}

// finish ends every replica's run and builds the fleet's records: each
// request's arrival, prefill start and first token from its prefill
// replica, its completion from its decode replica (or from its prefill
// replica for a request of one output token).
func (d *disaggRun) finish() {
	e := d.e
	for k, st := range d.steppers {
		d.deferred[k].drop()
		res, totals := st.Result()
		res.Requests = nil
		s := e.specs[k]
		e.replicas[k] = Replica{Index: k, Group: s.group, GroupName: e.cfg.Groups[s.group].Name,
			RequestsRouted: len(d.routed[k]), Result: res, Totals: totals}
	}
	for _, k := range d.members[poolPrefill] {
		for local, rec := range d.steppers[k].Records() {
			i := d.routed[k][local]
			rec.OutputTokens = e.requests[i].OutputTokens
			if rec.OutputTokens > 1 {
				rec.CompletionTimeS = math.NaN()
			}
			e.records[i] = rec
		}
	}
	for _, k := range d.members[poolDecode] {
		for local, rec := range d.steppers[k].Records() {
			e.records[d.routed[k][local]].CompletionTimeS = rec.CompletionTimeS
		}
	}
	for _, k := range d.members[poolPrefill] {
		// A request log's row is the fleet's record, at its prefill
		// replica (where it arrived).
		if l := e.replicas[k].Result.Log; l != nil {
			l.Records = make([]plant.RequestRecord, len(d.routed[k]))
			for local, i := range d.routed[k] {
				l.Records[local] = e.records[i]
			}
		}
	}
	e.sums.reserve(e.expectedSteps())
	for pool := range d.sums {
		e.sums.merge(&d.sums[pool])
	}
}

// DisaggResult is a disaggregated run's block (disaggregation): the link,
// the transfers and each pool's metrics.
type DisaggResult struct {
	// KVTransferBandwidthGBps is each prefill replica's link, GB/s (null:
	// an instant link).
	KVTransferBandwidthGBps float64 `json:"kv_transfer_bandwidth_gbps"`
	KVTransferLatencyS      float64 `json:"kv_transfer_latency_s"` // kv_transfer_latency_s: from last byte to arrival
	KVBytesPerToken         float64 `json:"kv_bytes_per_token"`    // kv_bytes_per_token: the KV size of a token
	// LinkSharing names the sharing rule: one link per prefill replica,
	// processor sharing among its transfers.
	LinkSharing string `json:"link_sharing"`
	// Transfers is the KV transfers that arrived, KVBytesTransferred
	// their bytes, KVTokensTransferred their tokens.
	Transfers           int     `json:"transfers"`
	KVTokensTransferred float64 `json:"kv_tokens_transferred"`
	KVBytesTransferred  float64 `json:"kv_bytes_transferred"`
	// TransfersUnfinished is the requests whose first token came but
	// whose KV had not arrived when the run ended.
	TransfersUnfinished int `json:"transfers_unfinished"`
	// The transfer wait is from a request's first token to its KV at the
	// decode replica (held back for room, then moving); the hold-back part
	// from its first token to its transfer's start. Means, 95th
	// percentiles (linear) and maxima over the transfers that arrived,
	// null without any.
	TransferWaitMeanS float64 `json:"transfer_wait_mean_s"`
	TransferWaitP95S  float64 `json:"transfer_wait_p95_s"`
	TransferWaitMaxS  float64 `json:"transfer_wait_max_s"`
	HeldBackMeanS     float64 `json:"held_back_mean_s"`
	HeldBackMaxS      float64 `json:"held_back_max_s"`
	// Pools are the prefill pool's and the decode pool's own runs.
	Pools []PoolResult `json:"pools"`
	// DecodeReplica is each request's decode replica, -1 for none.
	DecodeReplica []int `json:"-"`
}

// PoolResult is one pool of a disaggregated fleet: its replicas and their
// metrics combined as a fleet's are (fleetMetrics) over the pool's own
// requests as its replicas served them: the prefill pool's end at their
// first token (one output token each), the decode pool's start when their
// KV arrived (their first token came with it: TTFT 0; TPOT is the decode
// alone). The fleet's energy is the pools' sum.
type PoolResult struct {
	Role     string          `json:"role"`     // role: prefill or decode
	Replicas []int           `json:"replicas"` // replicas: the pool's replica numbers
	Groups   []string        `json:"groups"`   // groups: its groups' names
	Requests int             `json:"requests"` // requests: the requests its replicas took
	Metrics  plant.Metrics   `json:"metrics"`  // metrics: the pool's own
	SLO      plant.SLOReport `json:"slo"`      // slo: the pool's own
}

// report assembles the disaggregation block of fleet result res.
func (d *disaggRun) report(res *Result) *DisaggResult {
	r := &DisaggResult{
		KVTransferBandwidthGBps: d.link.BandwidthGBps,
		KVTransferLatencyS:      d.link.LatencyS,
		KVBytesPerToken:         d.bytesPerToken,
		LinkSharing:             "one link per prefill replica, processor sharing among its transfers",
		DecodeReplica:           make([]int, len(d.xfers)),
	}
	var waits, held []float64
	for i := range d.xfers {
		x := &d.xfers[i]
		r.DecodeReplica[i] = -1
		switch {
		case x.tokens == 0:
			continue // never ready to move
		case math.IsNaN(x.arriveS):
			r.TransfersUnfinished++
			continue
		}
		r.DecodeReplica[i] = x.decode
		r.Transfers++
		r.KVTokensTransferred += x.tokens
		r.KVBytesTransferred += x.bytes
		waits = append(waits, x.arriveS-x.readyS)
		held = append(held, x.startS-x.readyS)
	}
	r.TransferWaitMeanS, r.TransferWaitP95S, r.TransferWaitMaxS = math.NaN(), math.NaN(), math.NaN()
	r.HeldBackMeanS, r.HeldBackMaxS = math.NaN(), math.NaN()
	if len(waits) > 0 {
		r.TransferWaitMeanS = numeric.Mean(waits)
		r.TransferWaitMaxS = slices.Max(waits)
		r.TransferWaitP95S = numeric.PercentileLinearSelect(waits, 95)
		r.HeldBackMeanS = numeric.Mean(held)
		r.HeldBackMaxS = slices.Max(held)
	}
	for pool, role := range []string{RolePrefill, RoleDecode} {
		r.Pools = append(r.Pools, d.poolResult(pool, role, res.Steps))
	}
	return r
}

// poolResult is pool's block over the fleet's steps.
func (d *disaggRun) poolResult(pool int, role string, steps int) PoolResult {
	e := d.e
	sub := &Result{Steps: steps}
	sub.PowerW, sub.Queued = d.sums[pool].series(steps)
	out := PoolResult{Role: role, Replicas: d.members[pool]}
	for _, k := range d.members[pool] {
		sub.Replicas = append(sub.Replicas, e.replicas[k])
		for _, rec := range d.steppers[k].Records() {
			sub.Requests = append(sub.Requests, rec)
			sub.Assignment = append(sub.Assignment, k)
		}
		if name := e.cfg.Groups[e.specs[k].group].Name; !slices.Contains(out.Groups, name) {
			out.Groups = append(out.Groups, name)
		}
	}
	out.Requests = len(sub.Requests)
	out.Metrics, out.SLO = e.fleetMetrics(sub)
	return out
}

// writeLine writes a fleet table's line on the transfers; nothing for a
// fleet that is not disaggregated (r nil).
func (r *DisaggResult) writeLine(b *strings.Builder) {
	if r == nil {
		return
	}
	link := texttable.Sig(r.KVTransferBandwidthGBps, 4) + " GB/s"
	if math.IsInf(r.KVTransferBandwidthGBps, 1) {
		link = "instant"
	}
	fmt.Fprintf(b, "disaggregated: %d KV transfers, %s GB moved over %s links (latency %s s); wait from first token to KV arrival mean %s s, p95 %s s; held back for room mean %s s",
		r.Transfers, texttable.Sig(r.KVBytesTransferred/1e9, 4), link, texttable.Sig(r.KVTransferLatencyS, 4),
		texttable.Sig(r.TransferWaitMeanS, 3), texttable.Sig(r.TransferWaitP95S, 3), texttable.Sig(r.HeldBackMeanS, 3))
	if r.TransfersUnfinished > 0 {
		fmt.Fprintf(b, "; %d unfinished", r.TransfersUnfinished)
	}
	b.WriteString("\n")
}
