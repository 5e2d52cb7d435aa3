package fleet

import (
	"iter"
	"math"
	"slices"
	"sync"

	"servesim/internal/plant"
)

// samples holds what the request metrics of a streamed run need of its
// requests: at each request's place in the workload, the TTFT, TPOT and
// latency of a completed request (NaN for the others) and the replica that
// served it, 26 bytes a request. The fleet's metrics take every request's;
// each replica's take those of its own requests (replicaSamples), which
// its Stepper does not keep (plant.Stepper.LendSamples). The router grows
// the samples and notes the replica before handing each request on; the
// replicas write the rest, from their goroutines, as their records become
// final.
type samples struct {
	mu                  sync.RWMutex // held to write by grow, to read the slices by sampleWriter.flush
	ttft, tpot, latency []float64    // len == cap; only grow changes them
	replica             []uint16     // len == cap; only grow changes it
	// lent holds the samples lent to one replica's Stepper at a time
	// (replicaSamples).
	lent struct{ ttft, tpot, latency []float64 }
	// grouped is the requests by replica, for replicaSamples.
	grouped byReplica
	// ttftOnly keeps the TTFT alone, 8 bytes a request, for a run judged
	// by its attainment and TTFT percentiles (Config.TTFTOnly): the
	// fleet's TPOT and latency metrics are then NaN, and so are the
	// replicas' request metrics.
	ttftOnly bool
}

// The replica index of a request fits a uint16.
var _ [math.MaxUint16 + 1 - MaxReplicas]struct{}

// grow makes room for request i. Only the router calls it, so that it may
// read the slices' lengths without the lock.
func (s *samples) grow(i int) {
	if i < len(s.ttft) {
		return
	}
	more := max(i+1-len(s.ttft), len(s.ttft)/2, 1<<12)
	s.mu.Lock()
	s.ttft = extend(s.ttft, more)
	if !s.ttftOnly {
		s.tpot = extend(s.tpot, more)
		s.latency = extend(s.latency, more)
		s.replica = extend(s.replica, more)
	}
	s.mu.Unlock()
}

// route notes that request i, for which grow has made room, goes to
// replica k. Only the router calls it.
func (s *samples) route(i, k int) {
	if !s.ttftOnly {
		s.replica[i] = uint16(k)
	}
}

// extend grows v by more elements, to its full capacity.
func extend[T any](v []T, more int) []T {
	v = slices.Grow(v, more)
	return v[:cap(v)]
}

// replicaSamples returns the TTFT, TPOT and latency of replica k's (of
// replicas) completed requests among the first n, in workload order (the
// order the replica was given them): what its Stepper would have kept. It
// reuses the slices it returned last, and must be called once every
// replica has stepped to its end, by one goroutine, with the same n each
// time.
func (s *samples) replicaSamples(k, n, replicas int) (ttft, tpot, latency []float64) {
	if s.ttftOnly {
		return nil, nil, nil
	}
	mine := s.requestsOf(k, n, replicas)
	kept := 0
	for i := range mine {
		if !math.IsNaN(s.latency[i]) {
			kept++
		}
	}
	l := &s.lent
	if cap(l.ttft) < kept {
		// Room for the next replicas too, which are about as many.
		room := kept + kept/8
		l.ttft, l.tpot, l.latency = make([]float64, room), make([]float64, room), make([]float64, room)
	}
	l.ttft, l.tpot, l.latency = l.ttft[:kept], l.tpot[:kept], l.latency[:kept]
	j := 0
	for i := range mine {
		if !math.IsNaN(s.latency[i]) {
			l.ttft[j], l.tpot[j], l.latency[j] = s.ttft[i], s.tpot[i], s.latency[i]
			j++
		}
	}
	return l.ttft, l.tpot, l.latency
}

// scannedReplicas is the most replicas whose requests replicaSamples finds
// by reading the replica index of every request (2 bytes each) for each
// replica; with more, it groups the requests by replica once (4 bytes a
// request), so that all its calls cost O(requests + replicas), not
// O(requests x replicas).
const scannedReplicas = 32

// requestsOf yields the indices of replica k's requests among the first
// n, in workload order.
func (s *samples) requestsOf(k, n, replicas int) iter.Seq[int] {
	if replicas <= scannedReplicas {
		return func(yield func(int) bool) {
			for i, r := range s.replica[:n] {
				if int(r) == k && !yield(i) {
					return
				}
			}
		}
	}
	g := &s.grouped
	if g.order == nil {
		g.group(s.replica[:n], replicas)
	}
	return func(yield func(int) bool) {
		for _, i := range g.order[g.start[k]:g.start[k+1]] {
			if !yield(int(i)) {
				return
			}
		}
	}
}

