package plant

import (
	"fmt"
	"math"
	"slices"

	"servesim/internal/numeric"
	"servesim/internal/profile"
)

// SLO holds the service-level objectives a request is judged by, in
// seconds. A zero TTFTS or TPOTS stands for the profile's objective (see
// ProfileSLO); a zero E2ES means no end-to-end objective.
type SLO struct {
	TTFTS float64 // time to first token
	TPOTS float64 // time per output token
	E2ES  float64 // end-to-end latency, arrival to completion; 0: none
}

// ProfileSLO is the profile's own objectives, which the reference's
// violation rates use: TTFT twice the baseline, TPOT 1.5 times the
// baseline, no end-to-end objective.
func ProfileSLO(p *profile.Profile) SLO {
	return SLO{TTFTS: p.TTFTSLOS(), TPOTS: p.TPOTSLOS()}
}

// OrProfile returns s with a zero TTFTS or TPOTS replaced by p's objective.
func (s SLO) OrProfile(p *profile.Profile) SLO {
	if s.TTFTS == 0 {
		s.TTFTS = p.TTFTSLOS()
	}
	if s.TPOTS == 0 {
		s.TPOTS = p.TPOTSLOS()
	}
	return s
}

// Validate requires every objective to be zero (the default) or finite and
// positive. The error names the field (ttft_slo_s, tpot_slo_s, e2e_slo_s).
func (s SLO) Validate() error {
	for _, f := range []struct {
		name  string
		value float64
	}{{"ttft_slo_s", s.TTFTS}, {"tpot_slo_s", s.TPOTS}, {"e2e_slo_s", s.E2ES}} {
		if f.value != 0 && !(finite(f.value) && f.value > 0) {
			return fmt.Errorf("%s %v: must be finite and positive", f.name, f.value)
		}
	}
	return nil
}

// TTFTS is the request's time to first token, first token - arrival, s;
// NaN before its first token.
func (r *RequestRecord) TTFTS() float64 { return r.FirstTokenTimeS - r.ArrivalTimeS }

// TPOTS is the request's time per output token, (completion - first token)
// / max(1, output tokens - 1), s; NaN until it completes.
func (r *RequestRecord) TPOTS() float64 {
	return (r.CompletionTimeS - r.FirstTokenTimeS) / float64(max(1, r.OutputTokens-1))
}

// LatencyS is the request's end-to-end latency, completion - arrival, s;
// NaN until it completes.
func (r *RequestRecord) LatencyS() float64 { return r.CompletionTimeS - r.ArrivalTimeS }

// Completed reports whether the request completed.
func (r *RequestRecord) Completed() bool { return !math.IsNaN(r.CompletionTimeS) }

// Met reports whether r completed and meets every objective of s: TTFT at
// most TTFTS, TPOT at most TPOTS and, when E2ES is set, latency at most
// E2ES (a request exactly at an objective meets it, as the reference's
// violation rates count only values above). s must be resolved (no zero
// TTFTS or TPOTS).
func (s SLO) Met(r *RequestRecord) bool {
	return r.Completed() && r.TTFTS() <= s.TTFTS && r.TPOTS() <= s.TPOTS &&
		(s.E2ES == 0 || r.LatencyS() <= s.E2ES)
}

// Percentiles are the 50th, 90th and 99th percentiles (numpy's linear
// method) of a latency over the completed requests, s; NaN (null in JSON)
// when no request completed.
type Percentiles struct {
	P50 float64 `json:"p50"` // p50: median
	P90 float64 `json:"p90"` // p90: 90th percentile
	P99 float64 `json:"p99"` // p99: 99th percentile
}

