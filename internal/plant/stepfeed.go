package plant

import "servesim/internal/workload"

// Summarize makes the Stepper hand each request's record to f once it is
// final, in the order the requests were added: when the run drops it
// (under Options.Summary, unless a request log, the engine features or a
// controller that sees the server state need the records, the records of
// completed requests are dropped as in a run read as a stream, so that the
// Stepper holds only those of the requests in flight), or at Result. The
// Stepper then keeps the workload checksum of its requests as they come.
// expected is the number of requests expected (0: unknown); a summarizing
// Stepper is best built with a capacity hint of 0. Call it before the
// first Add or Feed.
func (st *Stepper) Summarize(expected int, f func(*RequestRecord)) {
	sim := st.sim
	sim.onRecord = f
	if !st.unsummed {
		st.sum = &workload.Checksum{}
	}
	if compacts(st.opt, sim.controller) {
		sim.compact(st.opt, expected)
	}
}

// Feed makes stream the source of the Stepper's requests, in place of Add:
// each is added at the step it arrives in, and Step reports the run done
// once the stream has ended and every request has completed, which is
// then Simulate's run of the stream's requests. n and lastArrivalS are the
// number of requests expected and the last arrival (0: unknown). The
// stream's requests must pass Simulate's workload checks, which Feed does
// not apply (a fleet checks its whole workload once). Feed reports false
// when the stream has no request: the run has no step. Call it once,
// before the first Step, and Drain after the last.
func (st *Stepper) Feed(stream RequestStream, n int, lastArrivalS float64) (bool, error) {
	if st.sum == nil && !st.unsummed {
		st.sum = &workload.Checksum{}
	}
	if st.sum != nil {
		stream = &summedStream{stream: stream, sum: st.sum}
	}
	sim := st.sim
	if err := sim.feed(stream, st.opt, n, lastArrivalS); err != nil {
		return false, err
	}
	st.reserved = true
	st.marked = sim.stream == nil
	return !st.marked, nil
}

// Drain reads what a fed Stepper's stream still holds after the last Step
// (requests that would arrive after MaxSimulationTimeS): they count as
// unfinished, as in Simulate.
func (st *Stepper) Drain() error { return st.sim.drain() }

// handHeld hands the records still held to a summarizing Stepper's
// receiver at the end of its run, dropping them if the run drops records.
func (st *Stepper) handHeld() {
	sim := st.sim
	if sim.onRecord == nil {
		return
	}
	if sim.compacting {
		sim.flush()
		return
	}
	sim.hand(sim.records)
}

// checksum is the workload checksum of the requests added.
func (st *Stepper) checksum() string {
	if st.unsummed {
		return ""
	}
	if st.sum != nil {
		return st.sum.Sum()
	}
	var sum workload.Checksum
	for i := range st.sim.records {
		r := &st.sim.records[i]
		sum.Add(Request{ID: r.RequestID, ArrivalTimeS: r.ArrivalTimeS, PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens})
	}
	return sum.Sum()
}

// hand gives records, final, to the run's receiver, if it has one.
func (sim *simulation) hand(records []RequestRecord) {
	if sim.onRecord == nil {
		return
	}
	for i := range records {
		sim.onRecord(&records[i])
	}
}

// summedStream adds each request of its stream to a checksum as it is
// read.
type summedStream struct {
	stream RequestStream
	sum    *workload.Checksum
}

func (s *summedStream) Next() (Request, bool) {
	r, ok := s.stream.Next()
	if ok {
		s.sum.Add(r)
	}
	return r, ok
}

func (s *summedStream) Err() error { return s.stream.Err() }
