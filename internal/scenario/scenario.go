// Package scenario replays request traces against simple engine profiles and
// reports goodput and SLO attainment: a faithful port of the reference's
// seed001 (WorkloadRequest, EngineProfile, BenchmarkSummary, the built-in
// SCENARIO_PROFILES, build_agent_trace, evaluate_engine_benchmark and the
// main report), plus a reader for engine-profile files and the conversion of
// Azure-format traces loaded by the plant package.
//
// The coefficients are assumptions, not measurements: the replay is a CPU
// algorithm with controlled inputs, and no serving engine is executed.
package scenario

import (
	"fmt"
	"math"
)

// WorkloadRequest is one request of a trace.
type WorkloadRequest struct {
	// RequestID names the request, e.g. "req-007".
	RequestID string `json:"request_id"`
	// ArrivalMS is the arrival time in milliseconds from the trace start.
	ArrivalMS float64 `json:"arrival_ms"`
	// SharedPrefixTokens is the part of the prompt shared with other
	// requests, which an engine's prefix cache may serve.
	SharedPrefixTokens int `json:"shared_prefix_tokens"`
	// UniquePromptTokens is the part of the prompt always prefilled.
	UniquePromptTokens int `json:"unique_prompt_tokens"`
	// OutputTokens is the number of generated tokens (the first comes with
	// the prefill, the others each take one TPOT).
	OutputTokens int `json:"output_tokens"`
}

// EngineProfile holds the assumed coefficients of one engine configuration.
type EngineProfile struct {
	// Name identifies the profile in reports.
	Name string `json:"name"`
	// PrefillTokensPerMS is the prefill rate; it must be positive.
	PrefillTokensPerMS float64 `json:"prefill_tokens_per_ms"`
	// PrefixCacheHitEfficiency is the share of shared-prefix tokens the
	// prefix cache serves, in [0, 1].
	PrefixCacheHitEfficiency float64 `json:"prefix_cache_hit_efficiency"`
	// BaseTPOTMS is the time per output token of a batch of zero.
	BaseTPOTMS float64 `json:"base_tpot_ms"`
	// BatchTPOTSlopeMS is the extra time per output token for each request
	// in the batch.
	BatchTPOTSlopeMS float64 `json:"batch_tpot_slope_ms"`
	// MaxBatchSlots is the admission capacity: at most this many requests
	// decode at once; it must be at least 1.
	MaxBatchSlots int `json:"max_batch_slots"`
}

// BenchmarkSummary is the result of replaying a trace against a profile.
// Every number is rounded as the reference rounds it.
type BenchmarkSummary struct {
	Engine   string `json:"engine"`   // the profile's name
	Workload string `json:"workload"` // the workload's name
	// TotalRequests is the number of requests replayed.
	TotalRequests int `json:"total_requests"`
	// DurationS is from the first arrival (open loop) or from zero (closed
	// loop) to the last completion, at least 0.001 s; 3 decimals.
	DurationS float64 `json:"duration_s"`
	// TTFTP50MS and TTFTP99MS are nearest-rank percentiles of the time to
	// first token (queueing plus prefill); 2 decimals.
	TTFTP50MS float64 `json:"ttft_p50_ms"`
	TTFTP99MS float64 `json:"ttft_p99_ms"` // ttft_p99_ms: nearest-rank 99th percentile of TTFT, ms, 2 decimals
	// TPOTP50MS and TPOTP99MS are nearest-rank percentiles of the time per
	// output token; 2 decimals.
	TPOTP50MS float64 `json:"tpot_p50_ms"`
	TPOTP99MS float64 `json:"tpot_p99_ms"` // tpot_p99_ms: nearest-rank 99th percentile of TPOT, ms, 2 decimals
	// RawOutputTokensPerS is all output tokens over the duration; 2 decimals.
	RawOutputTokensPerS float64 `json:"raw_output_tokens_per_s"`
	// RequestThroughputRPS is all requests over the duration; 3 decimals.
	RequestThroughputRPS float64 `json:"request_throughput_rps"`
	// SLOGoodputRPS is the requests meeting both SLOs over the duration;
	// 3 decimals.
	SLOGoodputRPS float64 `json:"slo_goodput_rps"`
	// SLOAttainmentRatio is the share of requests meeting both SLOs;
	// 4 decimals.
	SLOAttainmentRatio float64 `json:"slo_attainment_ratio"`
}

// BuiltinProfiles returns the reference's SCENARIO_PROFILES in their order:
// baseline, prefix_reuse and faster_decode.
func BuiltinProfiles() []EngineProfile {
	return []EngineProfile{
		{Name: "baseline", PrefillTokensPerMS: 26.0, PrefixCacheHitEfficiency: 0.45, BaseTPOTMS: 17.5, BatchTPOTSlopeMS: 0.62, MaxBatchSlots: 16},
		{Name: "prefix_reuse", PrefillTokensPerMS: 27.0, PrefixCacheHitEfficiency: 0.92, BaseTPOTMS: 16.8, BatchTPOTSlopeMS: 0.58, MaxBatchSlots: 16},
		{Name: "faster_decode", PrefillTokensPerMS: 34.0, PrefixCacheHitEfficiency: 0.50, BaseTPOTMS: 12.4, BatchTPOTSlopeMS: 0.44, MaxBatchSlots: 16},
	}
}

// overbatchedProfile is the diagnostic profile of the reference's main: a
// large batch whose TPOT breaks the SLO.
var overbatchedProfile = EngineProfile{
	Name: "overbatched_unbounded", PrefillTokensPerMS: 42.0, PrefixCacheHitEfficiency: 0.50,
	BaseTPOTMS: 22.0, BatchTPOTSlopeMS: 0.45, MaxBatchSlots: 48,
}

// FieldError is a profile value that fails validation.
type FieldError struct {
	Field  string  // the seed's field name, e.g. "max_batch_slots"
	Value  float64 // the offending value
	Reason string  // what was expected
}

// Error reads "field value: reason", e.g. "max_batch_slots 0: capacity must
// be at least 1".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Reason)
}

// Validate checks what the reference's evaluate_engine_benchmark checks (a
// capacity of at least one slot and a positive prefill rate) and, beyond it,
// that every coefficient is finite, that the hit efficiency is in [0, 1]
// and that the TPOT coefficients are not negative. It returns a *FieldError.
func (p EngineProfile) Validate() error {
	switch {
	case p.MaxBatchSlots < 1:
		return &FieldError{"max_batch_slots", float64(p.MaxBatchSlots), "capacity must be at least 1"}
	case !(p.PrefillTokensPerMS > 0) || math.IsInf(p.PrefillTokensPerMS, 0):
		return &FieldError{"prefill_tokens_per_ms", p.PrefillTokensPerMS, "prefill rate must be positive and finite"}
	case !(p.PrefixCacheHitEfficiency >= 0 && p.PrefixCacheHitEfficiency <= 1):
		return &FieldError{"prefix_cache_hit_efficiency", p.PrefixCacheHitEfficiency, "must be between 0 and 1"}
	case !(p.BaseTPOTMS >= 0) || math.IsInf(p.BaseTPOTMS, 0):
		return &FieldError{"base_tpot_ms", p.BaseTPOTMS, "must be finite and not negative"}
	case !(p.BatchTPOTSlopeMS >= 0) || math.IsInf(p.BatchTPOTSlopeMS, 0):
		return &FieldError{"batch_tpot_slope_ms", p.BatchTPOTSlopeMS, "must be finite and not negative"}
	}
	return nil
}
