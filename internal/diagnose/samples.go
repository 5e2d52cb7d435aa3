package diagnose

import "iter"

// sample is one request as a diagnosis needs it: 56 bytes. e2eMs and
// tpotMs are computed as the seed computes them (RequestLog.E2EMs; the
// decode time per token with the recompute penalty spread over the tokens
// after the first).
type sample struct {
	queueMs, prefillMs, recomputeMs, e2eMs float64
	tpotMs                                 float64 // NaN for a single output token
	arrivalS                               float64 // arrival time, s; NaN without one
	promptTokens                           int64
}

// ttftMs is the request's TTFT, computed as RequestLog.TTFTMs computes it.
func (s *sample) ttftMs() float64 { return s.queueMs + s.prefillMs }

// Chunk sizes of a sampleStore: a new chunk doubles the last one, from
// minSampleChunk up to maxSampleChunk samples.
const (
	minSampleChunk = 64
	maxSampleChunk = 1 << 16
)

// sampleStore keeps samples in arrival order in chunks that are never
// copied or grown, so that a million requests cost their 56 MB and no
// more (a doubling slice would hold up to twice that, and both copies
// while it grows), and a small window costs little. Whether each request
// was preempted is kept in a bit set beside them.
type sampleStore struct {
	chunks    [][]sample
	n         int
	preempted []uint64 // bit i: request i was preempted
}

// newSampleStore returns a store whose first chunk holds n samples.
func newSampleStore(n int) sampleStore {
	var s sampleStore
	if n > 0 {
		s.chunks = [][]sample{make([]sample, 0, n)}
		s.preempted = make([]uint64, 0, (n+63)/64)
	}
	return s
}

// add appends v.
func (s *sampleStore) add(v sample, preempted bool) {
	last := len(s.chunks) - 1
	if last < 0 || len(s.chunks[last]) == cap(s.chunks[last]) {
		size := minSampleChunk
		if last >= 0 {
			size = min(max(size, 2*cap(s.chunks[last])), maxSampleChunk)
		}
		s.chunks = append(s.chunks, make([]sample, 0, size))
		last++
	}
	s.chunks[last] = append(s.chunks[last], v)
	if s.n%64 == 0 {
		s.preempted = append(s.preempted, 0)
	}
	if preempted {
		s.preempted[s.n/64] |= 1 << (s.n % 64)
	}
	s.n++
}

// len is the number of samples.
func (s *sampleStore) len() int { return s.n }

// isPreempted reports whether request i was preempted.
func (s *sampleStore) isPreempted(i int) bool { return s.preempted[i/64]&(1<<(i%64)) != 0 }

// all yields every sample with its index, in arrival order.
func (s *sampleStore) all() iter.Seq2[int, *sample] {
	return func(yield func(int, *sample) bool) {
		i := 0
		for _, chunk := range s.chunks {
			for j := range chunk {
				if !yield(i, &chunk[j]) {
					return
				}
				i++
			}
		}
	}
}
