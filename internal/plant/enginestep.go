package plant

import "math"

// enginePrefill is servePrefill with the engine features on: the same
// steps and arithmetic, but the queue starts with the preempted requests
// waiting, each prefill pass starts with a prefix-cache lookup, and the KV
// room is counted as the engine counts it (prefillRoom).
func (sim *simulation) enginePrefill(budget float64) float64 {
	i, ok := sim.front()
	if !ok || budget <= 0 {
		return 0
	}
	p := &sim.plant
	remaining := budget
	total := 0.0
	for ok && remaining > 1e-10 {
		item := &sim.progress[i]
		if record := &sim.records[i]; math.IsNaN(record.PrefillStartS) {
			record.PrefillStartS = sim.timeS
		}
		sim.lookUp(i)
		reserved := float64(len(sim.active)+1) * p.DecodeKVReserveTokensPerActive
		freeKV := pyMax(0, sim.prefillRoom(i)-reserved)
		local := remaining
		if len(sim.active) >= p.MaxActiveRequests && item.prefillRemaining <= local {
			local = pyMax(0, item.prefillRemaining-1e-9)
		}
		served := pyMin(pyMin(local, item.prefillRemaining), freeKV)
		if served <= TokenEpsilon {
			break
		}
		item.prefillRemaining -= served
		sim.prefillServe(i, served)
		total += served
		remaining -= served
		if !(item.prefillRemaining <= 1e-8 && len(sim.active) < p.MaxActiveRequests) {
			break
		}
		item.prefillRemaining = 0
		sim.popFront()
		sim.active = append(sim.active, i)
		i, ok = sim.front()
	}
	return total
}

// engineDecode is serveDecode with the engine features on: the same
// rounds of equal shares, but each request claims the KV for its share
// before decoding it (claimDecode, which may preempt), and a request that
// completes gives its KV back at once.
func (sim *simulation) engineDecode(budget, endS float64) float64 {
	if len(sim.active) == 0 || budget <= 0 {
		return 0
	}
	e := sim.engine
	e.unfinished = len(sim.active)
	if e.cache == nil {
		e.used = sim.engineOccupancy()
	}
	remaining := budget
	total := 0.0
	for remaining > 1e-10 && len(sim.active) > 0 {
		share := remaining / float64(len(sim.active))
		progress := 0.0
		finished := 0
		for k := 0; k < len(sim.active); k++ {
			i := sim.active[k]
			item := &sim.progress[i]
			served := pyMin(share, item.outputTokens-item.generated)
			if served <= 0 {
				continue
			}
			if served = sim.claimDecode(k, served); served <= 0 {
				continue
			}
			record := &sim.records[i]
			if math.IsNaN(record.FirstTokenTimeS) {
				record.FirstTokenTimeS = endS
			}
			item.generated += served
			r := &e.reqs[i]
			r.decoded += served
			r.highWater = pyMax(r.highWater, sim.kvTokens(i))
			total += served
			remaining -= served
			progress += served
			if item.generated >= item.outputTokens-1e-8 {
				item.generated = item.outputTokens
				record.CompletionTimeS = endS
				sim.gate.complete(record)
				finished++
				if sim.observer != nil {
					sim.finished = append(sim.finished, i)
				}
				e.unfinished--
				if !sim.keepKV(i, sim.kvTokens(i)) {
					sim.releaseKV(i)
				}
			}
		}
		if finished > 0 {
			sim.dropCompleted(finished)
		}
		if progress <= TokenEpsilon {
			break
		}
	}
	return total
}
