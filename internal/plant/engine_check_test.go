package plant

import (
	"fmt"
	"math"
)

// checkEngine verifies the engine's invariants on sim between two steps and
// returns the first violation:
//   - every request that has arrived is in exactly one place: the queue,
//     the preempted requests waiting, decoding, or completed, and the
//     completed count is the number of completion times set;
//   - only the front of the queue holds KV;
//   - the KV in use never exceeds the capacity: in blocks with the prefix
//     cache (live + cached <= capacity, exactly), else in tokens;
//   - with the prefix cache, the block counts agree with the requests: live
//     is their private blocks plus the entries they hold, each entry's
//     holders are the requests referencing it, cached is the length of the
//     LRU list and the entries nobody holds, and the index finds every
//     entry.
func checkEngine(sim *simulation) error {
	e := sim.engine
	place := make([]string, len(sim.records))
	set := func(i int, where string) error {
		if place[i] != "" {
			return fmt.Errorf("request %d is both %s and %s", i, place[i], where)
		}
		place[i] = where
		return nil
	}
	for i := sim.head; i < sim.pending; i++ {
		if err := set(i, "queued"); err != nil {
			return err
		}
	}
	for _, i := range e.waiting {
		if err := set(i, "waiting"); err != nil {
			return err
		}
	}
	for _, i := range sim.active {
		if err := set(i, "active"); err != nil {
			return err
		}
	}
	completed := 0
	for i := range sim.records {
		if sim.records[i].Completed() {
			completed++
			if err := set(i, "completed"); err != nil {
				return err
			}
		}
		if i < sim.pending && place[i] == "" {
			return fmt.Errorf("request %d arrived and is nowhere", i)
		}
		if i >= sim.pending && place[i] != "" {
			return fmt.Errorf("request %d has not arrived and is %s", i, place[i])
		}
	}
	if completed != sim.completed {
		return fmt.Errorf("%d completion times set, completed count %d", completed, sim.completed)
	}
	// Controllers see every queued request, preempted ones included.
	obs := sim.observe()
	queued, remaining := 0, 0.0
	for i := range sim.records {
		if place[i] == "queued" || place[i] == "waiting" {
			queued++
			remaining += sim.progress[i].prefillRemaining
		}
	}
	if obs.PrefillQueue != queued || math.Abs(obs.PrefillRemainingTokens-remaining) > 1e-6*math.Max(1, remaining) {
		return fmt.Errorf("observation: %d queued with %v tokens to prefill, want %d with %v", obs.PrefillQueue, obs.PrefillRemainingTokens, queued, remaining)
	}
	front, _ := sim.front()
	for i := range sim.records {
		holds := sim.progress[i].promptProcessed > 0 || e.reqs[i].decoded > 0 || e.reqs[i].blocks > 0
		if holds && place[i] != "active" && place[i] != "completed" && i != front {
			return fmt.Errorf("request %d (%s) holds KV and is not the front of the queue", i, place[i])
		}
	}
	if e.cache == nil {
		if kv := sim.occupancy(); kv > e.capacityTokens+1e-6 {
			return fmt.Errorf("KV %v tokens over the capacity %v", kv, e.capacityTokens)
		}
		return nil
	}
	return checkBlocks(sim)
}

// checkBlocks verifies the block accounting of the prefix cache.
func checkBlocks(sim *simulation) error {
	e := sim.engine
	c := e.cache
	if c.live+c.cached > c.capacity || c.live < 0 || c.cached < 0 {
		return fmt.Errorf("live %d + cached %d blocks: capacity %d", c.live, c.cached, c.capacity)
	}
	holders := make([]int32, len(c.entries))
	private := 0
	for i := range e.reqs {
		r := &e.reqs[i]
		if r.hashed > r.blocks {
			return fmt.Errorf("request %d: %d hashed of %d blocks", i, r.hashed, r.blocks)
		}
		if want := e.blocksFor(sim.kvTokens(i)); r.blocks != want && !sim.records[i].Completed() {
			return fmt.Errorf("request %d holds %d blocks for %v tokens, want %d", i, r.blocks, sim.kvTokens(i), want)
		}
		if want := min(sim.hashable(i), e.fullBlocks(sim.progress[i].promptProcessed)); r.blocks > 0 && r.hashed != want {
			return fmt.Errorf("request %d: %d hashed blocks, %d whole hashable blocks prefilled", i, r.hashed, want)
		}
		private += r.blocks - r.hashed
		for j := range r.hashed {
			entry := c.find(sim.blockKey(i, j))
			if entry < 0 {
				return fmt.Errorf("request %d: hashed block %d is not in the index", i, j)
			}
			holders[entry]++
		}
	}
	held, unheld := 0, 0
	for idx := range c.entries {
		entry := &c.entries[idx]
		if entry.refs != holders[idx] {
			return fmt.Errorf("entry %d: %d holders counted, %d referencing", idx, entry.refs, holders[idx])
		}
	}
	for s, v := range c.slots {
		if v == 0 {
			continue
		}
		e := int32(uint32(v)) - 1
		entry := &c.entries[e]
		if c.find(entry.key) != e {
			return fmt.Errorf("slot %d: entry %d not found by its key", s, e)
		}
		if entry.refs > 0 {
			held++
		} else {
			unheld++
		}
	}
	if c.live != private+held {
		return fmt.Errorf("live %d blocks, want %d private + %d held", c.live, private, held)
	}
	lru := 0
	for e, prev := c.lruHead, int32(-1); e >= 0; prev, e = e, c.entries[e].next {
		if c.entries[e].prev != prev || c.entries[e].refs != 0 {
			return fmt.Errorf("LRU entry %d: prev %d refs %d", e, c.entries[e].prev, c.entries[e].refs)
		}
		lru++
		if lru > c.capacity {
			return fmt.Errorf("LRU list loops")
		}
	}
	if c.cached != unheld || c.cached != lru {
		return fmt.Errorf("cached %d blocks, %d unheld entries, %d on the LRU list", c.cached, unheld, lru)
	}
	return nil
}

// checkTokens verifies the token balance of a finished run: every
// request's prefill and decode work is its prompt and output tokens, less
// its cached tokens, plus its recomputed tokens. The plant counts work in
// total only, so the balance is checked over all requests: exactly when
// every request completed, else between the completed requests' sum and
// the bound of all.
func checkTokens(sim *simulation) error {
	completedNeed, allNeed := 0.0, 0.0
	allDone := true
	for i := range sim.records {
		r := &sim.records[i]
		er := &sim.engine.reqs[i]
		need := float64(r.PromptTokens+r.OutputTokens) - er.PrefixCachedTokens + er.RecomputedTokens
		allNeed += need
		if r.Completed() {
			completedNeed += need
		} else {
			allDone = false
		}
	}
	served := sim.cumulativePrefill + sim.cumulativeDecode
	tol := 1e-6 * math.Max(1, allNeed)
	if allDone && math.Abs(served-completedNeed) > tol {
		return fmt.Errorf("served %v tokens, the requests needed %v", served, completedNeed)
	}
	if served < completedNeed-tol || served > allNeed+tol {
		return fmt.Errorf("served %v tokens: completed requests needed %v, all at most %v", served, completedNeed, allNeed)
	}
	return nil
}
