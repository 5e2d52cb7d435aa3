package plant

// RecordTally is RecordMetrics for records met one at a time, in any
// order, by several tallies that are merged: it counts them, while the
// caller keeps each completed request's TTFT, TPOT and latency at the
// request's place in the workload, the order RecordMetrics averages them
// in, and gives them to Metrics.
type RecordTally struct{ s requestStats }

// NewRecordTally counts records under reporting horizon horizonS.
func NewRecordTally(horizonS float64) RecordTally {
	return RecordTally{s: requestStats{horizonS: horizonS}}
}

// Add counts record r, whose violation rates count a TTFT above ttftLimit
// and a TPOT above tpotLimit.
func (t *RecordTally) Add(r *RequestRecord, ttftLimit, tpotLimit float64) {
	t.s.add(r, ttftLimit, tpotLimit)
	t.s.ttft, t.s.tpot, t.s.latency = t.s.ttft[:0], t.s.tpot[:0], t.s.latency[:0]
}

// Merge adds other's counts.
func (t *RecordTally) Merge(other *RecordTally) {
	t.s.requests += other.s.requests
	t.s.arrivedAtHorizon += other.s.arrivedAtHorizon
	t.s.completedAtHorizon += other.s.completedAtHorizon
	t.s.outputTokens += other.s.outputTokens
	t.s.ttftAbove += other.s.ttftAbove
	t.s.tpotAbove += other.s.tpotAbove
}

// Metrics returns RecordMetrics's result for the records counted, given
// the TTFT, TPOT and latency of the completed ones in workload order; it
// reorders those.
func (t *RecordTally) Metrics(ttft, tpot, latency []float64) Metrics {
	s := t.s
	s.ttft, s.tpot, s.latency = ttft, tpot, latency
	return s.metrics()
}
