package mpc

import (
	"math"
	"slices"
)

// item is a request the model follows one by one: a queued request, or in
// a clairvoyant solve a future arrival. Times are relative to the solve.
type item struct {
	arrivalS  float64 // arrival (negative: already arrived)
	deadlineS float64 // arrival + TTFT objective
	work      float64 // prompt tokens still to prefill up to and including this request, from the queue head
	prompt    float64 // prompt tokens
	output    float64 // output tokens; 0 when unknown
}

// problem is one solve's input: the state at the solve and what is
// predicted of the future, shared by every candidate plan's rollout.
type problem struct {
	dtS       float64
	stepsPerS float64 // 1 / dtS
	ttftS     float64 // the time to the first token an arrival is allowed (Controller.firstTokenS)
	e2eS      float64 // the end-to-end objective, 0 for none
	// The horizon is followed in blocks of periods (1, 1, 2, 4, ...),
	// the first partial when the solve is not at a period's start; a plan
	// holds one level over each block (the search varies the first
	// period's alone).
	blocks      []block
	horizonS    float64
	firstS      float64 // span of the first block
	afterFirstS float64 // span of the others
	// The queue: items in service order, and lostWork the prompt tokens
	// of the queued requests ahead of them already past their TTFT
	// objective (at the head, the queue being in arrival order).
	items    []item
	arrived  int // items arrived at the solve (the others are clairvoyant futures)
	lostWork float64
	// The decoding requests: their count, expected output tokens still to
	// generate, KV occupancy, and the shares the savable ones need
	// (sorted increasing).
	active     float64
	decodeLeft float64
	kvTokens   float64
	needs      []float64
	// Misses already certain (queued or decoding requests past an
	// objective).
	certainMisses float64
	temperatureC  float64
	// firstPrefillWaitS is the wait for the next prefill step of the
	// chunked scheduler's alternation at the solve.
	firstPrefillWaitS float64
	// Predicted arrivals (none in a clairvoyant solve): rate, mean prompt
	// and mean output, and the prompt tokens they bring per second.
	rate, meanPrompt, meanOutput float64
	inflow                       float64
	// Stationary outcome of each level under the predicted arrivals.
	stationary []stationary
	// TPOT success by per-request share, from the learned outputs.
	tpot *tpotTable
	// dual is set when the end-to-end objective is judged and the
	// default target holds: a plan must then also keep, judged without
	// it (tpotPlain), within the highest level's plan's misses. Where
	// nearly every request misses the end-to-end objective whatever the
	// clock (heavy load), its misses alone hardly tell the plans apart.
	dual      bool
	tpotPlain *tpotTable
	// Scratch of the rollouts: each period's trace and the followed
	// items admitted.
	trace    []periodTrace
	admitted []admission
	// prompts and outputs are the learned distributions.
	prompts, outputs *histogram
	// few are the requests decoding at the solve when there are at most
	// maxFew (fewBuf holds them).
	few    []fewActive
	fewBuf [maxFew]fewActive
	// activeBuf holds the decoding requests at the solve.
	activeBuf []Active
	// alone caches aloneSoon by level (at the solve every rollout runs a
	// level with the same thermal state); negative until computed.
	alone []float64
	// emptyTTFT caches ttftMet with nothing ahead, by phaseLevel.slot and
	// cycle (one step, two), for the prompt distribution of emptyTTFTFor
	// arrivals; NaN until computed.
	emptyTTFT    [][2]float64
	emptyTTFTFor float64
}

// block is a run of periods of the horizon: the first, its span and the
// thermal decay over it, and the span from its start to the end of the
// horizon and the decay over that.
type block struct {
	first            int
	spanS, decay     float64
	restS, restDecay float64
}

