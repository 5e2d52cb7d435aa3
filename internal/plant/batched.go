package plant

import (
	"math"
)

// The batched service model (ServiceBatched): iteration-level serving as
// vLLM's V1 scheduler does it. The GPU runs one engine iteration after
// another; each serves one decode token to every running request that has
// finished its prompt and fills the rest of a token budget
// (MaxNumBatchedTokens) with prefill chunks, running requests first, then
// waiting ones, oldest first, up to MaxNumSeqs running requests. An
// iteration lasts the fixed overhead plus the longer of its memory reads
// (the weights once, every scheduled request's KV) and its compute (the
// dense work of its tokens and their attention over their context), at the
// bandwidth and compute the GPU card attains, scaled to the step's clock
// level by the profile's rows: memory by the decode rate's ratio to the top
// level's, compute by the prefill rate's. An iteration's effects (its
// tokens, first tokens, completions) happen at its end; its power is the
// profile's prefill and decode powers at the realized clock, weighted by
// its compute and memory time.
//
// Iterations run in continuous time: they do not start or stop at step
// boundaries, requests join at their own arrival times, and the step grid
// only samples the state, sets the clock of the iterations that start in
// it, and heats the GPU with the energy drawn in it. So the results do not
// depend on the time step beyond what it samples.
//
// Mapping onto the plant's state: the queue (head:pending) holds the
// requests sent and not admitted, the active list the running ones
// (prefilling or decoding, vLLM's num_requests_running) in admission order,
// and preempted ones wait in front of the queue. A request's
// promptProcessed is the tokens of its KV cache.

// kvBlockTokens is the KV block size of the batched model (vLLM's
// block_size default).
const kvBlockTokens = 16

// batchEngine is the state of the batched service model of one run.
type batchEngine struct {
	svc ServiceModel
	// static, whole: the admission rule of the scheduler (static: a new
	// batch only when none runs; whole: prompts are never split).
	static, whole bool
	// recompute preempts the latest admitted request when KV runs out
	// (vLLM); otherwise a request without room waits (stalls).
	recompute bool

	weightBytes, kvBytesPerToken float64
	flopsPerToken, attentionCoef float64
	overheadS                    float64
	maxSeqs, maxTokens           int
	capacityBlocks, usedBlocks   int
	// heldBlocks are the blocks of the KV held outside the running
	// requests (Stepper.HoldKV).
	heldBlocks int

	// freeS is when the GPU finished its last iteration (it has idled
	// since, when none is in flight).
	freeS float64
	// The iteration in flight.
	inFlight              bool
	startS, endS, powerW  float64
	accountedS            float64
	hasPrefill, hasDecode bool
	// work is what the iteration in flight does.
	work iterationWork
	// scheduled lists the requests of the iteration in flight.
	scheduled []int
	// preempted are requests preempted for recomputation, waiting in
	// front of the queue (the last preempted first).
	preempted []int
	// preemptions counts the preemptions of the run.
	preemptions int
	// recomputedTokens counts the tokens prefilled again.
	recomputedTokens float64
	// iterations counts the iterations, batched the requests they served.
	iterations, batched int
	// prefilling counts the running requests still prefilling, and
	// kvTokens the running requests' KV tokens (their promptProcessed):
	// kept as they change, so that a step reads them in O(1).
	prefilling int
	kvTokens   float64
	// savedRequest and savedProgress are a request's state before its
	// prefix cache look-up (undoLookUp).
	savedRequest  engineRequest
	savedProgress requestProgress
}

// iterationWork is the work of one iteration: its token budget left, the
// KV tokens it reads and writes, its attention (tokens times context, the
// sum the attention FLOPs scale), and its tokens.
type iterationWork struct {
	budget                      int
	memoryTokens, attention     float64
	tokens                      float64
	prefillTokens, decodeTokens float64
}

// gate is the closed loop of Options.MaxConcurrency: a client with n
// slots sends a request only while fewer than n are outstanding.
type gate struct {
	n int
	// full says that n requests were outstanding at the last send or
	// since; openedS is when a completion last opened a full gate.
	full    bool
	openedS float64
	// logged, when set, keeps every completion time in times, for a
	// fleet's gate (Stepper.LogCompletions).
	logged bool
	times  []float64
	// onComplete, when set, sees every completed request's record
	// (Stepper.OnComplete).
	onComplete func(*RequestRecord)
}

