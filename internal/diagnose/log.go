// Package diagnose names the likely cause of a tail-latency (p99) spike from
// completed-request logs. It is a faithful port of the reference seed000:
// RequestLog and its validation, the nearest-rank percentile, the snapshot
// statistics with their roundings and the three diagnostic rules, plus
// readers for request logs in CSV and JSON Lines.
package diagnose

import (
	"fmt"
	"math"
	"strconv"

	"servesim/internal/limits"
)

// RequestLog is one completed request as a serving engine logs it.
type RequestLog struct {
	RequestID               string  `json:"request_id"`                  // request_id: the engine's request identifier
	PromptTokens            int64   `json:"prompt_tokens"`               // prompt_tokens: prompt length, tokens, at least 1
	OutputTokens            int64   `json:"output_tokens"`               // output_tokens: generated tokens, at least 1
	QueueWaitMs             float64 `json:"queue_wait_ms"`               // queue_wait_ms: time queued before prefill, ms
	PrefillMs               float64 `json:"prefill_ms"`                  // prefill_ms: prefill time, ms (TTFT = queue_wait_ms + prefill_ms)
	DecodeTPOTMs            float64 `json:"decode_tpot_ms"`              // decode_tpot_ms: decode time per output token after the first, ms
	Preempted               bool    `json:"preempted"`                   // preempted: the request was evicted from the KV cache and recomputed
	RecomputePenaltyMs      float64 `json:"recompute_penalty_ms"`        // recompute_penalty_ms: time lost to recompute after preemption, ms
	PrefixCachedTokens      int64   `json:"prefix_cached_tokens"`        // prefix_cached_tokens: prompt tokens served from the prefix cache, 0..prompt_tokens
	KVOccupancyPctAtArrival float64 `json:"kv_occupancy_pct_at_arrival"` // kv_occupancy_pct_at_arrival: KV-cache occupancy when the request arrived, percent 0..100
}

// Reasons a RequestLog fails validation; they keep the seed's two messages.
const (
	reasonTokenCounts  = "invalid completed request token counts"
	reasonMeasurements = "invalid completed request measurements"
)

// Validate applies the seed's checks in the seed's order: token counts first
// (prompt and output at least 1, prefix_cached_tokens within
// [0, prompt_tokens]), then the measurements (finite and non-negative,
// KV occupancy at most 100). The error names the first failing field.
func (r RequestLog) Validate() error {
	switch {
	case r.PromptTokens < 1:
		return intFieldError("prompt_tokens", r.PromptTokens, reasonTokenCounts+": must be at least 1")
	case r.OutputTokens < 1:
		return intFieldError("output_tokens", r.OutputTokens, reasonTokenCounts+": must be at least 1")
	case r.PrefixCachedTokens < 0 || r.PrefixCachedTokens > r.PromptTokens:
		return intFieldError("prefix_cached_tokens", r.PrefixCachedTokens,
			fmt.Sprintf("%s: must be between 0 and prompt_tokens (%d)", reasonTokenCounts, r.PromptTokens))
	}
	measurements := [...]struct {
		name  string
		value float64
	}{
		{"queue_wait_ms", r.QueueWaitMs},
		{"prefill_ms", r.PrefillMs},
		{"decode_tpot_ms", r.DecodeTPOTMs},
		{"recompute_penalty_ms", r.RecomputePenaltyMs},
		{"kv_occupancy_pct_at_arrival", r.KVOccupancyPctAtArrival},
	}
	for _, m := range measurements {
		if math.IsNaN(m.value) || math.IsInf(m.value, 0) || m.value < 0 {
			return floatFieldError(m.name, m.value, reasonMeasurements+": must be finite and non-negative")
		}
	}
	if r.KVOccupancyPctAtArrival > 100 {
		return floatFieldError("kv_occupancy_pct_at_arrival", r.KVOccupancyPctAtArrival, reasonMeasurements+": must be at most 100")
	}
	return nil
}

// TTFTMs is the time to first token: queue wait plus prefill.
func (r RequestLog) TTFTMs() float64 {
	return r.QueueWaitMs + r.PrefillMs
}

// E2EMs is the end-to-end latency: TTFT, one decode step per output token
// after the first, and the recompute penalty.
func (r RequestLog) E2EMs() float64 {
	// The explicit conversion forbids fusing the product into an FMA, which
	// would round differently from the seed.
	decode := float64(float64(max(0, r.OutputTokens-1)) * r.DecodeTPOTMs)
	return r.TTFTMs() + decode + r.RecomputePenaltyMs
}

// InputError is a request log problem located as precisely as known: the
// input's name, its line (0 when unknown), the field and its text.
type InputError struct {
	File   string // input name, e.g. the log file's path
	Line   int    // 1-based line number, 0 when unknown
	Field  string // field (column or key) name, empty when the whole line is bad
	Value  string // the field's text as read (quoted in at most limits.MaxQuotedChars characters)
	Reason string // what is wrong and what was expected
}

// Error formats the problem on one line, e.g.
// `logs.csv line 17: prompt_tokens "-3": invalid completed request token counts: must be at least 1`.
func (e *InputError) Error() string {
	msg := e.File
	if e.Line > 0 {
		msg += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Field != "" {
		if msg != "" {
			msg += ": "
		}
		msg += e.Field
		if e.Value != "" {
			msg += " " + limits.Quote(e.Value)
		}
	}
	if msg == "" {
		return e.Reason
	}
	return msg + ": " + e.Reason
}

func intFieldError(field string, v int64, reason string) *InputError {
	return &InputError{Field: field, Value: strconv.FormatInt(v, 10), Reason: reason}
}

func floatFieldError(field string, v float64, reason string) *InputError {
	return &InputError{Field: field, Value: strconv.FormatFloat(v, 'g', -1, 64), Reason: reason}
}