// stationary is a level's long-run outcome under the predicted arrivals:
// energy rate, share of arrivals missing an objective, and equilibrium
// temperature. Overloaded levels miss every arrival.
type stationary struct {
	powerW    float64
	missShare float64
	// missSharePlain is missShare judged without the end-to-end objective
	// (problem.dual).
	missSharePlain float64
	temperatureC   float64
	decodeLeft     float64 // mean output tokens still to generate, over the decoding requests
	// spare is the decode capacity a level has left over, tokens/s, and
	// growth the work an overloaded level leaves undone per second, in
	// seconds of work; 0 for a level that keeps up.
	spare, growth float64
}

// outcome is a candidate plan's predicted result.
type outcome struct {
	energyJ float64
	misses  float64
	// missesPlain are the misses judged without the end-to-end objective,
	// when problem.dual.
	missesPlain float64
	requests    float64 // requests judged: in the system and predicted arrivals
	peakTempC   float64
	states      int // model states expanded
	// leftoverS is the work left undone at the end of the horizon, in
	// seconds at the highest level's rates.
	leftoverS float64
}

// rollout is the state of the model while it follows one plan.
type rollout struct {
	m          *Controller
	pr         *problem
	t          float64
	k          int     // current block
	level      int     // level of the current block
	backlog    float64 // prompt tokens queued (followed items and predicted arrivals)
	prefilled  float64 // prompt tokens prefilled since the solve, from the queue head (after the lost ones)
	next       int     // first item not yet admitted
	arrivedTo  int     // items that have arrived (clairvoyant futures arrive during the rollout)
	active     float64
	decodeLeft float64
	kvTokens   float64
	tempC      float64
	peakTempC  float64
	energyJ    float64
	misses     float64
	// missesPlain: misses without the end-to-end objective (problem.dual).
	missesPlain float64
	judged      float64
	states      int
	// leftoverS is the work the horizon leaves undone, in seconds at the
	// highest level's rates.
	leftoverS float64
}

// periodTrace is what a rollout keeps of each block to judge TPOT once the
// plan is followed to its end.
type periodTrace struct {
	tokens   float64 // output tokens a decoding request gets in the block
	capacity float64 // output tokens the block can decode
	decoding float64 // requests decoding, times steps
	steps    float64 // steps in the block
	arrivals float64 // predicted arrivals
	ttftMet  float64 // of which meet the TTFT objective
}

// admission is a followed item's TTFT outcome, judged for TPOT at the end.
type admission struct {
	block   int
	ttftMet float64
	output  float64 // known output tokens, or 0
	// budgetS is, for a known output, the time the end-to-end objective
	// leaves it after its expected first token (+Inf: none).
	budgetS float64
}

// extend appends a zero element to s and returns s and the element, to be
// filled in place. The hot paths fill their records this way: a composite
// literal is built aside and copied, and the copy's wide loads stall on the
// narrow stores just made.
func extend[T any](s []T) ([]T, *T) {
	s = slices.Grow(s, 1)[:len(s)+1]
	p := &s[len(s)-1]
	*p = *new(T)
	return s, p
}

// run follows plan (a level index per period) and sets o to its outcome.
func (pr *problem) run(m *Controller, plan []int, o *outcome) {
	// Fields set one by one, as extend's callers do (about a tenth of a
	// rollout's time).
	var r rollout
	r.m, r.pr = m, pr
	r.active = pr.active
	r.decodeLeft = pr.decodeLeft
	r.kvTokens = pr.kvTokens
	r.tempC = pr.temperatureC
	r.peakTempC = pr.temperatureC
	r.misses = pr.certainMisses
	r.missesPlain = pr.certainMisses
	r.judged = pr.certainMisses + float64(len(pr.needs))
	pr.trace = pr.trace[:0]
	pr.admitted = pr.admitted[:0]
	r.arrivedTo = pr.arrived
	r.backlog = pr.lostWork
	if r.arrivedTo > 0 {
		r.backlog += pr.items[r.arrivedTo-1].work
	}
	r.prefilled = -pr.lostWork
	steady := steadyFrom(plan)
	for k := range pr.blocks {
		b := &pr.blocks[k]
		r.k = k
		level := plan[b.first]
		if b.first >= steady && r.settled() {
			r.tail(level, pr.horizonS-r.t, b.restDecay)
			break
		}
		r.block(level, b)
	}
	if m.clairvoyant {
		r.judgeLate()
	}
	r.judgeTPOT()
	r.finish(plan[len(plan)-1])
	o.energyJ, o.misses, o.requests = r.energyJ, r.misses, r.judged
	o.missesPlain = r.missesPlain
	o.peakTempC, o.states, o.leftoverS = r.peakTempC, r.states, r.leftoverS
}