// complete notes the completion of the request of record r, whose
// completion time is set.
func (g *gate) complete(r *RequestRecord) {
	timeS := r.CompletionTimeS
	if g.full {
		g.full, g.openedS = false, timeS
	}
	if g.logged {
		g.times = append(g.times, timeS)
	}
	if g.onComplete != nil {
		g.onComplete(r)
	}
}

// newBatchEngine prepares the batched model of a run on p.
func newBatchEngine(p Plant, svc ServiceModel, kind schedulerKind, recompute bool, capacity int) *batchEngine {
	m := svc.Model
	return &batchEngine{
		svc:             svc,
		static:          kind == schedulerStatic,
		whole:           kind == schedulerStatic || kind == schedulerContinuous,
		recompute:       recompute,
		weightBytes:     m.WeightGB * 1e9,
		kvBytesPerToken: m.KVBytesPerToken(),
		flopsPerToken:   m.FLOPsPerToken(),
		attentionCoef:   m.AttentionFLOPs(0, 1), // 4*L*H*d: one token after no context
		overheadS:       svc.GPU.IterationOverheadS,
		maxSeqs:         svc.MaxNumSeqs,
		maxTokens:       svc.MaxNumBatchedTokens,
		capacityBlocks:  int(math.Floor(p.KVCapacityTokens / kvBlockTokens)),
		scheduled:       make([]int, 0, min(svc.MaxNumSeqs, capacity)),
	}
}

// preemptedCount is the number of preempted requests waiting (0 without
// the batched model).
func (b *batchEngine) preemptedCount() int {
	if b == nil {
		return 0
	}
	return len(b.preempted)
}

// levelRates sets the batched model's memory bandwidth and compute at each
// level: the card's at the profile's top level, scaled by the level's
// decode and prefill rates.
func (b *batchEngine) levelRates(levels []clockLevel) {
	top := &levels[len(levels)-1]
	bandwidth := b.svc.GPU.MemoryBandwidthGBps * 1e9 * b.svc.GPU.MemoryEfficiency
	compute := b.svc.GPU.PeakTFLOPS * 1e12 * b.svc.GPU.ComputeEfficiency
	for i := range levels {
		l := &levels[i]
		l.memoryRate = bandwidth * l.decodeRate / top.decodeRate
		l.computeRate = compute * l.prefillRate / top.prefillRate
	}
}

// blocksFor is the KV blocks that tokens take.
func blocksFor(tokens float64) int { return int(math.Ceil(tokens / kvBlockTokens)) }

// The batched model's KV cache: counted in blocks of kvBlockTokens on its
// own (usedBlocks of capacityBlocks), or, with the prefix cache, the
// engine's block cache (sim.engine, its blocks of KVBlockTokens), whose
// cached blocks count as free.

// kvNeed is the blocks request i must add to hold tokens of context.
func (sim *simulation) kvNeed(i int, tokens float64) int {
	if e := sim.engine; e != nil {
		return e.blocksFor(tokens) - e.reqs[i].blocks
	}
	return blocksFor(tokens) - blocksFor(sim.progress[i].promptProcessed)
}

// kvFree is the blocks a request can take.
func (sim *simulation) kvFree() int {
	if e := sim.engine; e != nil {
		return e.cache.available()
	}
	return sim.batched.capacityBlocks - sim.batched.usedBlocks - sim.batched.heldBlocks
}

// kvTake gives request i need more blocks.
func (sim *simulation) kvTake(i, need int) {
	if e := sim.engine; e != nil {
		e.cache.allocate(need)
		e.reqs[i].blocks += need
		return
	}
	sim.batched.usedBlocks += need
}

// kvRelease gives back request i's blocks.
func (sim *simulation) kvRelease(i int) {
	if sim.engine != nil {
		sim.releaseKV(i)
		return
	}
	sim.batched.usedBlocks -= blocksFor(sim.progress[i].promptProcessed)
}

// lookUpBatched starts request i's prefill pass with the prefix cache
// (lookUp: its cached leading blocks are held and not prefilled), keeping
// what undoLookUp restores if the request is not admitted after all.
func (sim *simulation) lookUpBatched(i int) {
	e, b := sim.engine, sim.batched
	if e == nil {
		return
	}
	b.savedRequest, b.savedProgress = e.reqs[i], sim.progress[i]
	sim.lookUp(i)
}

