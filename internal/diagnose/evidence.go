package diagnose

import (
	"math"
	"slices"
	"strconv"

	"servesim/internal/numeric"
)

// Diagnosis is a window's Snapshot (the seed's fields and verdict,
// unchanged) with what a user needs to trust or overrule the verdict
// beside it: the values each of the seed's rules compared, what the slow
// requests' TTFT is made of, and findings the seed's rules cannot express.
// None of it changes the verdict.
type Diagnosis struct {
	Snapshot
	// evidence: the seed's three rules in the order they are tried, each
	// with the values it compared; the verdict is the first that matched.
	Evidence []RuleEvidence `json:"evidence"`
	// p99_ttft_breakdown: the TTFT of the requests at or above the p99 TTFT,
	// split into queue wait and prefill.
	P99TTFTBreakdown TTFTBreakdown `json:"p99_ttft_breakdown"`
	// findings: causes the seed's rules do not name, each with its numbers.
	Findings Findings `json:"findings"`
}

// RuleEvidence is what one of the seed's rules looked at and concluded.
type RuleEvidence struct {
	// rule: the hypothesis the rule names.
	Rule string `json:"rule"`
	// matched: every check passed.
	Matched bool `json:"matched"`
	// verdict: this rule is the diagnosis, the first rule in the seed's
	// order that matched (a later rule may match too and is not the
	// diagnosis).
	Verdict bool `json:"verdict"`
	// checks: the rule's comparisons, all of which must pass.
	Checks []Check `json:"checks"`
}

// Check is one comparison a rule makes: observed op threshold.
type Check struct {
	// metric: the snapshot field compared.
	Metric string `json:"metric"`
	// observed: its value as the rule compared it, before the snapshot's
	// rounding (a value just above a threshold can round onto it); null
	// when not finite.
	Observed *float64 `json:"observed"`
	// op: the comparison, one of ">", ">=", "<", "==".
	Op string `json:"op"`
	// threshold: the value compared with; null when not finite.
	Threshold *float64 `json:"threshold"`
	// threshold_from: where the threshold comes from: an option
	// (kv_watermark_pct, cold_prefix_hit_pct, cold_ttft_ms; the
	// command's flags of the same names), "hol_ttft_ratio R x p50_ttft_ms"
	// (R the option's value, times the unrounded p50 TTFT), or "seed" (a
	// constant of the seed's rule).
	ThresholdFrom string `json:"threshold_from"`
	// passed: observed op threshold holds.
	Passed bool `json:"passed"`
}

// TTFTBreakdown decomposes the TTFT of the slow requests: those whose
// TTFT (queue_wait_ms + prefill_ms) is at or above the window's p99 TTFT
// before rounding (at least one request; more when TTFTs tie). Means are
// over those requests; shares are of their summed TTFT, so queue wait and
// prefill add up to 100%. The recompute penalty is not part of TTFT in
// the seed's log (it is time lost after the first token, added to the
// end-to-end latency); it is shown beside the shares. Values are null
// when not finite (a share when the slow requests' TTFTs are all 0).
type TTFTBreakdown struct {
	// requests: how many requests are at or above the p99 TTFT.
	Requests int `json:"requests"`
	// mean_ttft_ms: their mean TTFT, ms, 1 decimal.
	MeanTTFTMs *float64 `json:"mean_ttft_ms"`
	// mean_queue_wait_ms: their mean queue_wait_ms, ms, 1 decimal.
	MeanQueueWaitMs *float64 `json:"mean_queue_wait_ms"`
	// mean_prefill_ms: their mean prefill_ms, ms, 1 decimal.
	MeanPrefillMs *float64 `json:"mean_prefill_ms"`
	// queue_wait_share_pct: 100 x their summed queue_wait_ms / their summed TTFT, 1 decimal.
	QueueWaitSharePct *float64 `json:"queue_wait_share_pct"`
	// prefill_share_pct: 100 x their summed prefill_ms / their summed TTFT, 1 decimal.
	PrefillSharePct *float64 `json:"prefill_share_pct"`
	// mean_recompute_penalty_ms: their mean recompute_penalty_ms, ms, 1 decimal (not part of TTFT).
	MeanRecomputePenaltyMs *float64 `json:"mean_recompute_penalty_ms"`
	// preempted: how many of them were preempted.
	Preempted int `json:"preempted"`
}

