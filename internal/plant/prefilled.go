package plant

import (
	"errors"
	"fmt"
)

// Disaggregated serving (a fleet's prefill and decode pools) needs two
// things of a replica that a mixed one never does:
//
//   - a decode replica admits requests whose prompt was prefilled, and whose
//     first token was produced, on another GPU (AddPrefilled): their KV
//     cache arrives whole at their arrival time, so they are never
//     prefilled here; each joins the running requests at the first step
//     (reference model) or engine iteration (batched model) that has a
//     free running slot after its arrival, and decodes from its second
//     token on;
//   - KV held outside the running requests (HoldKV): a prefill replica's
//     finished requests whose KV has not been sent yet, and a decode
//     replica's transfers under way to it. Held KV counts against the
//     capacity (the free room of prefill and decode) but not in the
//     occupancy the trajectory and the metrics report.
//
//   - with the prefix cache, a prefill replica's request whose KV is to be
//     sent keeps its blocks when it completes (KeepKV), until the fleet
//     has sent them (ReleaseKeptKV), as vLLM's prefill instance frees a
//     request's blocks only once its KV connector has sent them: they stay
//     live blocks of the cache (its prefix's blocks are held, not
//     evictable, and found by other requests' look-ups), counted against
//     the capacity and, unlike held KV, in the occupancy (the block
//     cache's live blocks under the reference model, the running and
//     keeping requests' tokens under the batched one). Released, its
//     prefix's blocks are cached as any completed request's.
//
// With none used, a run is exactly what it was: the held KV is +0 and is
// subtracted from the capacity where the room is computed (C - 0 = C), and
// the kept KV is +0 and added to the batched model's occupancy.

// PrefilledKVTokens is the KV cache a request of promptTokens holds once
// its prompt is prefilled and its first token produced, in the service
// model svc: the prompt under the batched model (the first token's KV is
// written by the next iteration, on the decode replica), the prompt and
// the first token under the reference model (whose KV counts every token
// generated).
func PrefilledKVTokens(svc ServiceModel, promptTokens int) float64 {
	if svc.Batched() {
		return float64(promptTokens)
	}
	return float64(promptTokens) + 1
}

// AddPrefilled appends request r, whose prompt was prefilled and first
// token produced elsewhere (a disaggregated fleet's prefill replica): its
// KV cache (PrefilledKVTokens) arrives at r.ArrivalTimeS, which must be
// after the start of the last step simulated and no earlier than the
// requests added before it. Its record here has its arrival and first
// token at r.ArrivalTimeS, its prefill start when it joins the running
// requests, and its completion when its last token is decoded. Its KV is
// held (HoldKV) from now until it joins them. r must have at least two
// output tokens; a stepper takes either Add's requests or AddPrefilled's,
// and AddPrefilled needs the engine features off (a prefix cache or the
// reference model's preemption keep per-request state of their own).
func (st *Stepper) AddPrefilled(r Request) error {
	sim := st.sim
	if err := r.Validate(); err != nil {
		return fmt.Errorf("request %d: %w", r.ID, err)
	}
	switch {
	case r.OutputTokens < 2:
		return fmt.Errorf("request %d: a prefilled request has a token left to decode: expected at least 2 output tokens, got %d", r.ID, r.OutputTokens)
	case sim.engine != nil:
		return errors.New("a replica with the prefix cache or the reference model's preemption cannot take prefilled requests")
	case len(sim.records) > 0 && !sim.prefilledOnly:
		return errors.New("a replica takes either requests to prefill or prefilled ones, not both")
	}
	if n := len(sim.records); n > 0 && r.ArrivalTimeS < sim.records[n-1].ArrivalTimeS {
		return errors.New("workload must be sorted by arrival_time_s")
	}
	if r.ArrivalTimeS <= st.lastStartS+TimeEpsilonS {
		return fmt.Errorf("request %d arrives at %v s, before the next step of the run (%v s)", r.ID, r.ArrivalTimeS, sim.timeS)
	}
	sim.prefilledOnly = true
	sim.add(r)
	sim.records[len(sim.records)-1].FirstTokenTimeS = r.ArrivalTimeS
	sim.progress[len(sim.progress)-1].prefillRemaining = 0
	st.HoldKV(PrefilledKVTokens(st.opt.Service, r.PromptTokens))
	if st.sum != nil {
		st.sum.Add(r)
	}
	st.marked = false
	return nil
}

