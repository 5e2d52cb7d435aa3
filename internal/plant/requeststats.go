package plant

import (
	"math"

	"servesim/internal/numeric"
)

// requestStats gathers what the metrics of a run need of its request
// records, one record at a time in request order: counts, and the TTFT,
// TPOT and end-to-end latency of every completed request (24 bytes each).
// The records themselves may be dropped once added, so that a run keeps
// only the records of the requests in flight (Options.Summary).
//
// The values are kept in request order, the order in which the reference
// hands them to numpy: means are numpy's sums in that order; percentiles
// do not depend on it and are found by selection.
type requestStats struct {
	horizonS float64
	// judge is what requests_meeting_slo counts requests by (resolved);
	// violations are counted by the limits add is given.
	judge SLO

	requests           int
	arrivedAtHorizon   int
	completedAtHorizon int
	outputTokens       int
	ttftAbove          int
	tpotAbove          int
	met                int
	ttft               []float64
	tpot               []float64
	latency            []float64
	// lent, when not nil, gives the values at metrics, add keeping none
	// (Stepper.LendSamples).
	lent func() (ttft, tpot, latency []float64)
}

// newRequestStats gathers statistics for a run with reporting horizon
// horizonS whose requests are judged by slo (resolved), with room for
// capacity completed requests.
func newRequestStats(horizonS float64, slo SLO, capacity int) *requestStats {
	return &requestStats{
		horizonS: horizonS,
		judge:    slo,
		ttft:     make([]float64, 0, capacity),
		tpot:     make([]float64, 0, capacity),
		latency:  make([]float64, 0, capacity),
	}
}

// add accounts for the next record, whose violation rates count a TTFT
// above ttftLimit and a TPOT above tpotLimit.
func (s *requestStats) add(r *RequestRecord, ttftLimit, tpotLimit float64) {
	s.requests++
	if r.ArrivalTimeS <= s.horizonS {
		s.arrivedAtHorizon++
	}
	if !r.Completed() {
		return
	}
	if r.CompletionTimeS <= s.horizonS {
		s.completedAtHorizon++
	}
	s.outputTokens += r.OutputTokens
	ttft, tpot, latency := r.TTFTS(), r.TPOTS(), r.LatencyS()
	if ttft > ttftLimit {
		s.ttftAbove++
	}
	if tpot > tpotLimit {
		s.tpotAbove++
	}
	if ttft <= s.judge.TTFTSeconds && tpot <= s.judge.TPOTSeconds && (s.judge.E2ESeconds == 0 || latency <= s.judge.E2ESeconds) {
		s.met++
	}
	if s.lent != nil {
		return
	}
	s.ttft = append(s.ttft, ttft)
	s.tpot = append(s.tpot, tpot)
	s.latency = append(s.latency, latency)
}

// addAll accounts for records, each judged by the run's objectives.
func (s *requestStats) addAll(records []RequestRecord) {
	for i := range records {
		s.add(&records[i], s.judge.TTFTSeconds, s.judge.TPOTSeconds)
	}
}

// metrics returns the record metrics (see RecordMetrics). It reorders the
// values it holds (after the means): call it once, after the last add, and
// before sloReport.
func (s *requestStats) metrics() Metrics {
	if s.lent != nil {
		s.ttft, s.tpot, s.latency = s.lent()
		s.lent = nil
	}
	n := len(s.ttft)
	rate := func(above int) float64 {
		if n == 0 {
			return math.NaN() // np.mean of nothing
		}
		return float64(above) / float64(n)
	}
	// The means first, while the values are in request order.
	m := Metrics{
		CompletedFraction:                    float64(n) / float64(max(1, s.requests)),
		MeanTTFTS:                            numeric.Mean(s.ttft),
		MeanTPOTS:                            numeric.Mean(s.tpot),
		MeanLatencyS:                         numeric.Mean(s.latency),
		OutputThroughputTokensPerS:           float64(s.outputTokens),
		EnergyPerOutputTokenJ:                float64(max(1, s.outputTokens)),
		TTFTViolationRate:                    rate(s.ttftAbove),
		TPOTViolationRate:                    rate(s.tpotAbove),
		UnfinishedRequestsAtReportingHorizon: float64(s.arrivedAtHorizon - s.completedAtHorizon),
		UnfinishedRequestsAtEnd:              float64(s.requests - n),
		ReportingHorizonS:                    s.horizonS,
	}
	m.P95TTFTS = numeric.PercentileLinearSelect(s.ttft, 95)
	m.P95TPOTS = numeric.PercentileLinearSelect(s.tpot, 95)
	return m
}

// sloReport returns the slo block of a run of durationS seconds (see
// EvaluateSLO). It reorders the values it holds: call it after metrics.
func (s *requestStats) sloReport(durationS float64) SLOReport {
	percentiles := func(values []float64) Percentiles {
		return Percentiles{
			P50: numeric.PercentileLinearSelect(values, 50),
			P90: numeric.PercentileLinearSelect(values, 90),
			P99: numeric.PercentileLinearSelect(values, 99),
		}
	}
	report := SLOReport{
		TTFTSLOSeconds:      s.judge.TTFTSeconds,
		TPOTSLOSeconds:      s.judge.TPOTSeconds,
		RequestsMeetingSLO:  s.met,
		Attainment:          float64(s.met) / float64(max(1, s.requests)),
		GoodputRequestsPerS: float64(s.met) / durationS,
		TTFTS:               percentiles(s.ttft),
		TPOTS:               percentiles(s.tpot),
		E2ES:                percentiles(s.latency),
	}
	if s.judge.E2ESeconds != 0 {
		e2e := s.judge.E2ESeconds
		report.E2ESLOSeconds = &e2e
	}
	return report
}