// Findings are causes of a slow tail that the seed's rules cannot name,
// each judged on its own with the numbers it used.
type Findings struct {
	Overload      OverloadFinding      `json:"overload"`        // arrivals above what the server takes into service
	LongPrompts   LongPromptsFinding   `json:"long_prompts"`    // the slow requests have long prompts
	NoPrefixCache NoPrefixCacheFinding `json:"no_prefix_cache"` // the log shows no prefix cache
}

// Thresholds of the findings. They are fixed; each finding reports the
// one it used.
const (
	// OverloadArrivalRatio: arrivals at least this many times the
	// admissions (prefill starts) mean arrivals outpace what the server
	// takes into service.
	OverloadArrivalRatio = 1.1
	// LongPromptRatio: a median prompt of the slow requests at least this
	// many times the window's median prompt means long prompts.
	LongPromptRatio = 2.0
	// LongPromptPrefillSharePct: long prompts explain the slow requests
	// when prefill is at least this share of their TTFT (percent).
	LongPromptPrefillSharePct = 50.0
)

// OverloadFinding says whether requests arrived faster than the server
// took them into service, from the arrival times (arrival_s or timestamp)
// and the log's own latencies: a request is admitted (starts its prefill)
// at arrival + queue_wait_ms and completes at arrival + the seed's
// end-to-end latency, and it is queued at an instant when it has arrived
// before it and has not been admitted. The finding looks at an interval:
// with --by-window, the window (admissions, completions and the queue
// counted over every request of the log, whichever window it arrived in,
// each event in the window its time falls in, as arrivals are); else the
// log from its first arrival to the arrival instant at which the queue is
// longest (the earliest such; to the last arrival when no arrival ever
// finds a queue), so that a recovery after an overload does not average
// it away. Overload is present when arrivals are at least
// OverloadArrivalRatio times the admissions (the queue grew by at least
// 1/11 of the arrivals), or when the interval began with more requests
// queued than it admitted (a backlog carried in from earlier overload).
// A log holds completed requests only, so requests never completed count
// nowhere. With intervals of a few requests the counts are small; judge
// them as such. Without an arrival time for every request, or over an
// interval of no length, present and the numbers are null.
type OverloadFinding struct {
	// present: overload, as defined above; null when it cannot be told.
	Present *bool `json:"present"`
	// interval_start_s and interval_end_s: the interval, s (Unix seconds
	// for timestamps); interval_s its length.
	IntervalStartS *float64 `json:"interval_start_s"`
	IntervalEndS   *float64 `json:"interval_end_s"`
	IntervalS      *float64 `json:"interval_s"`
	// arrivals, admissions and completions: requests arriving, starting
	// their prefill and completing in the interval.
	Arrivals    *int `json:"arrivals"`
	Admissions  *int `json:"admissions"`
	Completions *int `json:"completions"`
	// arrival_rate_per_s, admission_rate_per_s and completion_rate_per_s:
	// those counts / interval_s, 3 decimals.
	ArrivalRatePerS    *float64 `json:"arrival_rate_per_s"`
	AdmissionRatePerS  *float64 `json:"admission_rate_per_s"`
	CompletionRatePerS *float64 `json:"completion_rate_per_s"`
	// queued_at_start and queued_at_end: requests queued at the interval's
	// start and end; queued_at_end - queued_at_start = arrivals - admissions.
	QueuedAtStart *int `json:"queued_at_start"`
	QueuedAtEnd   *int `json:"queued_at_end"`
	// arrivals_outpace_admissions: arrivals >= threshold_ratio x admissions.
	ArrivalsOutpaceAdmissions *bool `json:"arrivals_outpace_admissions"`
	// backlog_exceeds_admissions: queued_at_start > admissions.
	BacklogExceedsAdmissions *bool `json:"backlog_exceeds_admissions"`
	// threshold_ratio: OverloadArrivalRatio.
	ThresholdRatio float64 `json:"threshold_ratio"`
}

