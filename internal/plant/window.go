package plant

import (
	"math"
	"slices"
)

// makeRoom makes room for one more record in a run that keeps no records
// (Options.Summary) when the records held fill their arrays: it drops the
// records of the completed requests at the front (those before the queue
// head and before every decoding request), after adding them to the
// request statistics, when they are at least a quarter of the records
// held, and otherwise grows the arrays (by half, at least compactWindow
// records at once, but below compactWindow by no more than the requests
// still expected, or doubling when those are unknown; or, once that comes close
// to the requests still expected, to hold them all). The records held are
// then at most twice those from the oldest request in flight to the
// newest, and each record is moved at most three times on average. The indices of
// the queue and of the decoding requests shift with the records.
func (sim *simulation) makeRoom() {
	first := sim.head
	for _, i := range sim.active {
		first = min(first, i)
	}
	first = sim.batched.firstHeld(first)
	if n := len(sim.records); first == 0 || 4*first < n {
		// By half, at least compactWindow at once; below compactWindow
		// records held, no more room than the requests still expected
		// need (a replica of a large fleet may see only a handful), or,
		// when they are not known, doubling.
		rest := sim.expected - sim.dropped - n
		grow := max(n/2, compactWindow)
		if n < compactWindow {
			grow = min(compactWindow, max(n, 16, rest))
		}
		if rest > 0 && n+grow > rest/2 {
			// Close to the requests still expected: room for them all,
			// rather than one more step on the way.
			grow = max(grow, rest)
		}
		sim.records = slices.Grow(sim.records, grow)
		sim.progress = slices.Grow(sim.progress, grow)
		return
	}
	judge := &sim.requests.judge
	for i := range first {
		sim.requests.add(&sim.records[i], judge.TTFTSeconds, judge.TPOTSeconds)
	}
	sim.hand(sim.records[:first])
	sim.records = sim.records[:copy(sim.records, sim.records[first:])]
	sim.progress = sim.progress[:copy(sim.progress, sim.progress[first:])]
	sim.head -= first
	sim.pending -= first
	for j := range sim.active {
		sim.active[j] -= first
	}
	sim.batched.shift(first)
	sim.dropped += first
}

// drain adds the requests that never arrived within the run (it ended at
// MaxSimulationTimeS first): as records, or, in a run that drops its
// records, to the request statistics after the records held. Simulate
// calls it after the last step.
func (sim *simulation) drain() error {
	if sim.compacting {
		sim.flush()
	}
	for !math.IsInf(sim.upcomingS, 1) {
		sim.add(sim.upcoming)
		if err := sim.fetch(); err != nil {
			return err
		}
		if sim.compacting && len(sim.records) >= compactWindow {
			sim.flush()
		}
	}
	if sim.compacting {
		sim.flush()
	}
	return nil
}

// flush adds every record held to the request statistics and drops it:
// the end of a run that keeps no records.
func (sim *simulation) flush() {
	sim.requests.addAll(sim.records)
	sim.hand(sim.records)
	sim.dropped += len(sim.records)
	sim.records, sim.progress = sim.records[:0], sim.progress[:0]
	sim.head, sim.pending, sim.active = 0, 0, sim.active[:0]
}