// steadyFrom is the first period from which plan holds one level.
func steadyFrom(plan []int) int {
	k := len(plan) - 1
	for k > 0 && plan[k-1] == plan[k] {
		k--
	}
	return k
}

// settled reports whether nothing followed one by one remains: the rest of
// the horizon is the stationary regime (for a clairvoyant solve, only once
// every future request of the horizon is served).
func (r *rollout) settled() bool {
	return r.next == len(r.pr.items) && r.backlog <= 1e-6
}

// block follows one block of periods at level.
func (r *rollout) block(level int, b *block) {
	r.states++
	r.level = level
	pl := &r.m.levels.cool[level]
	if r.tempC >= r.m.plant.ThermalLimitC {
		pl = &r.m.levels.hot[level]
	}
	var trace *periodTrace
	r.pr.trace, trace = extend(r.pr.trace)
	trace.steps = b.spanS / r.pr.dtS
	start := r.energyJ
	end := r.t + b.spanS
	for r.t < end-TimeEpsilonS {
		r.interval(pl, end)
	}
	power := (r.energyJ - start) / b.spanS
	p := &r.m.plant
	equilibrium := p.AmbientC + p.ThermalRCPerW*power
	r.tempC = equilibrium + (r.tempC-equilibrium)*b.decay
	r.peakTempC = max(r.peakTempC, r.tempC)
}