// undoLookUp gives back what lookUpBatched took for request i.
func (sim *simulation) undoLookUp(i int) {
	e, b := sim.engine, sim.batched
	if e == nil {
		return
	}
	sim.releaseKV(i)
	e.reqs[i], sim.progress[i] = b.savedRequest, b.savedProgress
}

// batchedPhase is the phase the power governor judges a batched step by:
// prefill while any prompt waits or is being prefilled, decode while
// requests run, else idle.
func (sim *simulation) batchedPhase(endS float64) stepPhase {
	b := sim.batched
	switch {
	case sim.head < sim.pending || len(b.preempted) > 0 || b.prefilling > 0 ||
		(sim.pending < len(sim.records) && sim.records[sim.pending].ArrivalTimeS < endS):
		return phasePrefill
	case len(sim.active) > 0:
		return phaseDecode
	}
	return phaseIdle
}

// batchedIdle reports whether a batched step from the current time would
// find nothing to do: no iteration in flight, nothing running or waiting,
// and no request to send before the step's end.
func (sim *simulation) batchedIdle(endS float64) bool {
	return !sim.batched.inFlight && !(sim.pending < len(sim.records) && sim.records[sim.pending].ArrivalTimeS < endS)
}

// send moves the requests that arrive by timeS into the queue, as the
// closed loop's gate allows; a request the gate held is sent when it
// opened.
func (sim *simulation) send(timeS float64) {
	first := sim.pending
	for sim.pending < len(sim.records) && sim.records[sim.pending].ArrivalTimeS <= timeS+TimeEpsilonS {
		if g := &sim.gate; g.n > 0 {
			if sim.dropped+sim.pending-sim.completed >= g.n {
				g.full = true
				break
			}
			if r := &sim.records[sim.pending]; r.ArrivalTimeS < g.openedS {
				r.ArrivalTimeS = g.openedS
			}
		}
		sim.queuedPrompt += sim.records[sim.pending].PromptTokens
		sim.pending++
	}
	if g := &sim.gate; g.n > 0 && sim.dropped+sim.pending-sim.completed >= g.n {
		g.full = true
	}
	if sim.pending > first {
		sim.noteArrivals(first, sim.kvAtEnd)
	}
}

// serveBatched runs the batched model over the step from startS to endS at
// level: it finishes the iteration in flight, starts iterations while the
// step lasts, and returns the step's mean power and its phase.
func (sim *simulation) serveBatched(level *clockLevel, startS, endS float64) (float64, stepPhase) {
	b := sim.batched
	energy, busy := 0.0, 0.0
	prefilled, decoded := false, false
	for {
		if b.inFlight {
			until := min(b.endS, endS)
			if span := until - b.accountedS; span > 0 {
				energy += b.powerW * span
				busy += span
				b.accountedS = until
			}
			prefilled = prefilled || b.hasPrefill
			decoded = decoded || b.hasDecode
			if b.endS > endS {
				break
			}
			sim.finishIteration()
		}
		s := b.freeS
		sim.send(s)
		if len(sim.active) == 0 && sim.head == sim.pending && len(b.preempted) == 0 {
			// Nothing to serve: the next request sent starts the next
			// iteration, if it comes within the step.
			if sim.pending == len(sim.records) || sim.records[sim.pending].ArrivalTimeS >= endS {
				break
			}
			s = max(s, sim.records[sim.pending].ArrivalTimeS)
			sim.send(s)
		}
		if !sim.startIteration(level, s) {
			break // nothing can run (KV full without preemption): wait
		}
	}
	idle := max(0, (endS-startS)-busy)
	power := (energy + level.idlePower*idle) / (endS - startS)
	phase := phaseIdle
	switch {
	case prefilled && decoded:
		phase = phaseInterleaved
	case prefilled:
		phase = phasePrefill
	case decoded:
		phase = phaseDecode
	}
	return power, phase
}

