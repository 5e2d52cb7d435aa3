package plant

import (
	"errors"
	"sync"
)

// pipeBatch is the number of requests a pipe hands over at once, and
// pipeBatches the number of batches in circulation: the reader can run up
// to pipeBatches-1 batches ahead of the simulation.
const (
	pipeBatch   = 4096
	pipeBatches = 4
)

// errPipeClosed stops a pipe's reader when the simulation stops early.
var errPipeClosed = errors.New("plant: request pipe closed")

// pipe is a RequestStream whose requests come from a reader running in its
// own goroutine: reading, parsing and checksumming a trace overlap with
// simulating it. Batches of requests circulate between the two goroutines,
// so the pipe allocates nothing per request.
type pipe struct {
	full  chan []Request // batches read, in order; closed after the last
	free  chan []Request // batches consumed, for the reader to fill again
	stop  chan struct{}  // closed by Close: the reader stops
	once  sync.Once
	batch []Request // the batch being consumed
	next  int       // its next request
	ended bool      // full is closed and drained
	// workload and err are the reader's result and failure, panic the
	// value it panicked with; set before full is closed.
	workload Workload
	err      error
	panic    any
}

// newPipe starts read in a goroutine: it must call emit with each request
// in order, stop at emit's first error and return it.
func newPipe(read func(emit func(Request) error) (Workload, error)) *pipe {
	p := &pipe{
		full: make(chan []Request, pipeBatches),
		free: make(chan []Request, pipeBatches),
		stop: make(chan struct{}),
	}
	for range pipeBatches {
		p.free <- make([]Request, 0, pipeBatch)
	}
	go p.produce(read)
	return p
}

// produce runs read, sending the requests it emits in batches.
func (p *pipe) produce(read func(emit func(Request) error) (Workload, error)) {
	defer close(p.full)
	defer func() {
		// Panicking here would end the process: Next panics instead, in
		// the goroutine of the simulation.
		if v := recover(); v != nil {
			p.panic = v
		}
	}()
	batch := <-p.free
	send := func() error {
		select {
		case p.full <- batch:
		case <-p.stop:
			return errPipeClosed
		}
		select {
		case batch = <-p.free:
			batch = batch[:0]
			return nil
		case <-p.stop:
			return errPipeClosed
		}
	}
	w, err := read(func(r Request) error {
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			return send()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = send()
	}
	p.workload, p.err = w, err
}

// Next implements RequestStream.
func (p *pipe) Next() (Request, bool) {
	if p.next == len(p.batch) {
		if p.batch != nil {
			p.free <- p.batch // never blocks: free holds every batch
		}
		batch, ok := <-p.full
		if !ok {
			p.batch, p.ended = nil, true
			if p.panic != nil {
				panic(p.panic)
			}
			return Request{}, false
		}
		p.batch, p.next = batch, 0
	}
	r := p.batch[p.next]
	p.next++
	return r, true
}

// Err implements RequestStream: the reader's error, once Next has returned
// false.
func (p *pipe) Err() error {
	if !p.ended {
		return nil
	}
	return p.err
}

// Workload is the reader's result, once Next has returned false.
func (p *pipe) Workload() Workload { return p.workload }

// Close stops the reader, if it is still running, and waits for it to
// return.
func (p *pipe) Close() {
	p.once.Do(func() { close(p.stop) })
	for range p.full {
	}
}