// interval follows the plant until end or until its regime changes (the
// queue empties, the decoding requests finish, a future request arrives),
// at constant rates. It runs for every interval of every rollout, so its
// rates, admissions and decode stay written out here, in registers: split
// into calls of their own (regime, admit, judgeArrivals, decode) they made
// the mpc benchmarks 7-16% slower. Only the arrivals and the energy, whose
// calls inline, and the first interval's wait (firstWait) are apart.
func (r *rollout) interval(pl *phaseLevel, end float64) {
	p := &r.m.plant
	pr := r.pr
	dt := pr.dtS
	trace := &pr.trace[len(pr.trace)-1]
	span := r.arrive(end) - r.t
	inflow := pr.inflow

	// Prefill: the queue drains at drain tokens/s, one chunk per prefill
	// step, a prefill step every cycle steps: every other step while the
	// chunked scheduler alternates with requests decoding, which it does
	// unless none decodes, with the probability that a Poisson count of
	// mean r.active is 0, exp(-n) (its cubic Padé approximation, within
	// 2% for n <= 1 and near 0 beyond).
	cycle, alone := dt, 1.0
	if p.Scheduler == Chunked {
		n := r.active
		alone = 1 / (1 + n*(1+n*(0.5+n/6)))
		cycle = 2 * dt
	}
	drain := pl.chunkPerS * (alone + (1-alone)/2)
	blocked := r.active >= float64(p.MaxActive)-0.5 ||
		r.kvTokens+(r.active+1)*p.KVReserveTokensPerActive >= p.KVCapacityTokens ||
		(p.Scheduler == Chunked && r.active >= 0.5 && r.kvTokens >= p.KVPressure*p.KVCapacityTokens) ||
		(p.Scheduler == Continuous && r.active >= 0.5)
	if blocked {
		drain = 0
	}
	queued := r.backlog > 1e-6

	// Rates: prompt tokens prefilled, prefill steps and decode capacity,
	// per second.
	var prefillRate, prefillSteps float64
	if queued && drain > 0 {
		prefillRate = drain
		prefillSteps = drain / pl.chunk
	} else if !queued && inflow > 0 {
		// Arrivals are prefilled as they come, a step per chunk.
		prefillRate = inflow
		prefillSteps = min(pr.rate*(pr.meanPrompt/pl.chunk+0.5), pr.stepsPerS)
	}
	decodeSteps := max(0, pr.stepsPerS-prefillSteps)
	if p.Scheduler == Static && queued && drain > 0 {
		// Static prefills first: decode only in what prefill steps leave.
		decodeSteps = 0
	}
	leftRate := pl.leftPerPrefillStep * prefillSteps
	capacityRate := leftRate + pl.decodeRate*decodeSteps*dt

	// The regime lasts until the queue empties or, while the chunked
	// scheduler alternates, until the decoding requests are done.
	cleared, exhausted := false, false
	if queued && drain > inflow {
		if t := r.backlog / (drain - inflow); t <= span {
			span, cleared = t, true
		}
	}
	if queued && drain > 0 && alone < 1 && r.decodeLeft > 0 && capacityRate > 0 {
		if t := r.decodeLeft / capacityRate; t < span {
			span, cleared, exhausted = t, false, true
		}
	}
	span = max(span, 1e-9)
	decodeLeft := r.decodeLeft
	prefilled := prefillRate * span
	leftTokens := leftRate * span
	capacity := capacityRate * span

	// Admissions: followed items whose prompt completes, then predicted
	// arrivals' prompts.
	before := r.prefilled
	r.prefilled += prefilled
	r.backlog = max(0, r.backlog+inflow*span-prefilled)
	if cleared {
		r.backlog = 0
	}
	// The first prefill step of the interval comes after a known wait at
	// the solve, half a cycle's on average later.
	wait := 0.5 * (cycle - dt)
	itemsAlone := alone
	if r.t == 0 {
		wait, itemsAlone = r.firstWait(pl, cycle)
	}
	for r.next < r.arrivedTo && pr.items[r.next].work <= r.prefilled+1e-9 {
		it := &pr.items[r.next]
		// Its prompt completes in the n-th prefill step of the interval;
		// the first token comes at the end of that step.
		steps := max(1, math.Ceil((it.work-before)/pl.chunk-1e-9))
		first := r.t + wait + (steps-1)*cycle + dt
		firstAlone := r.t + steps*dt
		r.admitItem(it, first, firstAlone, itemsAlone)
		r.next++
	}
	if r.next == len(pr.items) && pr.rate > 0 {
		// Past the followed items, prompts are the predicted arrivals'.
		var known float64
		if n := len(pr.items); n > 0 {
			known = pr.items[n-1].work
		}
		if fluid := r.prefilled - max(before, known); fluid > 0 {
			admitted := fluid / pr.meanPrompt
			r.active += admitted
			r.decodeLeft += admitted * pr.meanOutput
			r.kvTokens += fluid
		}
	}
	// Predicted arrivals in the interval: TTFT behind the queue as it
	// stands mid-interval (TPOT is judged at the end).
	if pr.rate > 0 {
		arrivals := pr.rate * span
		ahead := max(0, r.backlog-0.5*(inflow-prefilled/span)*span)
		// An arrival's prompt steps run back to back when nothing
		// decodes.
		ttft := pr.ttftMet(pl, ahead, dt)
		if alone < 1 {
			ttft = alone*ttft + (1-alone)*pr.ttftMet(pl, ahead, cycle)
		}
		trace.arrivals += arrivals
		trace.ttftMet += arrivals * ttft
		r.judged += arrivals
	}

	// Decode: the decoding requests share the capacity; completions in
	// proportion to the tokens served (memoryless outputs).
	trace.tokens += capacity / max(r.active, 1)
	trace.capacity += capacity
	trace.decoding += r.active * span / dt
	served := min(r.decodeLeft, capacity)
	if exhausted {
		// Exactly what was decoding (requests admitted since go on).
		served = min(r.decodeLeft, max(capacity, decodeLeft))
	}
	if r.decodeLeft > 0 {
		completed := r.active * served / r.decodeLeft
		kvFreed := r.kvTokens * completed / max(r.active, 1e-9)
		r.active -= completed
		r.kvTokens = max(0, r.kvTokens-kvFreed)
	}
	r.decodeLeft -= served
	r.kvTokens += served
	if r.decodeLeft <= 1e-6 {
		r.decodeLeft, r.active = 0, 0
	}

	r.spend(pl, prefilled, served, leftTokens, span)
	r.t += span
}