// startIteration schedules an iteration starting at startS at level, as
// vLLM V1's scheduler does: the running requests first (a decode token or
// a prefill chunk each), then, unless one was preempted, waiting requests
// while the budget and MaxNumSeqs allow. It reports whether the
// iteration does any work.
func (sim *simulation) startIteration(level *clockLevel, startS float64) bool {
	b := sim.batched
	w := &b.work
	*w = iterationWork{budget: b.maxTokens}
	b.scheduled = b.scheduled[:0]
	if sim.prefilledOnly {
		sim.admitPrefilled(startS, b.maxSeqs)
	}
	preempted := false
	runningAtStart := len(sim.active)
	for k := 0; k < len(sim.active) && w.budget > 0; k++ {
		i := sim.active[k]
		pr := &sim.progress[i]
		want := 1.0
		if pr.prefillRemaining > 0 {
			want = pr.prefillRemaining
			if !b.whole {
				want = min(want, float64(w.budget))
			} else if want > float64(w.budget) && len(b.scheduled) > 0 {
				continue // a whole prompt waits for an iteration of its own
			}
		}
		need := sim.kvNeed(i, pr.promptProcessed+want)
		for need > sim.kvFree() && b.recompute && len(sim.active) > 1 {
			// Preempt the latest admitted request (perhaps this one).
			last := sim.active[len(sim.active)-1]
			sim.preemptBatched(last)
			preempted = true
			if last == i {
				break
			}
		}
		if k >= len(sim.active) || sim.active[k] != i {
			break // this request was preempted: so are all after it
		}
		if need > sim.kvFree() {
			continue // no room and no preemption: the request stalls
		}
		sim.scheduleBatched(i, need, want)
	}
	if !preempted && !(b.static && runningAtStart > 0) {
		for w.budget > 0 && len(sim.active) < b.maxSeqs {
			i, fromQueue := -1, false
			switch {
			case len(b.preempted) > 0:
				i = b.preempted[len(b.preempted)-1]
			case sim.head < sim.pending:
				i, fromQueue = sim.head, true
			}
			if i < 0 {
				break
			}
			pr := &sim.progress[i]
			sim.lookUpBatched(i)
			want := pr.prefillRemaining
			if !b.whole {
				want = min(want, float64(w.budget))
			}
			need := sim.kvNeed(i, pr.promptProcessed+want)
			if (b.whole && want > float64(w.budget) && len(b.scheduled) > 0) || need > sim.kvFree() {
				sim.undoLookUp(i)
				break
			}
			if fromQueue {
				sim.queuedPrompt -= sim.records[i].PromptTokens
				sim.head++
			} else {
				b.preempted = b.preempted[:len(b.preempted)-1]
			}
			if r := &sim.records[i]; math.IsNaN(r.PrefillStartS) {
				r.PrefillStartS = startS
			}
			sim.active = append(sim.active, i)
			b.prefilling++
			b.kvTokens += pr.promptProcessed // its prefix cache hit
			sim.scheduleBatched(i, need, want)
		}
	}
	if len(b.scheduled) == 0 {
		b.freeS = max(b.freeS, startS)
		return false
	}
	b.iterations++
	b.batched += len(b.scheduled)
	memoryS := (b.weightBytes + b.kvBytesPerToken*w.memoryTokens) / level.memoryRate
	computeS := (b.flopsPerToken*w.tokens + b.attentionCoef*w.attention) / level.computeRate
	b.inFlight = true
	b.startS, b.accountedS = startS, startS
	b.endS = startS + b.overheadS + max(memoryS, computeS)
	share := computeS / (computeS + memoryS)
	b.powerW = share*level.prefillPower + (1-share)*level.decodePower
	b.hasPrefill, b.hasDecode = w.prefillTokens > 0, w.decodeTokens > 0
	return true
}

// scheduleBatched puts want tokens of running request i, which takes need
// more KV blocks for them, into the iteration being scheduled.
func (sim *simulation) scheduleBatched(i, need int, want float64) {
	b := sim.batched
	w := &b.work
	pr := &sim.progress[i]
	sim.kvTake(i, need)
	pr.scheduled = want
	b.scheduled = append(b.scheduled, i)
	w.memoryTokens += pr.promptProcessed + want
	w.attention += want*pr.promptProcessed + want*(want+1)/2
	w.tokens += want
	w.budget -= int(want)
	if pr.prefillRemaining > 0 {
		w.prefillTokens += want
	} else {
		w.decodeTokens += want
	}
}