// LongPromptsFinding says whether the slow requests (as in TTFTBreakdown)
// are slow because they prefill long prompts: it is present when their
// median prompt is at least LongPromptRatio times the window's median
// prompt (nearest-rank medians of prompt_tokens) and prefill is at least
// LongPromptPrefillSharePct of their TTFT (the breakdown's
// prefill_share_pct, before rounding). Long prompts behind a long queue
// are not the cause: the queue is.
type LongPromptsFinding struct {
	// present: ratio >= threshold_ratio and prefill_share_pct >= threshold_prefill_share_pct.
	Present bool `json:"present"`
	// slow_median_prompt_tokens: median prompt_tokens of the slow requests.
	SlowMedianPromptTokens int64 `json:"slow_median_prompt_tokens"`
	// median_prompt_tokens: median prompt_tokens of the window.
	MedianPromptTokens int64 `json:"median_prompt_tokens"`
	// ratio: slow_median_prompt_tokens / median_prompt_tokens, 2 decimals.
	Ratio *float64 `json:"ratio"`
	// threshold_ratio: LongPromptRatio.
	ThresholdRatio float64 `json:"threshold_ratio"`
	// prefill_share_pct: the slow requests' prefill share of their TTFT,
	// as in TTFTBreakdown, 1 decimal; null when their TTFTs are all 0.
	PrefillSharePct *float64 `json:"prefill_share_pct"`
	// threshold_prefill_share_pct: LongPromptPrefillSharePct.
	ThresholdPrefillSharePct float64 `json:"threshold_prefill_share_pct"`
}

// NoPrefixCacheFinding says whether the log shows a prefix cache at all:
// it is present when no request of the whole log (every window, every
// file) has a prefix_cached_tokens above 0. Then the log cannot tell a
// cold cache from no cache (a server without one, or a log without the
// data), and a cold_prefix_cache_miss_burst verdict is not backed by it:
// its hit-rate check passes at 0% whatever the cause of the slow tail.
type NoPrefixCacheFinding struct {
	// present: log_requests_with_cached_tokens == 0.
	Present bool `json:"present"`
	// requests_with_cached_tokens: requests of the window with prefix_cached_tokens > 0.
	RequestsWithCachedTokens int `json:"requests_with_cached_tokens"`
	// log_requests: requests of the whole log.
	LogRequests int `json:"log_requests"`
	// log_requests_with_cached_tokens: requests of the whole log with prefix_cached_tokens > 0.
	LogRequestsWithCachedTokens int `json:"log_requests_with_cached_tokens"`
}

// logScope is what the findings need to know of the whole log.
type logScope struct {
	requests, withCached int
}

// flow is the arrivals, admissions and completions over the interval the
// overload finding looks at.
type flow struct {
	startS, endS                                                  float64
	arrivals, admissions, completions, queuedAtStart, queuedAtEnd int
}

// Diagnosis computes the Snapshot as Snapshot does and the evidence beside
// it, the accumulator being the whole log: the overload finding looks at
// the span of its arrival times (added by AddRecord). It reorders the
// accumulator's latency samples in place, as Snapshot does.
func (a *Accumulator) Diagnosis(window string, opts Options) (Diagnosis, error) {
	return a.diagnosis(window, opts, logScope{requests: a.samples.len(), withCached: a.withCached}, a.spanFlow())
}

// diagnosis computes the Diagnosis of the accumulator's requests within a
// log described by scope; fl is nil when the overload cannot be told.
func (a *Accumulator) diagnosis(window string, opts Options, scope logScope, fl *flow) (Diagnosis, error) {
	s, in, err := a.snapshot(window, opts)
	if err != nil {
		return Diagnosis{}, err
	}
	breakdown, tail := a.slowTail(in.p99TTFT)
	return Diagnosis{
		Snapshot:         s,
		Evidence:         opts.rules(in),
		P99TTFTBreakdown: breakdown,
		Findings: Findings{
			Overload:    overloadFinding(fl),
			LongPrompts: longPromptsFinding(tail, a.medianPrompt()),
			NoPrefixCache: NoPrefixCacheFinding{
				Present:                     scope.withCached == 0,
				RequestsWithCachedTokens:    a.withCached,
				LogRequests:                 scope.requests,
				LogRequestsWithCachedTokens: scope.withCached,
			},
		},
	}, nil
}