// arrive queues a clairvoyant solve's future arrivals due by r.t and
// returns when the interval ends at the latest: end, or the next future
// arrival.
func (r *rollout) arrive(end float64) float64 {
	pr := r.pr
	for r.arrivedTo < len(pr.items) && pr.items[r.arrivedTo].arrivalS <= r.t+TimeEpsilonS {
		r.backlog += pr.items[r.arrivedTo].prompt
		r.arrivedTo++
	}
	horizon := end
	if r.arrivedTo < len(pr.items) {
		horizon = min(horizon, pr.items[r.arrivedTo].arrivalS)
	}
	return horizon
}

// firstWait is, for the first interval of a rollout (at the solve), the
// known wait for its first prefill step, and the probability that the
// followed items' prompts run back to back: the few requests decoding at
// the solve may all finish soon and end the alternation.
func (r *rollout) firstWait(pl *phaseLevel, cycle float64) (waitS, alone float64) {
	pr := r.pr
	alone = 1
	if pr.active > 0 && cycle > pr.dtS {
		if pr.alone[r.level] < 0 {
			pr.alone[r.level] = pr.aloneSoon(pl, pr.ttftS)
		}
		alone = pr.alone[r.level]
	}
	return pr.firstPrefillWaitS, alone
}

// spend adds an interval of span's energy: prefill chunks (prefilled
// prompt tokens), decode of the served tokens in the rest of prefill steps
// (at most leftTokens) and in decode steps, idle at the lowest level
// otherwise.
func (r *rollout) spend(pl *phaseLevel, prefilled, served, leftTokens, span float64) {
	fromLeft := min(served, leftTokens)
	fromFull := served - fromLeft
	prefillTime := prefilled / pl.chunk * pl.chunkTimeS
	busy := prefillTime + fromLeft/pl.leftDecodeRate + fromFull/pl.decodeRate
	r.energyJ += prefillTime*pl.prefillPowerW + fromLeft/pl.leftDecodeRate*pl.leftDecodePowerW +
		fromFull/pl.decodeRate*pl.decodePowerW + max(0, span-busy)*r.m.idleMinW
}

// admitItem admits a followed item whose first token comes at firstS, or
// with probability alone at firstAloneS, and records its TTFT outcome.
func (r *rollout) admitItem(it *item, firstS, firstAloneS, alone float64) {
	ttft := 0.0
	if firstS <= it.deadlineS+1e-9 {
		ttft = 1 - alone
	}
	if firstAloneS <= it.deadlineS+1e-9 {
		ttft += alone
	}
	var a *admission
	r.pr.admitted, a = extend(r.pr.admitted)
	a.block, a.ttftMet, a.output = r.k, ttft, it.output
	a.budgetS = math.Inf(1)
	if it.output > 0 && r.pr.e2eS > 0 {
		a.budgetS = r.pr.e2eS - (alone*firstAloneS + (1-alone)*firstS - it.arrivalS)
	}
	r.judged++
	r.active++
	output := it.output
	if output == 0 {
		output = r.pr.meanOutput
	}
	r.decodeLeft += output
	r.kvTokens += it.prompt
}

