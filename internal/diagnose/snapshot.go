package diagnose

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"

	"servesim/internal/numeric"
)

// The diagnostic hypotheses, in the order the rules are tried.
const (
	// HypothesisKVThrashing: requests were preempted while KV occupancy
	// reached the watermark, so evicted work was recomputed.
	HypothesisKVThrashing = "kv_cache_preemption_and_recompute_thrashing"
	// HypothesisHeadOfLine: the TTFT tail is far above the median with no
	// preemption, so long prefills blocked the queue.
	HypothesisHeadOfLine = "head_of_line_prefill_queue_blocking"
	// HypothesisColdPrefix: few prompt tokens hit the prefix cache and the
	// TTFT tail is long.
	HypothesisColdPrefix = "cold_prefix_cache_miss_burst"
	// HypothesisNoRule: no rule matched.
	HypothesisNoRule = "no_rule_matched"
)

// The seed's defaults (see DefaultOptions).
const (
	defaultGPUHourlyCost  = 4.00
	defaultConcurrency    = 32.0
	defaultKVWatermarkPct = 95.0
	defaultHOLTTFTRatio   = 5.0
	defaultColdPrefixHit  = 20.0
	defaultColdTTFTMs     = 1000.0
	maxExactFloatInteger  = 1 << 53
)

// The percentiles a snapshot reports, as the seed writes them (percent).
const (
	q50 = 50.0
	q95 = 95.0
	q99 = 99.0
)

// Thresholds are the rule engine's cut-offs; DefaultOptions holds the seed's.
type Thresholds struct {
	// KVWatermarkPct: any preemption with peak KV occupancy at or above this
	// (percent) means KV-cache preemption and recompute thrashing. Seed: 95.
	KVWatermarkPct float64
	// HOLTTFTRatio: p99 TTFT above this multiple of p50 TTFT with no
	// preemption means head-of-line prefill queue blocking. Seed: 5.
	HOLTTFTRatio float64
	// ColdPrefixHitPct and ColdTTFTMs: a prefix-cache hit rate below
	// ColdPrefixHitPct (percent) with p99 TTFT above ColdTTFTMs (ms) means a
	// cold prefix-cache miss burst. Seed: 20 and 1000.
	ColdPrefixHitPct float64
	ColdTTFTMs       float64 // p99 TTFT threshold of the cold prefix-cache rule, ms
}

// Options configure a diagnosis: the cost proxy and the rule thresholds.
type Options struct {
	// GPUHourlyCostUSD prices one GPU hour for the cost proxy. Seed: 4.00.
	GPUHourlyCostUSD float64
	// EffectiveConcurrency is how many requests share a GPU at once in the
	// cost proxy. Seed: 32. Must be positive.
	EffectiveConcurrency float64
	Thresholds
}

// DefaultOptions returns the seed's defaults.
func DefaultOptions() Options {
	return Options{
		GPUHourlyCostUSD:     defaultGPUHourlyCost,
		EffectiveConcurrency: defaultConcurrency,
		Thresholds: Thresholds{
			KVWatermarkPct:   defaultKVWatermarkPct,
			HOLTTFTRatio:     defaultHOLTTFTRatio,
			ColdPrefixHitPct: defaultColdPrefixHit,
			ColdTTFTMs:       defaultColdTTFTMs,
		},
	}
}

// Validate checks that every option is a finite number, the cost is not
// negative and the concurrency is positive. The error is an *OptionError.
func (o Options) Validate() error {
	values := [...]struct {
		name  string
		value float64
	}{
		{OptionGPUHourlyCost, o.GPUHourlyCostUSD},
		{OptionEffectiveConcurrency, o.EffectiveConcurrency},
		{OptionKVWatermarkPct, o.KVWatermarkPct},
		{OptionHOLTTFTRatio, o.HOLTTFTRatio},
		{OptionColdPrefixHitPct, o.ColdPrefixHitPct},
		{OptionColdTTFTMs, o.ColdTTFTMs},
	}
	for _, v := range values {
		if math.IsNaN(v.value) || math.IsInf(v.value, 0) {
			return &OptionError{Option: v.name, Value: v.value, Reason: "must be a finite number"}
		}
	}
	if o.GPUHourlyCostUSD < 0 {
		return &OptionError{Option: OptionGPUHourlyCost, Value: o.GPUHourlyCostUSD, Reason: "must not be negative"}
	}
	if o.EffectiveConcurrency <= 0 {
		return &OptionError{Option: OptionEffectiveConcurrency, Value: o.EffectiveConcurrency, Reason: "must be positive"}
	}
	return nil
}