// rules applies the seed's three rules in the seed's order, with the
// seed's comparisons.
func (o Options) rules(in ruleInputs) []RuleEvidence {
	preemptions := float64(in.preemptions)
	holThreshold := in.p50TTFT * o.HOLTTFTRatio
	evidence := []RuleEvidence{
		{Rule: HypothesisKVThrashing, Checks: []Check{
			check("preemption_count", preemptions, ">", 0, "seed", in.preemptions > 0),
			check("peak_kv_occupancy_pct", in.peakKV, ">=", o.KVWatermarkPct, OptionKVWatermarkPct, in.peakKV >= o.KVWatermarkPct),
		}},
		{Rule: HypothesisHeadOfLine, Checks: []Check{
			check("p99_ttft_ms", in.p99TTFT, ">", holThreshold,
				OptionHOLTTFTRatio+" "+strconv.FormatFloat(o.HOLTTFTRatio, 'g', -1, 64)+" x p50_ttft_ms", in.p99TTFT > holThreshold),
			check("preemption_count", preemptions, "==", 0, "seed", in.preemptions == 0),
		}},
		{Rule: HypothesisColdPrefix, Checks: []Check{
			check("prefix_cache_hit_rate_pct", in.prefixHitPct, "<", o.ColdPrefixHitPct, OptionColdPrefixHitPct, in.prefixHitPct < o.ColdPrefixHitPct),
			check("p99_ttft_ms", in.p99TTFT, ">", o.ColdTTFTMs, OptionColdTTFTMs, in.p99TTFT > o.ColdTTFTMs),
		}},
	}
	chosen := false
	for i := range evidence {
		e := &evidence[i]
		e.Matched = true
		for _, c := range e.Checks {
			e.Matched = e.Matched && c.Passed
		}
		e.Verdict = e.Matched && !chosen
		chosen = chosen || e.Matched
	}
	return evidence
}

// verdict is the hypothesis of the first rule that matched, else
// HypothesisNoRule.
func verdict(evidence []RuleEvidence) string {
	for _, e := range evidence {
		if e.Verdict {
			return e.Rule
		}
	}
	return HypothesisNoRule
}

func check(metric string, observed float64, op string, threshold float64, from string, passed bool) Check {
	return Check{Metric: metric, Observed: finite(observed), Op: op, Threshold: finite(threshold), ThresholdFrom: from, Passed: passed}
}

// finite is x, or nil (JSON null) when x is NaN or infinite.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// roundedFinite is x rounded to ndigits decimals, or nil when not finite.
func roundedFinite(x float64, ndigits int) *float64 {
	return finite(numeric.Round(x, ndigits))
}

// slowRequests are the prompt lengths of the slow requests and their
// prefill share of TTFT before rounding (NaN when undefined).
type slowRequests struct {
	prompts         []int64
	prefillSharePct float64
}

// slowTail sums up the requests whose TTFT is at or above p99TTFT.
func (a *Accumulator) slowTail(p99TTFT float64) (TTFTBreakdown, slowRequests) {
	var b TTFTBreakdown
	var queue, prefill, recompute, ttft float64
	tail := slowRequests{prefillSharePct: math.NaN()}
	for i, s := range a.samples.all() {
		t := s.ttftMs()
		if !(t >= p99TTFT) {
			continue
		}
		b.Requests++
		queue += s.queueMs
		prefill += s.prefillMs
		recompute += s.recomputeMs
		ttft += t
		tail.prompts = append(tail.prompts, s.promptTokens)
		if a.samples.isPreempted(i) {
			b.Preempted++
		}
	}
	n := float64(b.Requests)
	b.MeanTTFTMs = roundedFinite(ttft/n, 1)
	b.MeanQueueWaitMs = roundedFinite(queue/n, 1)
	b.MeanPrefillMs = roundedFinite(prefill/n, 1)
	b.MeanRecomputePenaltyMs = roundedFinite(recompute/n, 1)
	if ttft > 0 {
		tail.prefillSharePct = 100 * prefill / ttft
		b.QueueWaitSharePct = roundedFinite(100*queue/ttft, 1)
		b.PrefillSharePct = roundedFinite(tail.prefillSharePct, 1)
	}
	return b, tail
}

// medianPrompt is the nearest-rank median prompt length of the
// accumulator's requests (at least one): found by selection in the
// scratch when every length is exact as a float64, else by sorting.
func (a *Accumulator) medianPrompt() int64 {
	exact := true
	for _, s := range a.samples.all() {
		exact = exact && s.promptTokens <= maxExactFloatInteger
	}
	if exact {
		return int64(numeric.NearestRankSelect(a.column(func(s *sample) float64 { return float64(s.promptTokens) }), q50/100.0))
	}
	prompts := make([]int64, 0, a.samples.len())
	for _, s := range a.samples.all() {
		prompts = append(prompts, s.promptTokens)
	}
	return medianTokens(prompts)
}

