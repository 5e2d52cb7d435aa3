package plant

import (
	"errors"
	"fmt"
	"math"
)

// A RequestStream yields the requests of a workload one at a time, in the
// order of its Requests: a trace read while it is simulated, so that the
// requests that have not arrived yet take no memory. Next returns the next
// request and true, or false after the last one or at an error, which Err
// then returns.
type RequestStream interface {
	Next() (Request, bool)
	Err() error
}

// sliceStream streams a workload given whole.
type sliceStream struct{ requests []Request }

func (s *sliceStream) Next() (Request, bool) {
	if len(s.requests) == 0 {
		return Request{}, false
	}
	r := s.requests[0]
	s.requests = s.requests[1:]
	return r, true
}

func (s *sliceStream) Err() error { return nil }

// checkedStream applies the reference's checks on a workload to the
// requests of a stream as they come: each valid, unique identifiers,
// sorted by arrival (validateWorkload), and at least one request.
type checkedStream struct {
	stream   RequestStream
	n        int
	previous float64
	seen     []uint64     // a bit per identifier below 64*len(seen)
	sparse   map[int]bool // the identifiers above
	err      error
}

func (c *checkedStream) Next() (Request, bool) {
	if c.err != nil {
		return Request{}, false
	}
	r, ok := c.stream.Next()
	if !ok {
		switch {
		case c.stream.Err() != nil:
			c.err = c.stream.Err()
		case c.n == 0:
			c.err = errors.New("workload must contain at least one request")
		}
		return Request{}, false
	}
	switch err := r.Validate(); {
	case err != nil:
		c.err = fmt.Errorf("request %d: %w", r.ID, err)
	case c.n > 0 && r.ArrivalTimeS < c.previous:
		c.err = errors.New("workload must be sorted by arrival_time_s")
	case c.repeated(r.ID):
		c.err = errors.New("request identifiers must be unique")
	}
	if c.err != nil {
		return Request{}, false
	}
	c.n++
	c.previous = r.ArrivalTimeS
	return r, true
}

func (c *checkedStream) Err() error { return c.err }

// repeated notes identifier id and reports whether it was seen before.
// Identifiers are bits of a bitmap that grows to twice the requests seen
// (a workload numbered from 0 fits in it), and keys of a map beyond.
func (c *checkedStream) repeated(id int) bool {
	word, bit := id/64, uint64(1)<<(id%64)
	if word >= len(c.seen) && word < 2*(c.n+64)/64 {
		c.seen = append(c.seen, make([]uint64, word+1-len(c.seen))...)
	}
	if word < len(c.seen) {
		seen := c.seen[word]&bit != 0 || (c.sparse != nil && c.sparse[id])
		c.seen[word] |= bit
		return seen
	}
	if c.sparse == nil {
		c.sparse = map[int]bool{}
	}
	seen := c.sparse[id]
	c.sparse[id] = true
	return seen
}

// fetch takes the next request of the stream as the upcoming one; with
// none left, the stream is dropped and upcomingS is +Inf.
func (sim *simulation) fetch() error {
	r, ok := sim.stream.Next()
	if !ok {
		err := sim.stream.Err()
		sim.stream, sim.upcomingS = nil, math.Inf(1)
		return err
	}
	sim.upcoming, sim.upcomingS = r, r.ArrivalTimeS
	return nil
}

// pull adds the requests of the stream that arrive by the current step.
func (sim *simulation) pull() error {
	if sim.upcomingS > sim.timeS+sim.lookaheadS+TimeEpsilonS {
		return nil // the usual case, inlined
	}
	return sim.pullArrived()
}

// pullArrived is pull when a request arrives.
func (sim *simulation) pullArrived() error {
	for sim.upcomingS <= sim.timeS+sim.lookaheadS+TimeEpsilonS {
		sim.add(sim.upcoming)
		if err := sim.fetch(); err != nil {
			return err
		}
	}
	return nil
}