// Names of the options, as OptionError reports them.
const (
	OptionGPUHourlyCost        = "gpu_hourly_cost_usd"
	OptionEffectiveConcurrency = "effective_concurrency"
	OptionKVWatermarkPct       = "kv_watermark_pct"
	OptionHOLTTFTRatio         = "hol_ttft_ratio"
	OptionColdPrefixHitPct     = "cold_prefix_hit_pct"
	OptionColdTTFTMs           = "cold_ttft_ms"
)

// OptionError is an invalid option value.
type OptionError struct {
	Option string  // option name, one of the Option* constants
	Value  float64 // the rejected value
	Reason string  // what was expected
}

// Error names the option, its value and what was expected.
func (e *OptionError) Error() string {
	return fmt.Sprintf("%s %v: %s", e.Option, e.Value, e.Reason)
}

// Snapshot is the seed's TelemetrySnapshot: the window's statistics rounded
// as the seed rounds them, and the diagnostic hypothesis. Nil pointers are
// the seed's None (no p50 to divide by; no request with more than one
// output token).
type Snapshot struct {
	// window_name: the window's label.
	WindowName string `json:"window_name"`
	// request_count: number of requests in the window.
	RequestCount int `json:"request_count"`
	// mean_e2e_ms: mean end-to-end latency (TTFT + max(0, output_tokens-1) x decode_tpot_ms + recompute_penalty_ms), ms, 1 decimal.
	MeanE2EMs float64 `json:"mean_e2e_ms"`
	// p50_e2e_ms: nearest-rank 50th percentile of end-to-end latency, ms, 1 decimal.
	P50E2EMs float64 `json:"p50_e2e_ms"`
	// p95_e2e_ms: nearest-rank 95th percentile of end-to-end latency, ms, 1 decimal.
	P95E2EMs float64 `json:"p95_e2e_ms"`
	// p99_e2e_ms: nearest-rank 99th percentile of end-to-end latency, ms, 1 decimal.
	P99E2EMs float64 `json:"p99_e2e_ms"`
	// p99_to_p50_ratio: p99 / p50 end-to-end latency before rounding, 2 decimals; nil when p50 is 0.
	P99ToP50Ratio *float64 `json:"p99_to_p50_ratio"`
	// p50_ttft_ms: nearest-rank median of TTFT (queue_wait_ms + prefill_ms), ms, 1 decimal.
	P50TTFTMs float64 `json:"p50_ttft_ms"`
	// p99_ttft_ms: nearest-rank 99th percentile of TTFT, ms, 1 decimal.
	P99TTFTMs float64 `json:"p99_ttft_ms"`
	// p50_tpot_ms: nearest-rank median of decode_tpot_ms + recompute_penalty_ms/(output_tokens-1) over requests with more than one output token, ms, 2 decimals; nil without any.
	P50TPOTMs *float64 `json:"p50_tpot_ms"`
	// p99_tpot_ms: nearest-rank 99th percentile of that TPOT, ms, 2 decimals; nil without any.
	P99TPOTMs *float64 `json:"p99_tpot_ms"`
	// p99_queue_wait_ms: nearest-rank 99th percentile of queue_wait_ms, ms, 1 decimal.
	P99QueueWaitMs float64 `json:"p99_queue_wait_ms"`
	// peak_kv_occupancy_pct: maximum kv_occupancy_pct_at_arrival, percent, 1 decimal.
	PeakKVOccupancyPct float64 `json:"peak_kv_occupancy_pct"`
	// preemption_count: number of preempted requests.
	PreemptionCount int `json:"preemption_count"`
	// estimated_recompute_tokens: sum of prompt_tokens + output_tokens/2 (integer division) over preempted requests.
	EstimatedRecomputeTokens int64 `json:"estimated_recompute_tokens"`
	// prefix_cache_hit_rate_pct: 100 x total prefix_cached_tokens / total prompt_tokens (0 without prompt tokens), percent, 1 decimal.
	PrefixCacheHitRatePct float64 `json:"prefix_cache_hit_rate_pct"`
	// modeled_cost_per_1k_requests_usd: illustrative proxy (mean e2e in s / EffectiveConcurrency) x 1000 x GPUHourlyCostUSD / 3600, USD, 4 decimals; not a bill.
	ModeledCostPer1kRequestsUSD float64 `json:"modeled_cost_per_1k_requests_usd"`
	// diagnostic_hypothesis: name of the first rule that matches under Thresholds (KV thrashing, head-of-line blocking, cold prefix cache), else "no_rule_matched".
	DiagnosticHypothesis string `json:"diagnostic_hypothesis"`
}

// ErrNoLogs is returned when there is no request to diagnose.
var ErrNoLogs = errors.New("no requests to diagnose")

