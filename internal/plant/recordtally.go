package plant

// RecordTally is RecordMetrics for records met one at a time, in any
// order, by several tallies that are merged: it counts them, while the
// caller keeps each completed request's TTFT, TPOT and latency at the
// request's place in the workload, the order RecordMetrics averages them
// in, and gives them to Metrics.
type RecordTally struct{ s requestStats }

// NewRecordTally counts records under reporting horizon horizonS, judged
// by the objectives judge (resolved).
func NewRecordTally(horizonS float64, judge SLO) RecordTally {
	return RecordTally{s: requestStats{horizonS: horizonS, judge: judge}}
}

// Add counts record r: its violations of the tally's TTFT and TPOT
// objectives, and whether it meets every objective.
func (t *RecordTally) Add(r *RequestRecord) {
	t.s.add(r, t.s.judge.TTFTSeconds, t.s.judge.TPOTSeconds)
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
	t.s.met += other.s.met
}

// Metrics returns RecordMetrics's result for the records counted, given
// the TTFT, TPOT and latency of the completed ones in workload order; it
// reorders those.
func (t *RecordTally) Metrics(ttft, tpot, latency []float64) Metrics {
	s := t.s
	s.ttft, s.tpot, s.latency = ttft, tpot, latency
	return s.metrics()
}

// SLO returns the slo block of the records counted over durationS seconds,
// naming targets as its objectives, given the TTFT, TPOT and latency of the
// completed ones (in any order: it reorders them).
func (t *RecordTally) SLO(targets SLO, ttft, tpot, latency []float64, durationS float64) SLOReport {
	s := t.s
	s.judge = targets
	s.ttft, s.tpot, s.latency = ttft, tpot, latency
	return s.sloReport(durationS)
}
