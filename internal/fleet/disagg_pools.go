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
	// prefillS and firstS are the start of its prefill and its first
	// token, readyS the end of its run at the prefill replica (the KV
	// ready to move), startS the transfer's start (after any wait for a
	// decode replica or room), sentS its last byte leaving, arriveS the KV
	// at the decode replica, doneS its last token there.
	prefillS, firstS, readyS, startS, sentS, arriveS, doneS float64
	remaining                                               float64 // bytes not sent yet
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

// disaggPools are the two pools of a disaggregated fleet and the KV
// transfers between them (see disagg.go), whichever replicas they have:
// every per-replica field is indexed by replica number, grown as replicas
// join (add), so that a fixed fleet (disaggRun) and an elastic one
// (elastic_disagg.go) share them. The caller says which replicas each
// operation considers: those a router may choose (ready), and those that
// step (ready or draining).
type disaggPools struct {
	e             *engine
	link          Link
	bytesPerToken float64
	decodeRouter  Router
	// keep says the prefill replicas have the prefix cache: a request to
	// move keeps its blocks there (plant.Stepper.KeepKV) instead of its
	// KV being held from the end of its first token's step.
	keep bool
	// members[pool] are the replicas of each pool that joined, in
	// replica order.
	members [2][]int
	// By replica: its pool, its stepper (nil before it joins), the
	// workload indices added to it in order, its idle steps held back.
	role     []int
	steppers []*plant.Stepper
	routed   [][]int
	deferred []deferredPower
	// sums are each pool's step sums; states what a router sees of the
	// pool's replicas it may choose (readStates).
	sums   [2]stepSums
	states [2][]ReplicaState
	// By prefill replica: the requests (indices into its stepper's
	// records) it has not finished, its transfers whose KV has not all
	// left, its link.
	prefilling [][]int
	sending    []int
	links      []kvLink
	// By decode replica: the transfers held back for room there, their
	// KV, and the transfers under way to it.
	waiting       []fifo[int]
	waitingTokens []float64
	inflight      []int
	// unrouted are the first tokens that found no decode replica ready
	// (an elastic decode pool scaled to none), in order.
	unrouted fifo[int]
	xfers    []transfer // by workload index
	// records are each replica's request records once it finished.
	records     [][]plant.RequestRecord
	ready, sent []int   // the step's
	decoded     int     // requests routed to the decode pool so far
	timeS       float64 // the start of the step under way (a transfer that waited starts then)
	// prefillBusy counts requests routed and not finished at their
	// prefill replica; outstanding, first tokens not yet arrived as KV at
	// a decode replica.
	prefillBusy, outstanding int
}

// newDisaggPools checks a disaggregated fleet's settings and returns its
// pools, without replicas yet.
func (e *engine) newDisaggPools() (*disaggPools, error) {
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
	d := &disaggPools{
		e:             e,
		link:          dis.Link,
		bytesPerToken: dis.bytesPerToken(cfg.Service),
		decodeRouter:  dis.DecodeRouter,
		xfers:         make([]transfer, len(e.requests)),
		keep:          cfg.Engine.PrefixCache,
	}
	for pool := range d.sums {
		d.sums[pool] = stepSums{scale: e.sums.scale}
		d.sums[pool].reserve(e.expectedSteps())
	}
	return d, nil
}

// poolOf is the pool of a replica of group g.
func (d *disaggPools) poolOf(g int) int {
	if d.e.cfg.Groups[g].Role == RoleDecode {
		return poolDecode
	}
	return poolPrefill
}

// add makes st replica k's stepper: k joins its group's pool.
func (d *disaggPools) add(k int, st *plant.Stepper) {
	for len(d.role) <= k {
		d.role = append(d.role, 0)
		d.steppers = append(d.steppers, nil)
		d.routed = append(d.routed, nil)
		d.deferred = append(d.deferred, deferredPower{})
		d.prefilling = append(d.prefilling, nil)
		d.sending = append(d.sending, 0)
		d.links = append(d.links, kvLink{bytesPerS: d.link.BandwidthGBps * 1e9})
		d.waiting = append(d.waiting, fifo[int]{})
		d.waitingTokens = append(d.waitingTokens, 0)
		d.inflight = append(d.inflight, 0)
		d.records = append(d.records, nil)
	}
	pool := d.poolOf(d.e.specs[k].group)
	d.role[k], d.steppers[k] = pool, st
	d.members[pool] = append(d.members[pool], k)
}

// idle reports whether replica k has nothing left to do: its stepper
// idle and, for a prefill replica, every KV it produced sent; for a
// decode replica, none held back for it or under way.
func (d *disaggPools) idle(k int) bool {
	if !d.steppers[k].Idle() {
		return false
	}
	if d.role[k] == poolPrefill {
		return len(d.prefilling[k]) == 0 && d.sending[k] == 0
	}
	return d.waiting[k].len() == 0 && d.inflight[k] == 0
}

