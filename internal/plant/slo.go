package plant

import (
	"fmt"
	"math"

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

// EvaluateSLO judges records (every request of a run, completed or not)
// against slo, resolved (no zero TTFTS or TPOTS), over a run of durationS
// seconds: the slo block of a Result, for records gathered from anywhere
// (the replicas of a fleet, say). The percentiles are found by selection,
// in linear time.
func EvaluateSLO(records []RequestRecord, slo SLO, durationS float64) SLOReport {
	stats := newRequestStats(0, slo, len(records))
	stats.addAll(records)
	return stats.sloReport(durationS)
}