// Percentile is the seed's nearest-rank percentile of values for q in
// [0, 100]: the element at ceil(q/100*n)-1 of the sorted values, clamped.
// values is not modified.
func Percentile(values []float64, q float64) (float64, error) {
	if len(values) == 0 {
		return 0, errors.New("cannot compute percentile of empty list")
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return numeric.NearestRank(sorted, q/100.0), nil
}

// Accumulator collects requests one at a time and keeps only what a
// diagnosis needs: a sample of 56 bytes per request (its latencies, arrival
// time and prompt length) and running totals. The running e2e sum adds in
// arrival order, as the seed's sum() does.
type Accumulator struct {
	sumE2E      float64
	peakKV      float64
	preemptions int
	// Token totals are unsigned 64-bit with overflow flags: the seed's
	// Python integers never overflow, so a total that would is an error.
	recomputeTokens, totalPrompt, cachedPrompt uint64
	overflow                                   bool
	// samples holds every request in arrival order.
	samples sampleStore
	// untimed counts the requests added without an arrival time;
	// withCached those with a prompt token from the prefix cache.
	untimed, withCached int
	// scratch holds one column of the samples at a time for the
	// percentiles, which reorder it.
	scratch []float64
}

// NewAccumulator returns an accumulator sized for about n requests.
func NewAccumulator(n int) *Accumulator {
	return &Accumulator{samples: newSampleStore(n)}
}

// Add validates r (as constructing the seed's RequestLog does) and adds it,
// without an arrival time. A negative zero measurement counts as zero.
func (a *Accumulator) Add(r RequestLog) error {
	return a.add(r, 0, false)
}

// AddRecord adds a request read from a log as Add does, with its arrival
// time when the record has one (the overload finding needs them all).
func (a *Accumulator) AddRecord(rec Record) error {
	return a.add(rec.Log, rec.ArrivalS, rec.Arrival != ArrivalNone)
}

func (a *Accumulator) add(r RequestLog, arrivalS float64, timed bool) error {
	if err := r.Validate(); err != nil {
		return err
	}
	// Adding +0 turns -0 into +0, so sorting (which cannot tell them apart)
	// always yields the same percentile bits.
	r.QueueWaitMs += 0
	r.PrefillMs += 0
	r.DecodeTPOTMs += 0
	r.RecomputePenaltyMs += 0
	r.KVOccupancyPctAtArrival += 0

	e2e := r.E2EMs()
	tpot := math.NaN() // none for a single output token
	if r.OutputTokens > 1 {
		tpot = r.DecodeTPOTMs + r.RecomputePenaltyMs/float64(r.OutputTokens-1)
	}
	a.sumE2E += e2e
	if a.samples.len() == 0 || r.KVOccupancyPctAtArrival > a.peakKV {
		a.peakKV = r.KVOccupancyPctAtArrival
	}
	if r.Preempted {
		a.preemptions++
		a.addTokens(&a.recomputeTokens, uint64(r.PromptTokens)+uint64(r.OutputTokens/2))
	}
	a.addTokens(&a.totalPrompt, uint64(r.PromptTokens))
	a.addTokens(&a.cachedPrompt, uint64(r.PrefixCachedTokens))
	if !timed {
		arrivalS = math.NaN()
		a.untimed++
	}
	a.samples.add(sample{
		queueMs: r.QueueWaitMs, prefillMs: r.PrefillMs, recomputeMs: r.RecomputePenaltyMs, e2eMs: e2e, tpotMs: tpot,
		arrivalS: arrivalS, promptTokens: r.PromptTokens,
	}, r.Preempted)
	if r.PrefixCachedTokens > 0 {
		a.withCached++
	}
	return nil
}

// column fills the accumulator's scratch with pick's value of every
// sample, in arrival order, leaving out NaN (no value), and returns it.
func (a *Accumulator) column(pick func(*sample) float64) []float64 {
	if cap(a.scratch) < a.samples.len() {
		a.scratch = make([]float64, 0, a.samples.len())
	}
	a.scratch = a.scratch[:0]
	for _, s := range a.samples.all() {
		if v := pick(s); !math.IsNaN(v) {
			a.scratch = append(a.scratch, v)
		}
	}
	return a.scratch
}

func (a *Accumulator) addTokens(total *uint64, n uint64) {
	sum, carry := bits.Add64(*total, n, 0)
	a.overflow = a.overflow || carry != 0
	*total = sum
}

// Snapshot computes the window's statistics and applies the rules in the
// seed's order. More requests may be added afterwards.
func (a *Accumulator) Snapshot(window string, opts Options) (Snapshot, error) {
	s, _, err := a.snapshot(window, opts)
	return s, err
}

// ruleInputs are the values the seed's rules compare, before rounding.
type ruleInputs struct {
	preemptions                            int
	peakKV, p50TTFT, p99TTFT, prefixHitPct float64
}

// snapshot is Snapshot, also returning the values the rules compared.
func (a *Accumulator) snapshot(window string, opts Options) (Snapshot, ruleInputs, error) {
	n := a.samples.len()
	if n == 0 {
		return Snapshot{}, ruleInputs{}, ErrNoLogs
	}
	if err := opts.Validate(); err != nil {
		return Snapshot{}, ruleInputs{}, err
	}
	if a.overflow || a.recomputeTokens > math.MaxInt64 {
		return Snapshot{}, ruleInputs{}, errors.New("token totals exceed 64 bits")
	}
	// Selection gives the same element as the seed's sorted()[index].
	mean := a.sumE2E / float64(n)
	e2e := a.column(func(s *sample) float64 { return s.e2eMs })
	p50E2E := numeric.NearestRankSelect(e2e, q50/100.0)
	p95E2E := numeric.NearestRankSelect(e2e, q95/100.0)
	p99E2E := numeric.NearestRankSelect(e2e, q99/100.0)
	ttft := a.column((*sample).ttftMs)
	p50TTFT := numeric.NearestRankSelect(ttft, q50/100.0)
	p99TTFT := numeric.NearestRankSelect(ttft, q99/100.0)
	p99Queue := numeric.NearestRankSelect(a.column(func(s *sample) float64 { return s.queueMs }), q99/100.0)
	prefixHitPct := 0.0
	if a.totalPrompt != 0 {
		prefixHitPct = trueDivide(a.cachedPrompt, a.totalPrompt) * 100.0
	}
	// The seed's illustrative allocation proxy: it includes waiting and is
	// neither measured GPU usage nor a bill.
	avgGPUSPerReq := (mean / 1000.0) / opts.EffectiveConcurrency
	costPer1k := avgGPUSPerReq * 1000.0 * (opts.GPUHourlyCostUSD / 3600.0)

	s := Snapshot{
		WindowName:                  window,
		RequestCount:                n,
		MeanE2EMs:                   numeric.Round(mean, 1),
		P50E2EMs:                    numeric.Round(p50E2E, 1),
		P95E2EMs:                    numeric.Round(p95E2E, 1),
		P99E2EMs:                    numeric.Round(p99E2E, 1),
		P50TTFTMs:                   numeric.Round(p50TTFT, 1),
		P99TTFTMs:                   numeric.Round(p99TTFT, 1),
		P99QueueWaitMs:              numeric.Round(p99Queue, 1),
		PeakKVOccupancyPct:          numeric.Round(a.peakKV, 1),
		PreemptionCount:             a.preemptions,
		EstimatedRecomputeTokens:    int64(a.recomputeTokens),
		PrefixCacheHitRatePct:       numeric.Round(prefixHitPct, 1),
		ModeledCostPer1kRequestsUSD: numeric.Round(costPer1k, 4),
	}
	in := ruleInputs{preemptions: a.preemptions, peakKV: a.peakKV, p50TTFT: p50TTFT, p99TTFT: p99TTFT, prefixHitPct: prefixHitPct}
	s.DiagnosticHypothesis = verdict(opts.rules(in))
	if p50E2E != 0 {
		s.P99ToP50Ratio = roundedPtr(p99E2E/p50E2E, 2)
	}
	if tpot := a.column(func(s *sample) float64 { return s.tpotMs }); len(tpot) > 0 {
		s.P50TPOTMs = roundedPtr(numeric.NearestRankSelect(tpot, q50/100.0), 2)
		s.P99TPOTMs = roundedPtr(numeric.NearestRankSelect(tpot, q99/100.0), 2)
	}
	return s, in, nil
}

// trueDivide is Python's int / int: the exactly rounded quotient.
func trueDivide(num, den uint64) float64 {
	if num <= maxExactFloatInteger && den <= maxExactFloatInteger {
		return float64(num) / float64(den)
	}
	q, _ := new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den)).Float64()
	return q
}

func roundedPtr(x float64, ndigits int) *float64 {
	r := numeric.Round(x, ndigits)
	return &r
}

// Diagnose is the seed's diagnose_p99_spike: it validates every log and
// returns the window's snapshot. The error names the first invalid request
// by its position (1-based) and field.
func Diagnose(window string, logs []RequestLog, opts Options) (Snapshot, error) {
	acc := NewAccumulator(len(logs))
	for i, r := range logs {
		if err := acc.Add(r); err != nil {
			return Snapshot{}, fmt.Errorf("request %d (%q): %w", i+1, r.RequestID, err)
		}
	}
	return acc.Snapshot(window, opts)
}
