package diagnose

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steady returns n identical requests: TTFT = queue + prefill, 10 output
// tokens, 50% of the prompt cached, KV occupancy 50%.
func steady(n int, queueMs, prefillMs float64) []RequestLog {
	logs := make([]RequestLog, n)
	for i := range logs {
		logs[i] = RequestLog{
			RequestID: fmt.Sprintf("r%d", i), PromptTokens: 100, OutputTokens: 10,
			QueueWaitMs: queueMs, PrefillMs: prefillMs, DecodeTPOTMs: 10,
			PrefixCachedTokens: 50, KVOccupancyPctAtArrival: 50,
		}
	}
	return logs
}

// with applies change to the last k logs.
func with(logs []RequestLog, k int, change func(*RequestLog)) []RequestLog {
	for i := len(logs) - k; i < len(logs); i++ {
		change(&logs[i])
	}
	return logs
}

func preemptedAt(kv float64) func(*RequestLog) {
	return func(r *RequestLog) { r.Preempted, r.KVOccupancyPctAtArrival, r.RecomputePenaltyMs = true, kv, 500 }
}

func cachedPct(pct int64) func(*RequestLog) {
	return func(r *RequestLog) { r.PrefixCachedTokens = pct }
}

func TestRulesAndBoundaries(t *testing.T) {
	tests := []struct {
		name string
		logs []RequestLog
		opts func(*Options)
		want string
	}{
		{"kv thrashing: preemption above the watermark", with(steady(100, 10, 40), 1, preemptedAt(99)), nil, HypothesisKVThrashing},
		{"kv thrashing: peak KV exactly 95", with(steady(100, 10, 40), 1, preemptedAt(95)), nil, HypothesisKVThrashing},
		{"just below 95 is no thrashing", with(steady(100, 10, 40), 1, preemptedAt(94.9)), nil, HypothesisNoRule},
		{"KV at 100 without preemption is no thrashing", with(steady(100, 10, 40), 5, func(r *RequestLog) { r.KVOccupancyPctAtArrival = 100 }), nil, HypothesisNoRule},
		{"head of line: p99 TTFT above 5x p50", with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 210.5 }), nil, HypothesisHeadOfLine},
		{"exactly 5x p50 TTFT is not head of line", with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 210 }), nil, HypothesisNoRule},
		{"p99 at one straggler only is not the tail", with(steady(100, 10, 40), 1, func(r *RequestLog) { r.QueueWaitMs = 5000 }), nil, HypothesisNoRule},
		{"a preemption below the watermark blocks head of line",
			with(with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 300 }), 1, preemptedAt(90)), nil, HypothesisNoRule},
		{"cold prefix: hit rate below 20% and p99 TTFT above 1000", with(steady(100, 500, 501), 100, cachedPct(19)), nil, HypothesisColdPrefix},
		{"hit rate exactly 20% is not cold", with(steady(100, 500, 501), 100, cachedPct(20)), nil, HypothesisNoRule},
		{"p99 TTFT exactly 1000 is not cold", with(steady(100, 500, 500), 100, cachedPct(0)), nil, HypothesisNoRule},
		{"cold prefix with a preemption below the watermark",
			with(with(steady(100, 500, 501), 100, cachedPct(0)), 1, preemptedAt(50)), nil, HypothesisColdPrefix},
		{"thrashing wins over head of line",
			with(with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 5000 }), 1, preemptedAt(97)), nil, HypothesisKVThrashing},
		{"--kv-watermark-pct lowers the thrashing threshold", with(steady(100, 10, 40), 1, preemptedAt(90)),
			func(o *Options) { o.KVWatermarkPct = 90 }, HypothesisKVThrashing},
		{"--hol-ttft-ratio raises the head-of-line threshold", with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 260 }),
			func(o *Options) { o.HOLTTFTRatio = 6 }, HypothesisNoRule},
		{"--cold-prefix-hit-pct and --cold-ttft-ms", with(steady(100, 100, 100), 100, cachedPct(40)),
			func(o *Options) { o.ColdPrefixHitPct, o.ColdTTFTMs = 50, 150 }, HypothesisColdPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			s, err := Diagnose("w", tt.logs, opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.DiagnosticHypothesis)
		})
	}
}

func TestBoundaryStatistics(t *testing.T) {
	// The "exactly 5x" case really is exactly 5x, and exactly 20% really is 20.0.
	s, err := Diagnose("w", with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 210 }), DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 5*s.P50TTFTMs, s.P99TTFTMs)
	s, err = Diagnose("w", with(steady(100, 500, 501), 100, cachedPct(20)), DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 20.0, s.PrefixCacheHitRatePct)
	assert.Equal(t, 1001.0, s.P99TTFTMs)
}

func TestSnapshotNulls(t *testing.T) {
	zero := steady(3, 0, 0)
	for i := range zero {
		zero[i].OutputTokens, zero[i].DecodeTPOTMs = 1, 0
	}
	s, err := Diagnose("w", zero, DefaultOptions())
	require.NoError(t, err)
	assert.Nil(t, s.P99ToP50Ratio, "p50 e2e of 0: the seed gives None")
	assert.Nil(t, s.P50TPOTMs, "no request with more than one output token")
	assert.Nil(t, s.P99TPOTMs)
	assert.Equal(t, 0.0, s.MeanE2EMs)
}

