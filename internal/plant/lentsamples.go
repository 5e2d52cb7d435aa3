package plant

// LendSamples makes a Stepper that will summarize and drop its records
// (see Summarize) keep none of the TTFT, TPOT and latency of its completed
// requests, 24 bytes a request, only what it counts of them: the receiver
// of its records keeps those (a fleet keeps them for its own metrics) and
// lends them back through samples, which Result calls once, after handing
// the last record, for the TTFT, TPOT and latency of the completed
// requests in the order they were added (what the Stepper would have
// kept). Result reorders them and reads them no more once it returns. It
// reports false, and changes nothing, when the Stepper will keep its
// records: its Result then needs nothing. Call it before Summarize.
func (st *Stepper) LendSamples(samples func() (ttft, tpot, latency []float64)) bool {
	if !compacts(st.opt, st.sim.controller) {
		return false
	}
	st.sim.lent = samples
	return true
}