// byReplica is the requests of a run grouped by replica: replica k's are
// order[start[k]:start[k+1]], in workload order. An index is 4 bytes: a run
// of 2^32 requests would need 112 GB for its samples alone.
type byReplica struct {
	order []uint32
	start []int
}

// group sorts the requests by replica (a stable counting sort of their
// indices), replica[i] being request i's, of replicas.
func (g *byReplica) group(replica []uint16, replicas int) {
	g.start = make([]int, replicas+1)
	for _, r := range replica {
		g.start[int(r)+1]++
	}
	for k := 1; k <= replicas; k++ {
		g.start[k] += g.start[k-1]
	}
	g.order = make([]uint32, len(replica))
	next := slices.Clone(g.start[:replicas])
	for i, r := range replica {
		g.order[next[r]] = uint32(i)
		next[r]++
	}
}

// metrics is the fleet's request metrics and slo block (naming targets,
// over durationS) over its first n requests, counted by tally: the
// completed requests' samples, in workload order. It reorders the samples.
func (s *samples) metrics(tally *plant.RecordTally, n int, targets plant.SLO, durationS float64) (plant.Metrics, plant.SLOReport) {
	kept := 0
	for i := range n {
		if math.IsNaN(s.ttft[i]) { // not completed
			continue
		}
		s.ttft[kept] = s.ttft[i]
		if !s.ttftOnly {
			s.tpot[kept], s.latency[kept] = s.tpot[i], s.latency[i]
		}
		kept++
	}
	ttft := s.ttft[:kept]
	var tpot, latency []float64
	if !s.ttftOnly {
		tpot, latency = s.tpot[:kept], s.latency[:kept]
	}
	m := tally.Metrics(ttft, tpot, latency)
	return m, tally.SLO(targets, ttft, tpot, latency, durationS)
}

// sampleWriter is one replica's way into the samples: it counts each final
// record in its tally, judged by its replica's objectives, and writes the
// samples in batches.
type sampleWriter struct {
	samples *samples
	slo     plant.SLO // what the replica's requests are judged by
	tally   plant.RecordTally
	queue   fifo[int] // workload indices of the replica's requests not final yet, in order
	buf     []placedSample
	lost    int // final records that missed their objectives (lossBudget)
}

// placedSample is one request's samples and its place in the workload.
type placedSample struct {
	index               int
	ttft, tpot, latency float64
}

// sampleBatch is the number of samples a writer writes at once.
const sampleBatch = 256

func newSampleWriter(s *samples, horizonS float64, slo plant.SLO) *sampleWriter {
	return &sampleWriter{
		samples: s,
		slo:     slo,
		tally:   plant.NewRecordTally(horizonS, slo),
		buf:     make([]placedSample, 0, sampleBatch),
	}
}

// record takes the replica's next final record (plant.Stepper.Summarize):
// that of the oldest request in its queue.
func (w *sampleWriter) record(r *plant.RequestRecord) {
	w.tally.Add(r)
	if !w.slo.Met(r) {
		w.lost++
	}
	p := placedSample{index: w.queue.pop(), ttft: math.NaN(), tpot: math.NaN(), latency: math.NaN()}
	if r.Completed() {
		p.ttft, p.tpot, p.latency = r.TTFTS(), r.TPOTS(), r.LatencyS()
	}
	w.buf = append(w.buf, p)
	if len(w.buf) == cap(w.buf) {
		w.flush()
	}
}

// flush writes the samples buffered.
func (w *sampleWriter) flush() {
	s := w.samples
	s.mu.RLock()
	for _, p := range w.buf {
		s.ttft[p.index] = p.ttft
		if !s.ttftOnly {
			s.tpot[p.index], s.latency[p.index] = p.tpot, p.latency
		}
	}
	s.mu.RUnlock()
	w.buf = w.buf[:0]
}

// fifo is a first-in first-out queue that reuses its array: once the
// items taken are half of it, the rest move to its front.
type fifo[T any] struct {
	items []T
	head  int
}

// push appends x.
func (q *fifo[T]) push(x T) {
	if q.head > 0 && 2*q.head >= len(q.items) {
		q.items = q.items[:copy(q.items, q.items[q.head:])]
		q.head = 0
	}
	q.items = append(q.items, x)
}

// pop removes and returns the oldest item; the queue must not be empty.
func (q *fifo[T]) pop() T {
	x := q.items[q.head]
	q.head++
	return x
}

// len is the number of items queued.
func (q *fifo[T]) len() int { return len(q.items) - q.head }

// front is the oldest item; the queue must not be empty.
func (q *fifo[T]) front() T { return q.items[q.head] }