// medianTokens is the nearest-rank median of counts (not empty), which it
// sorts.
func medianTokens(counts []int64) int64 {
	slices.Sort(counts)
	return counts[numeric.NearestRankIndex(len(counts), q50/100.0)]
}

// longPromptsFinding compares the slow requests' median prompt with the
// window's and looks at their prefill share.
func longPromptsFinding(slow slowRequests, median int64) LongPromptsFinding {
	f := LongPromptsFinding{ThresholdRatio: LongPromptRatio, ThresholdPrefillSharePct: LongPromptPrefillSharePct,
		PrefillSharePct: roundedFinite(slow.prefillSharePct, 1)}
	if len(slow.prompts) == 0 {
		return f
	}
	f.SlowMedianPromptTokens, f.MedianPromptTokens = medianTokens(slow.prompts), median
	ratio := float64(f.SlowMedianPromptTokens) / float64(f.MedianPromptTokens)
	f.Ratio = roundedFinite(ratio, 2)
	f.Present = ratio >= LongPromptRatio && slow.prefillSharePct >= LongPromptPrefillSharePct
	return f
}

// spanFlow is the flow from the log's first arrival to the arrival
// instant at which the queue is longest (see OverloadFinding); nil
// without an arrival time for every request.
func (a *Accumulator) spanFlow() *flow {
	n := a.samples.len()
	if a.untimed > 0 || n == 0 {
		return nil
	}
	arrived, admitted := make([]float64, 0, n), make([]float64, 0, n)
	for _, s := range a.samples.all() {
		arrived, admitted = append(arrived, s.arrivalS), append(admitted, s.arrivalS+s.queueMs/1000)
	}
	slices.Sort(arrived)
	slices.Sort(admitted)
	queuedAt := func(t float64) int { return below(arrived, t) - below(admitted, t) }
	// The queue an arrival at t finds: the arrivals before t (j, at the
	// first of equal times) less the admissions before t (k), swept once.
	end, peak, k := arrived[n-1], 0, 0
	for j, t := range arrived {
		if j > 0 && t == arrived[j-1] {
			continue
		}
		for k < n && admitted[k] < t {
			k++
		}
		if q := j - k; q > peak {
			end, peak = t, q
		}
	}
	completions := 0
	for _, s := range a.samples.all() {
		if s.arrivalS+s.e2eMs/1000 < end {
			completions++
		}
	}
	return &flow{startS: arrived[0], endS: end, arrivals: below(arrived, end), admissions: below(admitted, end),
		completions: completions, queuedAtEnd: queuedAt(end)}
}

// below counts the values of sorted that are less than x.
func below(sorted []float64, x float64) int {
	i, _ := slices.BinarySearch(sorted, x)
	return i
}

// overloadFinding judges a flow; nil gives a finding of nulls.
func overloadFinding(fl *flow) OverloadFinding {
	f := OverloadFinding{ThresholdRatio: OverloadArrivalRatio}
	length := 0.0
	if fl != nil {
		length = fl.endS - fl.startS
	}
	if !(length > 0) || math.IsInf(length, 0) {
		return f
	}
	outpace := float64(fl.arrivals) >= OverloadArrivalRatio*float64(fl.admissions)
	backlog := fl.queuedAtStart > fl.admissions
	present := outpace || backlog
	f.Present, f.ArrivalsOutpaceAdmissions, f.BacklogExceedsAdmissions = &present, &outpace, &backlog
	f.IntervalStartS, f.IntervalEndS, f.IntervalS = finite(fl.startS), finite(fl.endS), finite(length)
	f.Arrivals, f.Admissions, f.Completions = &fl.arrivals, &fl.admissions, &fl.completions
	f.QueuedAtStart, f.QueuedAtEnd = &fl.queuedAtStart, &fl.queuedAtEnd
	f.ArrivalRatePerS = roundedFinite(float64(fl.arrivals)/length, 3)
	f.AdmissionRatePerS = roundedFinite(float64(fl.admissions)/length, 3)
	f.CompletionRatePerS = roundedFinite(float64(fl.completions)/length, 3)
	return f
}
