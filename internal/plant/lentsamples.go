package plant

// LendSamples makes a summarizing Stepper that drops its records (see
// Summarize) keep none of the TTFT, TPOT and latency of its completed
// requests, 24 bytes a request, only what it counts of them: the receiver
// of its records keeps those (a fleet keeps them for its own metrics) and
// lends them back through samples, which Result calls once, after handing
// the last record, for the TTFT, TPOT and latency of the completed
// requests in the order they were added (what the Stepper would have
// kept). Result reorders them and reads them no more once it returns. It
// reports false, and changes nothing, when the Stepper keeps its records:
// its Result then needs nothing. Call it after Summarize (and after Feed,
// which starts the request statistics anew), before the first Add or
// Step.
func (st *Stepper) LendSamples(samples func() (ttft, tpot, latency []float64)) bool {
	s := st.sim.requests
	if s == nil {
		return false
	}
	s.lent = samples
	s.ttft, s.tpot, s.latency = nil, nil, nil // the room reserved for them
	return true
}