// preemptBatched frees request i's KV and puts it in front of the queue to be
// prefilled again, its prompt and the tokens it generated.
func (sim *simulation) preemptBatched(i int) {
	b := sim.batched
	pr := &sim.progress[i]
	sim.kvRelease(i)
	if e := sim.engine; e != nil {
		r := &e.reqs[i]
		r.lookedUp = false
		r.Preemptions++
		e.preemptions++
	}
	b.recomputedTokens += pr.promptProcessed
	b.kvTokens -= pr.promptProcessed
	if pr.prefillRemaining > 0 {
		b.prefilling--
	}
	pr.prefillRemaining = float64(sim.records[i].PromptTokens) + pr.generated
	pr.promptProcessed = 0
	pr.scheduled = 0
	b.preemptions++
	// Out of the running list, keeping admission order.
	for k, j := range sim.active {
		if j == i {
			sim.active = append(sim.active[:k], sim.active[k+1:]...)
			break
		}
	}
	b.preempted = append(b.preempted, i)
}

// finishIteration applies the iteration in flight at its end: the tokens
// it prefilled and decoded, the first tokens of the prompts it finished
// and the requests it completed.
func (sim *simulation) finishIteration() {
	b := sim.batched
	endS := b.endS
	b.inFlight = false
	b.freeS = endS
	finished := 0
	e := sim.engine
	for _, i := range b.scheduled {
		pr := &sim.progress[i]
		want := pr.scheduled
		pr.scheduled = 0
		b.kvTokens += want
		if pr.prefillRemaining > 0 {
			if e != nil {
				// Fills and registers the prompt's blocks; prefill below
				// the request's high-water mark is recomputation.
				sim.prefillServe(i, want)
				sim.chargeBatchedRecompute(endS - b.startS)
			} else {
				pr.promptProcessed += want
			}
			pr.prefillRemaining -= want
			sim.cumulativePrefill += want
			if pr.prefillRemaining > 0 {
				continue // a chunk: no token yet
			}
			b.prefilling--
		} else {
			pr.promptProcessed += want
			if e != nil {
				e.reqs[i].highWater = max(e.reqs[i].highWater, pr.promptProcessed)
			}
		}
		// A token: the first after the prompt, or one more decoded.
		pr.generated++
		sim.cumulativeDecode++
		r := &sim.records[i]
		if math.IsNaN(r.FirstTokenTimeS) {
			r.FirstTokenTimeS = endS
		}
		if pr.generated >= pr.outputTokens {
			r.CompletionTimeS = endS
			b.kvTokens -= pr.promptProcessed
			if !sim.keepKV(i, pr.promptProcessed) {
				sim.kvRelease(i)
			}
			finished++
			sim.gate.complete(r)
			if sim.observer != nil {
				sim.finished = append(sim.finished, i)
			}
		}
	}
	if finished > 0 {
		sim.dropCompleted(finished)
	}
	sim.kvAtEnd = sim.batchedOccupancy()
}

// batchedOccupancy is the KV tokens of the running requests and of the
// completed ones that keep theirs (Stepper.KeepKV).
func (sim *simulation) batchedOccupancy() float64 { return sim.batched.kvTokens + sim.keptKV }

// chargeBatchedRecompute turns the recomputation of the iteration that
// just ended, of durationS, into time: each request's share of it is its
// recomputed tokens over the iteration's prefill and decode tokens.
func (sim *simulation) chargeBatchedRecompute(durationS float64) {
	e, b := sim.engine, sim.batched
	tokens := b.work.tokens
	for _, c := range e.recompute {
		r := &e.reqs[c.request]
		t := durationS * c.tokens / tokens
		r.RecomputeS += t
		if !math.IsNaN(sim.records[c.request].FirstTokenTimeS) {
			r.RecomputeAfterFirstTokenS += t
		}
	}
	e.recompute = e.recompute[:0]
}

// shift renumbers the batched model's request indices after the first
// records were dropped (makeRoom).
func (b *batchEngine) shift(first int) {
	if b == nil {
		return
	}
	for k := range b.preempted {
		b.preempted[k] -= first
	}
	for k := range b.scheduled {
		b.scheduled[k] -= first
	}
}

// firstHeld is the lowest record index the batched model still needs.
func (b *batchEngine) firstHeld(first int) int {
	if b == nil {
		return first
	}
	for _, i := range b.preempted {
		first = min(first, i)
	}
	return first
}