// judgeLate judges, in a clairvoyant solve, the followed items still
// queued at the end of the horizon (the solve follows its future arrivals
// one by one): each misses when even the highest level, serving the queue
// from then on, gives its first token after its deadline, and its output
// is left to decode (valued and counted as leftover by finish). Left
// unjudged, a plan that delays prefills past the horizon would hide their
// misses and their decode work, and look cheaper and better than one that
// serves them within it.
func (r *rollout) judgeLate() {
	pr := r.pr
	top := &r.m.levels.cool[r.m.levels.top]
	cycle := pr.dtS
	if r.m.plant.Scheduler == Chunked && r.active >= 0.5 {
		cycle = 2 * pr.dtS
	}
	for i := r.next; i < len(pr.items); i++ {
		it := &pr.items[i]
		first := r.t + math.Max(1, math.Ceil((it.work-r.prefilled)/top.chunk-1e-9))*cycle
		if first > it.deadlineS+1e-9 {
			r.misses++
		}
		r.judged++
		r.decodeLeft += it.output
	}
}

// judgeTPOT judges the TPOT of every request the rollout admitted, and of
// the requests decoding at the solve. A request admitted in a block
// shares its decode throughput with a processor-sharing queue of the
// block's mean length; a request decoding at the solve gets the first
// block's share. (A rollout that goes straight to the stationary regime,
// nothing being queued, leaves those out: judged at the full decode rate
// of the level, they made the plans worse in the goal table.)
func (r *rollout) judgeTPOT() {
	pr := r.pr
	dt := pr.dtS
	tpotS := r.m.slo.TPOTS
	for k := range pr.trace {
		tr := &pr.trace[k]
		if tr.arrivals > 0 {
			r.misses += tr.arrivals - tr.ttftMet*pr.tpot.sharedAt(tr.capacity/tr.steps, tr.decoding/tr.steps)
			if pr.dual {
				r.missesPlain += tr.arrivals - tr.ttftMet*pr.tpotPlain.sharedAt(tr.capacity/tr.steps, tr.decoding/tr.steps)
			}
		}
	}
	for _, a := range pr.admitted {
		tr := &pr.trace[a.block]
		var tpot float64
		if a.output > 0 {
			// Clairvoyant: the same queue, for its known output.
			tpot = tpotMetShared(a.output, tr.capacity/tr.steps, tr.decoding/tr.steps, dt, tpotS, a.budgetS, r.m.plant.MaxActive)
		} else {
			tpot = pr.tpot.sharedAt(tr.capacity/tr.steps, tr.decoding/tr.steps)
			if pr.dual {
				r.missesPlain += 1 - a.ttftMet*pr.tpotPlain.sharedAt(tr.capacity/tr.steps, tr.decoding/tr.steps)
			}
		}
		r.misses += 1 - a.ttftMet*tpot
	}
	// Those decoding at the solve needing more than their share miss
	// (needs are sorted).
	if len(pr.needs) > 0 && len(pr.trace) > 0 {
		share := pr.trace[0].tokens / pr.trace[0].steps
		needs := pr.needs
		lo, hi := 0, len(needs)
		for lo < hi {
			mid := (lo + hi) / 2
			if needs[mid] <= share {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		r.misses += float64(len(needs) - lo)
		if pr.dual {
			r.missesPlain += float64(len(needs) - lo)
		}
	}
}

// tail follows the rest of the horizon (span seconds, over which the
// thermal state decays by decay) at level in the stationary regime:
// nothing is queued, the decoding requests finish their expected outputs,
// and arrivals come at the predicted rate.
func (r *rollout) tail(level int, span, decay float64) {
	r.states++
	pl := &r.m.levels.cool[level]
	s := &r.pr.stationary[level]
	r.energyJ += s.powerW*span + r.decodeLeft*pl.decodeJ
	// The decoding requests' work above the regime's drains at its spare
	// capacity; an overloaded level falls behind.
	excess := max(0, r.decodeLeft-s.decodeLeft-s.spare*span)
	top := &r.m.levels.cool[r.m.levels.top]
	r.leftoverS = excess/top.decodeRate + s.growth*span
	r.decodeLeft = 0
	arrivals := r.pr.rate * span
	r.misses += arrivals * s.missShare
	if r.pr.dual {
		r.missesPlain += arrivals * s.missSharePlain
	}
	r.judged += arrivals
	r.tempC = s.temperatureC + (r.tempC-s.temperatureC)*decay
	r.peakTempC = max(r.peakTempC, r.tempC)
	r.t += span
}

// finish values the work the horizon leaves, at the marginal energy of the
// last level, and counts it as leftover.
func (r *rollout) finish(level int) {
	pl := &r.m.levels.cool[level]
	r.energyJ += r.backlog*pl.prefillJ + r.decodeLeft*pl.decodeJ
	top := &r.m.levels.cool[r.m.levels.top]
	r.leftoverS += r.backlog/(top.chunk/r.pr.dtS) + r.decodeLeft/top.decodeRate
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// ttftMet is the share of arrivals that meet the TTFT objective behind
// ahead queued prompt tokens, the next prefill step every cycle (one or
// two steps). With nothing ahead it depends on the level and the cycle
// alone for the prompt distribution of a solve, and is computed once.
func (pr *problem) ttftMet(pl *phaseLevel, ahead, cycle float64) float64 {
	if ahead != 0 {
		return pr.ttftMetBehind(pl, ahead, cycle)
	}
	var v *float64
	switch cycle {
	case pr.dtS:
		v = &pr.emptyTTFT[pl.slot][0]
	case 2 * pr.dtS:
		v = &pr.emptyTTFT[pl.slot][1]
	default:
		return pr.ttftMetBehind(pl, 0, cycle)
	}
	if math.IsNaN(*v) {
		*v = pr.ttftMetBehind(pl, 0, cycle)
	}
	return *v
}

// ttftMetBehind is ttftMet computed: a prompt of p tokens needs
// ceil((ahead+p) / chunk) prefill steps, one per cycle, and the first token
// comes at the end of the last, the arrival falling uniformly in a cycle.
func (pr *problem) ttftMetBehind(pl *phaseLevel, ahead, cycle float64) float64 {
	z := (pr.ttftS - pr.dtS) / cycle
	if z < 0 {
		return 0
	}
	whole := math.Floor(z)
	h := pr.prompts
	if h.n == 0 {
		return 1
	}
	full := h.cdf(whole*pl.chunk - ahead)
	part := h.cdf((whole+1)*pl.chunk-ahead) - full
	return min(1, full+(z-whole)*part)
}

// forgetEmptyTTFT empties ttftMet's cache unless the prompt distribution
// is the one it was computed for (a histogram changes only by growing).
func (pr *problem) forgetEmptyTTFT() {
	if pr.emptyTTFTFor == pr.prompts.n {
		return
	}
	pr.emptyTTFTFor = pr.prompts.n
	for i := range pr.emptyTTFT {
		pr.emptyTTFT[i] = [2]float64{math.NaN(), math.NaN()}
	}
}

// maxFew is the most decoding requests whose individual chance of
// finishing soon a solve considers.
const maxFew = 4

// fewActive is one of a few decoding requests at a solve.
type fewActive struct {
	generated float64
	left      float64 // output tokens to go if known (clairvoyant), else <= 0
}

// aloneSoon is the probability that the few requests decoding at the solve
// all finish within half the TTFT objective at level pl (0 with more than
// maxFew decoding): their output lengths are drawn from the learned
// distribution, conditioned on what each has generated.
func (pr *problem) aloneSoon(pl *phaseLevel, ttftS float64) float64 {
	if len(pr.few) == 0 {
		return 0
	}
	served := (ttftS - pr.dtS) / 2 / pr.dtS * pl.alternatingPerStep / float64(len(pr.few))
	p := 1.0
	for _, a := range pr.few {
		if a.left > 0 {
			if a.left > served {
				return 0
			}
			continue
		}
		p *= pr.outputs.finishWithin(a.generated, served)
	}
	return p
}
