package plant

import (
	"math"

	"servesim/internal/numeric"
	"servesim/internal/profile"
)

// SLO holds the service-level objectives a request is judged by, in
// seconds. A zero TTFTSeconds or TPOTSeconds stands for the profile's
// objective (see ProfileSLO); a zero E2ESeconds means no end-to-end
// objective.
type SLO struct {
	TTFTSeconds float64 // time to first token
	TPOTSeconds float64 // time per output token
	E2ESeconds  float64 // end-to-end latency, arrival to completion; 0: none
}

// ProfileSLO is the profile's own objectives, which the reference's
// violation rates use: TTFT twice the baseline, TPOT 1.5 times the
// baseline, no end-to-end objective.
func ProfileSLO(p *profile.Profile) SLO {
	return SLO{TTFTSeconds: p.TTFTSLOSeconds(), TPOTSeconds: p.TPOTSLOSeconds()}
}

// OrProfile returns s with a zero TTFTSeconds or TPOTSeconds replaced by p's objective.
func (s SLO) OrProfile(p *profile.Profile) SLO {
	if s.TTFTSeconds == 0 {
		s.TTFTSeconds = p.TTFTSLOSeconds()
	}
	if s.TPOTSeconds == 0 {
		s.TPOTSeconds = p.TPOTSLOSeconds()
	}
	return s
}

// Validate requires every objective to be zero (the default) or finite and
// positive. The error is a *FieldError naming the field (ttft_slo_s,
// tpot_slo_s, e2e_slo_s).
func (s SLO) Validate() error {
	for _, f := range []struct {
		name  string
		value float64
	}{{"ttft_slo_s", s.TTFTSeconds}, {"tpot_slo_s", s.TPOTSeconds}, {"e2e_slo_s", s.E2ESeconds}} {
		if f.value != 0 && !(finite(f.value) && f.value > 0) {
			return &FieldError{Field: f.name, Value: f.value, Why: "must be finite and positive"}
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
// most TTFTSeconds, TPOT at most TPOTSeconds and, when E2ESeconds is set,
// latency at most E2ESeconds (a request exactly at an objective meets it,
// as the reference's violation rates count only values above). s must be
// resolved (no zero TTFTSeconds or TPOTSeconds).
func (s SLO) Met(r *RequestRecord) bool {
	return r.Completed() && r.TTFTS() <= s.TTFTSeconds && r.TPOTS() <= s.TPOTSeconds &&
		(s.E2ESeconds == 0 || r.LatencyS() <= s.E2ESeconds)
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
	TTFTSLOSeconds float64  `json:"ttft_slo_s"` // ttft_slo_s: the TTFT objective used, s
	TPOTSLOSeconds float64  `json:"tpot_slo_s"` // tpot_slo_s: the TPOT objective used, s
	E2ESLOSeconds  *float64 `json:"e2e_slo_s"`  // e2e_slo_s: the end-to-end objective, s; nil (null) for none
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
// against slo, resolved (no zero TTFTSeconds or TPOTSeconds), over a run of durationS
// seconds: the slo block of a Result, for records gathered from anywhere
// (the replicas of a fleet, say). The percentiles are found by selection
// in one buffer, in linear time.
func EvaluateSLO(records []RequestRecord, slo SLO, durationS float64) SLOReport {
	completed, met := 0, 0
	for i := range records {
		if r := &records[i]; r.Completed() {
			completed++
			if slo.Met(r) {
				met++
			}
		}
	}
	buffer := make([]float64, 0, completed)
	percentiles := func(value func(*RequestRecord) float64) Percentiles {
		buffer = buffer[:0]
		for i := range records {
			if r := &records[i]; r.Completed() {
				buffer = append(buffer, value(r))
			}
		}
		return Percentiles{
			P50: numeric.PercentileLinearSelect(buffer, 50),
			P90: numeric.PercentileLinearSelect(buffer, 90),
			P99: numeric.PercentileLinearSelect(buffer, 99),
		}
	}
	report := SLOReport{
		TTFTSLOSeconds:      slo.TTFTSeconds,
		TPOTSLOSeconds:      slo.TPOTSeconds,
		RequestsMeetingSLO:  met,
		Attainment:          float64(met) / float64(max(1, len(records))),
		GoodputRequestsPerS: float64(met) / durationS,
		TTFTS:               percentiles((*RequestRecord).TTFTS),
		TPOTS:               percentiles((*RequestRecord).TPOTS),
		E2ES:                percentiles((*RequestRecord).LatencyS),
	}
	if slo.E2ESeconds != 0 {
		e2e := slo.E2ESeconds
		report.E2ESLOSeconds = &e2e
	}
	return report
}
