package plant

// The preemption model (EngineOptions.Preemption = recompute).
//
// The running requests are the decoding ones, in admission order, and the
// request at the front of the queue while it holds KV (in the middle of a
// prefill pass): it was admitted to the KV cache after all of them. A decode
// step gives each decoding request its share of the step's tokens in turn,
// round after round (the reference's rule). Before a request decodes its
// share it claims the KV for it: without the prefix cache the tokens, with
// it the blocks its context grows into. When they are not free (cached
// blocks count as free: they are evicted), the most recently admitted
// running request is preempted, again and again until the claim fits, and
// that may be the claiming request itself, which then decodes nothing. No
// request is preempted while it is the only running request (so one request
// alone never preempts itself in a loop, the livelock of BLIS issue #963):
// it decodes what fits, or stalls, and a request that can never fit stays
// unfinished when the run ends.
//
// A preempted request gives back all its KV and returns to the head of the
// prefill queue, ahead of the requests that never started (the last
// preempted first, as vLLM prepends them); the front request keeps its
// place. Its next prefill pass must process its prompt plus the tokens it
// had generated (minus what the prefix cache still holds) before it decodes
// again. Its first-token time stays that of its first token; its later
// tokens wait for the recomputation. RecomputedTokens counts the prefill
// work on positions it had held before, RecomputeS the time of that work.
//
// Prefill never preempts: a request waits at the front of the queue until
// the KV it needs (with the decode reserve) is free, as in the reference.

// running is the number of running requests during a decode round.
func (sim *simulation) running() int {
	n := sim.engine.unfinished
	if sim.holder() >= 0 {
		n++
	}
	return n
}

// victim returns the most recently admitted running request and its
// position in active (-1 for the front of the queue).
func (sim *simulation) victim() (request, position int) {
	if h := sim.holder(); h >= 0 {
		return h, -1
	}
	for p := len(sim.active) - 1; p >= 0; p-- {
		if i := sim.active[p]; !sim.records[i].Completed() {
			return i, p
		}
	}
	return -1, -1
}

// preempt preempts request i, at position in active (-1: the front of the
// queue): it gives back its KV and must prefill its prompt and the tokens
// it generated again.
func (sim *simulation) preempt(i, position int) {
	e := sim.engine
	sim.releaseKV(i)
	item := &sim.progress[i]
	item.promptProcessed = 0
	item.prefillRemaining = float64(sim.records[i].PromptTokens) + item.generated
	r := &e.reqs[i]
	r.decoded = 0
	r.lookedUp = false
	r.Preemptions++
	e.preemptions++
	if position < 0 {
		return // the front of the queue stays there
	}
	copy(sim.active[position:], sim.active[position+1:])
	sim.active = sim.active[:len(sim.active)-1]
	e.unfinished--
	e.waiting = append(e.waiting, i)
}

// claimDecode gets the KV for served tokens of the active request at
// position k, preempting as the policy says when it is not free, and
// returns the tokens it may decode: served, what fits, or 0 when it was
// preempted itself.
func (sim *simulation) claimDecode(k int, served float64) float64 {
	e := sim.engine
	i := sim.active[k]
	for e.preemption && !sim.fits(i, served) && sim.running() > 1 {
		v, position := sim.victim()
		sim.preempt(v, position)
		if v == i {
			return 0
		}
	}
	if e.cache == nil {
		served = pyMin(served, pyMax(0, e.capacityTokens-e.used))
		e.used += served
		return served
	}
	r := &e.reqs[i]
	if !sim.fits(i, served) {
		served = pyMax(0, float64(r.blocks+e.cache.available())*e.blockTokens-sim.kvTokens(i))
	}
	need := sim.newBlocks(i, served)
	e.cache.allocate(need)
	r.blocks += need
	return served
}

// fits reports whether request i can decode served more tokens in the KV
// that is free.
func (sim *simulation) fits(i int, served float64) bool {
	e := sim.engine
	if e.cache == nil {
		return served <= e.capacityTokens-e.used
	}
	return sim.newBlocks(i, served) <= e.cache.available()
}

// newBlocks is the blocks request i needs to decode served more tokens,
// computed as its KV will be after decoding them.
func (sim *simulation) newBlocks(i int, served float64) int {
	r := &sim.engine.reqs[i]
	return sim.engine.blocksFor(sim.progress[i].promptProcessed+(r.decoded+served)) - r.blocks
}