// HoldKV holds tokens of KV cache outside the running requests (see
// AddPrefilled): the free room shrinks by them (under the batched model by
// the blocks they fill) until ReleaseKV gives them back. tokens are whole.
// Not with the prefix cache, whose room is its blocks (KeepKV keeps a
// request's).
func (st *Stepper) HoldKV(tokens float64) {
	st.sim.heldKV += tokens
	if b := st.sim.batched; b != nil {
		b.heldBlocks += blocksFor(tokens)
	}
}

// ReleaseKV gives back tokens that HoldKV held, at the next step's start.
func (st *Stepper) ReleaseKV(tokens float64) {
	st.sim.heldKV -= tokens
	if b := st.sim.batched; b != nil {
		b.heldBlocks -= blocksFor(tokens)
	}
	st.sim.roomFreed()
}

// roomFreed notes KV room given back between steps, at the next step's
// start: under the batched model a GPU that stalled for room starts its
// next iteration no earlier (not at the stall, in the past).
func (sim *simulation) roomFreed() {
	if b := sim.batched; b != nil && !b.inFlight {
		b.freeS = max(b.freeS, sim.timeS)
	}
}

// HeldKV is the KV held outside the running requests, tokens.
func (st *Stepper) HeldKV() float64 { return st.sim.heldKV }

// FreeKV is the KV room left for more requests: the capacity less the
// running requests' KV and the held KV (under the batched model, whole
// free blocks; with the prefix cache, the blocks free or cached, which the
// kept KV does not leave), tokens.
func (st *Stepper) FreeKV() float64 {
	sim := st.sim
	if e := sim.engine; e != nil && e.cache != nil {
		return float64(e.cache.available()) * e.blockTokens
	}
	if b := sim.batched; b != nil {
		return float64(b.capacityBlocks-b.usedBlocks-b.heldBlocks) * kvBlockTokens
	}
	return sim.plant.KVCapacityTokens - sim.heldKV - sim.occupancy()
}

// KeepKV makes request local (an index into Records, added by Add and not
// completed) keep its KV cache when it completes, until ReleaseKeptKV
// (see above). It needs the prefix cache.
func (st *Stepper) KeepKV(local int) error {
	sim := st.sim
	switch {
	case sim.engine == nil || sim.engine.cache == nil:
		return errors.New("a replica keeps a completed request's KV only with the prefix cache")
	case local < 0 || local >= len(sim.engine.reqs):
		return fmt.Errorf("request %d of %d: no such request", local, len(sim.engine.reqs))
	case sim.records[local].Completed():
		return fmt.Errorf("request %d completed already", sim.records[local].RequestID)
	}
	sim.engine.reqs[local].keep = true
	return nil
}

// keepKV reports whether request i, completing with tokens of KV, keeps
// it (KeepKV): it is then counted as kept.
func (sim *simulation) keepKV(i int, tokens float64) bool {
	e := sim.engine
	if e == nil || !e.reqs[i].keep {
		return false
	}
	e.reqs[i].kept = true
	sim.keptKV += tokens
	return true
}

// ReleaseKeptKV gives back the KV of request local, which KeepKV made keep
// it, once it has completed (nothing before), at the next step's start.
func (st *Stepper) ReleaseKeptKV(local int) {
	sim := st.sim
	r := &sim.engine.reqs[local]
	if !r.kept {
		return
	}
	r.keep, r.kept = false, false
	if sim.batched != nil {
		sim.keptKV -= sim.progress[local].promptProcessed
	} else {
		sim.keptKV -= sim.kvTokens(local)
	}
	sim.releaseKV(local)
	sim.roomFreed()
}

// KeptKV is the KV of the completed requests that keep theirs (KeepKV),
// tokens.
func (st *Stepper) KeptKV() float64 { return st.sim.keptKV }

// admitPrefilled moves the prefilled requests that have arrived (the
// queue) into the running ones at timeS, oldest first, while fewer than
// limit run: their held KV becomes theirs.
func (sim *simulation) admitPrefilled(timeS float64, limit int) {
	for sim.head < sim.pending && len(sim.active) < limit {
		i := sim.head
		r := &sim.records[i]
		pr := &sim.progress[i]
		kv := float64(r.PromptTokens)
		pr.promptProcessed = kv
		pr.generated = 1
		if b := sim.batched; b != nil {
			sim.heldKV -= kv
			b.heldBlocks -= blocksFor(kv)
			b.usedBlocks += blocksFor(kv)
			b.kvTokens += kv
		} else {
			sim.heldKV -= kv + 1
		}
		r.PrefillStartS = timeS
		sim.queuedPrompt -= r.PromptTokens
		sim.active = append(sim.active, i)
		sim.head++
	}
}