// stepReplica steps replica k, the fleet's step, once and adds its step to
// its pool's sums (held while it idles past its checkpoint: it counts only
// if a request comes to it later). It reports whether the stepper took a
// step (none past MaxSimulationTimeS).
func (d *disaggPools) stepReplica(k, step int) (bool, error) {
	st := d.steppers[k]
	before := st.Steps()
	if _, err := st.Step(); err != nil {
		return false, fmt.Errorf("replica %d: %w", k, err)
	}
	if st.Steps() == before {
		return false, nil
	}
	sums := &d.sums[d.role[k]]
	if mark, ok := st.Checkpoint(); ok && step >= mark {
		d.deferred[k].hold(step, sums.fixed(st.Last().PowerW))
	} else {
		sums.add(step, st.Last())
	}
	return true, nil
}

// adding readies replica k for a request: its held idle steps count.
func (d *disaggPools) adding(k int) {
	if _, marked := d.steppers[k].Checkpoint(); marked {
		d.deferred[k].flush(&d.sums[d.role[k]])
	}
}

// state is what a router sees of replica k: its load, with the KV it holds
// and, for a decode replica, the transfers routed to it and not arrived
// (as queued requests and their KV).
func (d *disaggPools) state(k int) ReplicaState {
	st := d.steppers[k]
	l := st.Load()
	l.KVTokens += st.HeldKV()
	if d.role[k] == poolDecode {
		l.KVTokens += d.waitingTokens[k]
		l.QueuedRequests += d.waiting[k].len() + d.inflight[k]
	}
	return l
}

// readStates reads the states of the replicas of pool a router may
// choose (candidates).
func (d *disaggPools) readStates(pool int, candidates []int) {
	d.states[pool] = d.states[pool][:0]
	for _, k := range candidates {
		d.states[pool] = append(d.states[pool], d.state(k))
	}
}

// route asks router for one of the candidates of pool for req (on the
// states readStates read) and checks the answer; it returns the position
// among the candidates.
func (d *disaggPools) route(router Router, pool int, req Arrival) (int, error) {
	states := d.states[pool]
	j := router.Route(req, states)
	if j < 0 || j >= len(states) {
		return 0, fmt.Errorf("router %s sent request %d to replica %d of a pool of %d", router.Name(), req.ID, j, len(states))
	}
	return j, nil
}

// admit adds request r, the workload's request i, to prefill replica k, to
// be prefilled with one output token: its first. waited says it waited at
// the router (plant.Stepper.AddWaited).
func (d *disaggPools) admit(k, i int, r plant.Request, waited bool) error {
	st := d.steppers[k]
	d.adding(k)
	first := r
	first.OutputTokens = 1
	add := st.Add
	if waited {
		add = st.AddWaited
	}
	if err := add(first); err != nil {
		return fmt.Errorf("replica %d: %w", k, err)
	}
	local := len(d.routed[k])
	if d.keep && r.OutputTokens > 1 {
		if err := st.KeepKV(local); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
	}
	d.e.assignment[i] = k
	d.prefilling[k] = append(d.prefilling[k], local)
	d.routed[k] = append(d.routed[k], i)
	d.prefillBusy++
	return nil
}

// takeFirstTokens collects the requests of the prefill replicas whose
// first token came in the step (in d.ready, in time order): each with more
// tokens to come has its KV held at its prefill replica until sent.
func (d *disaggPools) takeFirstTokens(prefill []int) {
	d.ready = d.ready[:0]
	svc := d.e.cfg.Service
	for _, k := range prefill {
		st := d.steppers[k]
		records := st.Records()
		kept := d.prefilling[k][:0]
		for _, local := range d.prefilling[k] {
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
				prefillS: rec.PrefillStartS, firstS: rec.FirstTokenTimeS, readyS: rec.CompletionTimeS,
				startS: math.NaN(), sentS: math.NaN(), arriveS: math.NaN(), doneS: math.NaN()}
			if !d.keep {
				st.HoldKV(tokens)
			}
			d.ready = append(d.ready, i)
			d.sending[k]++
			d.outstanding++
		}
		d.prefilling[k] = kept
	}
	slices.SortFunc(d.ready, func(a, b int) int {
		return cmp.Or(cmp.Compare(d.xfers[a].readyS, d.xfers[b].readyS), cmp.Compare(a, b))
	})
}

// routeDecode routes the first tokens that found no decode replica before
// and the step's to the decode replicas a router may choose (candidates),
// where each waits for room; with none, they wait for one.
func (d *disaggPools) routeDecode(candidates []int) error {
	if len(candidates) == 0 {
		for _, i := range d.ready {
			d.unrouted.push(i)
		}
		return nil
	}
	if len(d.ready) == 0 && d.unrouted.len() == 0 {
		return nil
	}
	d.readStates(poolDecode, candidates)
	for d.unrouted.len() > 0 {
		if err := d.routeToDecode(d.unrouted.front(), candidates); err != nil {
			return err
		}
		d.unrouted.pop()
	}
	for _, i := range d.ready {
		if err := d.routeToDecode(i, candidates); err != nil {
			return err
		}
	}
	return nil
}