// SLOReport is the `slo` block of a run: the objectives used, the share of
// requests meeting all of them (vLLM's goodput definition) and latency
// percentiles.
type SLOReport struct {
	TTFTSLOS float64  `json:"ttft_slo_s"` // ttft_slo_s: the TTFT objective used, s
	TPOTSLOS float64  `json:"tpot_slo_s"` // tpot_slo_s: the TPOT objective used, s
	E2ESLOS  *float64 `json:"e2e_slo_s"`  // e2e_slo_s: the end-to-end objective, s; nil (null) for none
	// requests_meeting_slo: completed requests meeting every objective.
	RequestsMeetingSLO int `json:"requests_meeting_slo"`
	// attainment: requests_meeting_slo / all requests of the workload
	// (unfinished ones count as misses).
	Attainment float64 `json:"attainment"`
	// goodput_requests_per_s: requests_meeting_slo / the run's duration
	// (max(last - first step time, time step), as in
	// output_throughput_tokens_per_s).
	GoodputRequestsPerS float64     `json:"goodput_requests_per_s"`
	TTFTS               Percentiles `json:"ttft_s"` // ttft_s: TTFT percentiles of the completed requests
	TPOTS               Percentiles `json:"tpot_s"` // tpot_s: TPOT percentiles of the completed requests
	E2ES                Percentiles `json:"e2e_s"`  // e2e_s: end-to-end latency percentiles of the completed requests
}

// latencyStats is what the metrics and the slo block report about one
// latency of the completed requests.
type latencyStats struct {
	mean               float64 // np.mean in workload order
	above              float64 // np.mean(values > limit)
	p50, p90, p95, p99 float64 // np.percentile, linear
}

// completedLatencies returns the statistics of the TTFT, TPOT and latency of
// the completed requests, which number n; ttftLimit and tpotLimit are the
// objectives whose violation rates are wanted. One buffer holds each series
// in turn: its mean is taken in workload order (as numpy sums), then it is
// sorted in place for the percentiles.
func completedLatencies(records []RequestRecord, n int, ttftLimit, tpotLimit float64) (ttft, tpot, latency latencyStats) {
	buffer := make([]float64, 0, n)
	stats := func(value func(*RequestRecord) float64, limit float64) latencyStats {
		buffer = buffer[:0]
		for i := range records {
			if r := &records[i]; r.Completed() {
				buffer = append(buffer, value(r))
			}
		}
		s := latencyStats{mean: numeric.Mean(buffer), above: fractionAbove(buffer, limit)}
		slices.Sort(buffer)
		s.p50 = numeric.PercentileLinearSorted(buffer, 50)
		s.p90 = numeric.PercentileLinearSorted(buffer, 90)
		s.p95 = numeric.PercentileLinearSorted(buffer, 95)
		s.p99 = numeric.PercentileLinearSorted(buffer, 99)
		return s
	}
	return stats((*RequestRecord).TTFTS, ttftLimit), stats((*RequestRecord).TPOTS, tpotLimit),
		stats((*RequestRecord).LatencyS, math.Inf(1))
}

// sloReport assembles the slo block from the three latency statistics.
func sloReport(records []RequestRecord, slo SLO, durationS float64, ttft, tpot, latency latencyStats) SLOReport {
	met := 0
	for i := range records {
		if slo.Met(&records[i]) {
			met++
		}
	}
	report := SLOReport{
		TTFTSLOS:            slo.TTFTS,
		TPOTSLOS:            slo.TPOTS,
		RequestsMeetingSLO:  met,
		Attainment:          float64(met) / float64(max(1, len(records))),
		GoodputRequestsPerS: float64(met) / durationS,
		TTFTS:               Percentiles{ttft.p50, ttft.p90, ttft.p99},
		TPOTS:               Percentiles{tpot.p50, tpot.p90, tpot.p99},
		E2ES:                Percentiles{latency.p50, latency.p90, latency.p99},
	}
	if slo.E2ES != 0 {
		e2e := slo.E2ES
		report.E2ESLOS = &e2e
	}
	return report
}

// EvaluateSLO judges records (every request of a workload, completed or
// not) against slo, resolved with no zero TTFTS or TPOTS, over a run of
// durationS seconds: the slo block Simulate reports, for records gathered
// from elsewhere (several replicas, say).
func EvaluateSLO(records []RequestRecord, slo SLO, durationS float64) SLOReport {
	n := 0
	for i := range records {
		if records[i].Completed() {
			n++
		}
	}
	ttft, tpot, latency := completedLatencies(records, n, slo.TTFTS, slo.TPOTS)
	return sloReport(records, slo, durationS, ttft, tpot, latency)
}
