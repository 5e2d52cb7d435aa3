package fleet

import (
	"math"

	"servesim/internal/plant"
)

// routerQueue is what an elastic fleet's router holds of the arrivals:
// the requests that have arrived and not been routed yet (they wait at the
// router while no replica is ready), in arrival order, and the arrival
// times of those that arrived within the last metrics window (the arrival
// rate the autoscalers see). It takes the requests from the workload as
// the fleet's grid reaches them, so that a streamed run holds only these.
type routerQueue struct {
	src arrivals
	// waiting holds the requests waiting at the router; the first is the
	// workload's request routed, the next ones follow it.
	waiting fifo[plant.Request]
	routed  int
	// recent holds the arrival times after the metrics window's start,
	// up to the last arrival taken.
	recent fifo[float64]
	// taken is the number of requests taken from src.
	taken int
	// onTake, when set, sees each request taken: its workload index and
	// arrival time (by value: a pointer to the request would move it to
	// the heap at every call of arrive).
	onTake func(i int, arrivalS float64)
}

// arrive takes the requests arriving by untilS from the workload.
func (q *routerQueue) arrive(untilS float64) {
	for {
		r, ok := q.src.peek()
		if !ok || r.ArrivalTimeS > untilS {
			return
		}
		q.src.take()
		if q.onTake != nil {
			q.onTake(q.taken, r.ArrivalTimeS)
		}
		q.taken++
		q.waiting.push(r)
		q.recent.push(r.ArrivalTimeS)
	}
}

// len is the number of requests waiting at the router.
func (q *routerQueue) len() int { return q.waiting.len() }

// front returns the first request waiting and its workload index; there
// must be one.
func (q *routerQueue) front() (plant.Request, int) { return q.waiting.front(), q.routed }

// pop removes the first request waiting.
func (q *routerQueue) pop() {
	q.waiting.pop()
	q.routed++
}

// more reports whether a request waits at the router or is still to
// arrive.
func (q *routerQueue) more() bool {
	if q.len() > 0 {
		return true
	}
	_, ok := q.src.peek()
	return ok
}

// arrivedSince is the number of requests taken that arrived after fromS
// (the start of a metrics window that only moves forward).
func (q *routerQueue) arrivedSince(fromS float64) int {
	for q.recent.len() > 0 && q.recent.front() <= fromS {
		q.recent.pop()
	}
	return q.recent.len()
}

// windowCounts are, per scale interval, the requests that arrived in it,
// and of those the ones completed and the ones that met their objectives,
// counted as the requests arrive and complete.
type windowCounts struct {
	intervalS                float64
	arrivals, completed, met []int
}

// at returns the index of the interval of arrival time t, grown to hold it.
func (c *windowCounts) at(t float64) int {
	w := max(0, int(t/c.intervalS))
	for len(c.arrivals) <= w {
		c.arrivals = append(c.arrivals, 0)
		c.completed = append(c.completed, 0)
		c.met = append(c.met, 0)
	}
	return w
}

// arrive counts a request arriving at t.
func (c *windowCounts) arrive(t float64) { c.arrivals[c.at(t)]++ }

// complete counts the completion of the request of record r, met or not.
func (c *windowCounts) complete(r *plant.RequestRecord, met bool) {
	w := c.at(r.ArrivalTimeS)
	c.completed[w]++
	if met {
		c.met[w]++
	}
}

// fold returns the counts of n intervals: those of later intervals (the
// requests that arrived after the run) count in the last one.
func (c *windowCounts) fold(n int) (arrivals, completed, met []int) {
	arrivals, completed, met = make([]int, n), make([]int, n), make([]int, n)
	if n == 0 {
		return
	}
	for w := range c.arrivals {
		i := min(w, n-1)
		arrivals[i] += c.arrivals[w]
		completed[i] += c.completed[w]
		met[i] += c.met[w]
	}
	return
}

// unroutedRecord is the record of a request an elastic fleet never routed
// (no replica was ready by the end of the run): unfinished.
func unroutedRecord(r *plant.Request) plant.RequestRecord {
	return plant.RequestRecord{RequestID: r.ID, ArrivalTimeS: r.ArrivalTimeS, PrefillStartS: math.NaN(),
		FirstTokenTimeS: math.NaN(), CompletionTimeS: math.NaN(), PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens}
}