// routeToDecode routes the first token of request i to one of the
// candidates of the decode pool.
func (d *disaggPools) routeToDecode(i int, candidates []int) error {
	x := &d.xfers[i]
	r := &d.e.requests[i]
	j, err := d.route(d.decodeRouter, poolDecode, Arrival{Index: d.decoded, ID: r.ID, ArrivalTimeS: x.readyS, PromptTokens: r.PromptTokens})
	if err != nil {
		return err
	}
	d.decoded++
	k := candidates[j]
	x.decode = k
	d.waiting[k].push(i)
	d.waitingTokens[k] += x.tokens
	d.states[poolDecode][j] = d.state(k)
	return nil
}

// startTransfers starts, in each decode replica's order, the transfers
// that have room there: the room is reserved until the KV arrives. Room
// is the request's KV plus, as the reference's admission reserves it,
// DecodeKVReserveTokensPerActive for each request decoding, waiting or
// arriving there, itself included (their tokens to come).
func (d *disaggPools) startTransfers(decode []int) {
	reserve := d.e.cfg.Plant.DecodeKVReserveTokensPerActive
	for _, k := range decode {
		q := &d.waiting[k]
		if q.len() == 0 {
			continue
		}
		st := d.steppers[k]
		l := st.Load()
		there := l.ActiveDecodes + l.QueuedRequests + d.inflight[k]
		for q.len() > 0 {
			i := q.front()
			x := &d.xfers[i]
			if st.FreeKV()-float64(there+1)*reserve < x.tokens {
				break // held back: the prefill replica keeps the KV
			}
			q.pop()
			d.waitingTokens[k] -= x.tokens
			st.HoldKV(x.tokens)
			d.inflight[k]++
			there++
			x.startS = max(x.readyS, d.timeS)
			x.remaining = x.bytes
			l := &d.links[x.prefill]
			l.starting = append(l.starting, i)
		}
	}
}

// moveLinks runs the links of the prefill replicas to endS, gathering in
// d.sent the transfers whose last byte left.
func (d *disaggPools) moveLinks(prefill []int, endS float64) {
	d.sent = d.sent[:0]
	for _, k := range prefill {
		d.sent = d.links[k].move(d.xfers, endS, d.sent)
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
func (d *disaggPools) deliver() error {
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
		d.sending[x.prefill]--
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
		d.inflight[k]--
		d.outstanding--
	}
	return nil
}

// finishReplica ends replica k's run: its result, and its records into
// the fleet's: a prefill replica's give each request's arrival, prefill
// start and first token (and the completion of a request of one output
// token), a decode replica's the completion of the others (applied by
// finishRecords, once every replica finished).
func (d *disaggPools) finishReplica(k int) {
	e := d.e
	st := d.steppers[k]
	d.deferred[k].drop()
	res, totals := st.Result()
	res.Requests = nil
	s := e.specs[k]
	e.replicas[k] = Replica{Index: k, Group: s.group, GroupName: e.cfg.Groups[s.group].Name,
		RequestsRouted: len(d.routed[k]), Result: res, Totals: totals}
	d.records[k] = st.Records()
	for local, rec := range d.records[k] {
		i := d.routed[k][local]
		if d.role[k] == poolDecode {
			d.xfers[i].doneS = rec.CompletionTimeS
			continue
		}
		rec.OutputTokens = e.requests[i].OutputTokens
		if rec.OutputTokens > 1 {
			rec.CompletionTimeS = math.NaN()
		}
		e.records[i] = rec
	}
}

// finishRecords completes the fleet's records with the decode replicas'
// completions, writes the prefill replicas' request logs, and adds the
// pools' steps to the fleet's sums.
func (d *disaggPools) finishRecords() {
	e := d.e
	for _, k := range d.members[poolDecode] {
		for _, i := range d.routed[k] {
			e.records[i].CompletionTimeS = d.xfers[i].doneS
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

// fleetRecord is the fleet's record of request i once its decode replica
// completed it at doneS.
func (d *disaggPools) fleetRecord(i int, doneS float64) plant.RequestRecord {
	r := &d.e.requests[i]
	x := &d.xfers[i]
	return plant.RequestRecord{RequestID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PrefillStartS: x.prefillS,
		FirstTokenTimeS: x.firstS, CompletionTimeS: doneS, PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens}
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
func (d *disaggPools) report(res *Result) *DisaggResult {
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
func (d *disaggPools) poolResult(pool int, role string, steps int) PoolResult {
	e := d.e
	sub := &Result{Steps: steps}
	sub.PowerW, sub.Queued = d.sums[pool].series(steps)
	out := PoolResult{Role: role, Replicas: d.members[pool]}
	for _, k := range d.members[pool] {
		sub.Replicas = append(sub.Replicas, e.replicas[k])
		for _, rec := range d.records[k] {
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