func TestSnapshotStatistics(t *testing.T) {
	logs := with(steady(4, 10, 40), 1, preemptedAt(96))
	logs[0].OutputTokens = 1
	s, err := Diagnose("w", logs, DefaultOptions())
	require.NoError(t, err)
	// e2e: 50 (one token), 140, 140, 640 (recompute 500); mean 970/4.
	assert.Equal(t, 242.5, s.MeanE2EMs)
	assert.Equal(t, 140.0, s.P50E2EMs)
	assert.Equal(t, 640.0, s.P95E2EMs)
	assert.Equal(t, 640.0, s.P99E2EMs)
	assert.Equal(t, 4.57, *s.P99ToP50Ratio)
	assert.Equal(t, 10.0, *s.P50TPOTMs)
	assert.Equal(t, 65.56, *s.P99TPOTMs) // 10 + 500/9
	assert.Equal(t, 1, s.PreemptionCount)
	assert.Equal(t, int64(105), s.EstimatedRecomputeTokens) // 100 + 10//2
	assert.Equal(t, 50.0, s.PrefixCacheHitRatePct)
	assert.Equal(t, 96.0, s.PeakKVOccupancyPct)
	// (242.5/1000)/32 * 1000 * (4/3600) = 0.008420...
	assert.Equal(t, 0.0084, s.ModeledCostPer1kRequestsUSD)
}

func TestDiagnoseRejects(t *testing.T) {
	_, err := Diagnose("w", nil, DefaultOptions())
	assert.ErrorIs(t, err, ErrNoLogs)

	bad := steady(3, 10, 40)
	bad[1].PrefixCachedTokens = 101
	_, err = Diagnose("w", bad, DefaultOptions())
	var ie *InputError
	require.True(t, errors.As(err, &ie))
	assert.Equal(t, "prefix_cached_tokens", ie.Field)
	assert.EqualError(t, err, `request 2 ("r1"): prefix_cached_tokens "101": invalid completed request token counts: must be between 0 and prompt_tokens (100)`)

	for _, change := range []func(*Options){
		func(o *Options) { o.EffectiveConcurrency = 0 },
		func(o *Options) { o.GPUHourlyCostUSD = -1 },
		func(o *Options) { o.ColdTTFTMs = zeroOver(0) },
	} {
		opts := DefaultOptions()
		change(&opts)
		_, err := Diagnose("w", steady(2, 1, 1), opts)
		var oe *OptionError
		assert.True(t, errors.As(err, &oe), "%v", err)
	}
}

func TestTokenTotalsAreExact(t *testing.T) {
	// Python's int / int is exactly rounded; float64(2^53+1) alone is not.
	assert.Equal(t, 3002399751580331.0, trueDivide(1<<53+1, 3))
	assert.Equal(t, 0.4, trueDivide(2, 5))

	huge := steady(3, 1, 1)
	for i := range huge {
		huge[i].PromptTokens, huge[i].PrefixCachedTokens = math.MaxInt64, 0
	}
	_, err := Diagnose("w", huge, DefaultOptions())
	assert.EqualError(t, err, "token totals exceed 64 bits")
}

func TestValidateFollowsTheSeed(t *testing.T) {
	tests := []struct {
		name   string
		change func(*RequestLog)
		field  string
		reason string
	}{
		{"prompt 0", func(r *RequestLog) { r.PromptTokens = 0 }, "prompt_tokens", reasonTokenCounts},
		{"output 0", func(r *RequestLog) { r.OutputTokens = 0 }, "output_tokens", reasonTokenCounts},
		{"negative cache", func(r *RequestLog) { r.PrefixCachedTokens = -1 }, "prefix_cached_tokens", reasonTokenCounts},
		{"token counts are checked first", func(r *RequestLog) { r.PromptTokens, r.QueueWaitMs = 0, -1 }, "prompt_tokens", reasonTokenCounts},
		{"negative queue", func(r *RequestLog) { r.QueueWaitMs = -0.001 }, "queue_wait_ms", reasonMeasurements},
		{"NaN prefill", func(r *RequestLog) { r.PrefillMs = zeroOver(0) }, "prefill_ms", reasonMeasurements},
		{"infinite tpot", func(r *RequestLog) { r.DecodeTPOTMs = 1 / zeroOver(1) }, "decode_tpot_ms", reasonMeasurements},
		{"negative recompute", func(r *RequestLog) { r.RecomputePenaltyMs = -5 }, "recompute_penalty_ms", reasonMeasurements},
		{"KV above 100", func(r *RequestLog) { r.KVOccupancyPctAtArrival = 100.5 }, "kv_occupancy_pct_at_arrival", reasonMeasurements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := steady(1, 1, 1)[0]
			require.NoError(t, r.Validate())
			tt.change(&r)
			err := r.Validate()
			var ie *InputError
			require.True(t, errors.As(err, &ie), "%v", err)
			assert.Equal(t, tt.field, ie.Field)
			assert.Contains(t, ie.Reason, tt.reason)
		})
	}
	edge := steady(1, 0, 0)[0]
	edge.PrefixCachedTokens, edge.KVOccupancyPctAtArrival = edge.PromptTokens, 100
	assert.NoError(t, edge.Validate(), "cache = prompt and KV = 100 are allowed")
}

// zeroOver returns 0/x computed at run time (x=0 gives NaN; 1/zeroOver(1) is +Inf).
func zeroOver(x float64) float64 {
	zero := 0.0
	return zero / x
}
