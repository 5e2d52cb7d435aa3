package diagnose

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/numeric"
)

// diagnosisOf diagnoses logs as one log, without arrival times.
func diagnosisOf(t *testing.T, logs []RequestLog, opts Options) Diagnosis {
	t.Helper()
	acc := NewAccumulator(len(logs))
	for _, r := range logs {
		require.NoError(t, acc.Add(r))
	}
	d, err := acc.Diagnosis("w", opts)
	require.NoError(t, err)
	return d
}

// timedDiagnosisOf diagnoses logs arriving at the given times.
func timedDiagnosisOf(t *testing.T, logs []RequestLog, arrivals []float64) Diagnosis {
	t.Helper()
	acc := NewAccumulator(len(logs))
	for i, r := range logs {
		require.NoError(t, acc.AddRecord(Record{Log: r, ArrivalS: arrivals[i], Arrival: ArrivalSeconds}))
	}
	d, err := acc.Diagnosis("w", DefaultOptions())
	require.NoError(t, err)
	return d
}

// ruleNamed returns the evidence of rule.
func ruleNamed(t *testing.T, d Diagnosis, rule string) RuleEvidence {
	t.Helper()
	for _, e := range d.Evidence {
		if e.Rule == rule {
			return e
		}
	}
	require.Failf(t, "no evidence", "rule %s", rule)
	return RuleEvidence{}
}

// TestDiagnosisKeepsTheSeedSnapshot: on every reference case and under
// other thresholds, the diagnosis's snapshot is Diagnose's (the seed's),
// the evidence names the seed's verdict as the first matched rule, and
// each check's observed value rounds to the snapshot's field.
func TestDiagnosisKeepsTheSeedSnapshot(t *testing.T) {
	variants := []func(*Options){
		func(*Options) {},
		func(o *Options) { o.KVWatermarkPct, o.HOLTTFTRatio = 50, 1.5 },
		func(o *Options) { o.ColdPrefixHitPct, o.ColdTTFTMs, o.HOLTTFTRatio = 60, 10, 100 },
	}
	for _, c := range loadReferenceCases(t).Snapshots {
		logs := make([]RequestLog, len(c.Logs))
		for i, row := range c.Logs {
			logs[i] = logFromRow(t, row)
		}
		for v, change := range variants {
			opts := DefaultOptions()
			opts.GPUHourlyCostUSD, opts.EffectiveConcurrency = c.GPUHourlyCostUSD, c.EffectiveConcurrency
			change(&opts)
			want, err := Diagnose(c.Window, logs, opts)
			require.NoError(t, err)
			d := diagnosisOf(t, logs, opts)
			d.WindowName = c.Window
			require.Equal(t, want, d.Snapshot, "%s variant %d", c.Window, v)
			if v == 0 {
				assertSameJSONFields(t, c.Snapshot, d.Snapshot, c.Window)
			}

			require.Len(t, d.Evidence, 3)
			assert.Equal(t, []string{HypothesisKVThrashing, HypothesisHeadOfLine, HypothesisColdPrefix},
				[]string{d.Evidence[0].Rule, d.Evidence[1].Rule, d.Evidence[2].Rule}, "the seed's order")
			verdicts, first := 0, HypothesisNoRule
			for _, e := range d.Evidence {
				passed := true
				for _, ch := range e.Checks {
					passed = passed && ch.Passed
					rounded := map[string]float64{"p99_ttft_ms": want.P99TTFTMs, "peak_kv_occupancy_pct": want.PeakKVOccupancyPct,
						"prefix_cache_hit_rate_pct": want.PrefixCacheHitRatePct, "preemption_count": float64(want.PreemptionCount)}[ch.Metric]
					decimals := 1
					if ch.Metric == "preemption_count" {
						decimals = 0
					}
					require.NotNil(t, ch.Observed)
					assert.Equal(t, rounded, numeric.Round(*ch.Observed, decimals), "%s %s", c.Window, ch.Metric)
				}
				assert.Equal(t, passed, e.Matched, "%s %s", c.Window, e.Rule)
				if e.Matched && first == HypothesisNoRule {
					first = e.Rule
				}
				if e.Verdict {
					verdicts++
					assert.Equal(t, first, e.Rule)
				}
			}
			assert.Equal(t, first, want.DiagnosticHypothesis, "%s variant %d", c.Window, v)
			assert.LessOrEqual(t, verdicts, 1)
		}
	}
}

func TestRuleEvidenceShowsWhatEachRuleCompared(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name    string
		logs    []RequestLog
		verdict string
		rule    string
		want    RuleEvidence
	}{
		{"kv thrashing: both checks with the watermark",
			with(steady(100, 10, 40), 1, preemptedAt(97)), HypothesisKVThrashing, HypothesisKVThrashing,
			RuleEvidence{Rule: HypothesisKVThrashing, Matched: true, Verdict: true, Checks: []Check{
				{Metric: "preemption_count", Observed: f(1), Op: ">", Threshold: f(0), ThresholdFrom: "seed", Passed: true},
				{Metric: "peak_kv_occupancy_pct", Observed: f(97), Op: ">=", Threshold: f(95), ThresholdFrom: "kv_watermark_pct", Passed: true},
			}}},
		{"head of line: the threshold is the ratio times the p50",
			with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs = 260 }), HypothesisHeadOfLine, HypothesisHeadOfLine,
			RuleEvidence{Rule: HypothesisHeadOfLine, Matched: true, Verdict: true, Checks: []Check{
				{Metric: "p99_ttft_ms", Observed: f(300), Op: ">", Threshold: f(250), ThresholdFrom: "hol_ttft_ratio 5 x p50_ttft_ms", Passed: true},
				{Metric: "preemption_count", Observed: f(0), Op: "==", Threshold: f(0), ThresholdFrom: "seed", Passed: true},
			}}},
		{"a later rule that matches too is not the verdict",
			with(with(steady(100, 10, 40), 100, cachedPct(0)), 2, func(r *RequestLog) { r.QueueWaitMs = 2000 }), HypothesisHeadOfLine, HypothesisColdPrefix,
			RuleEvidence{Rule: HypothesisColdPrefix, Matched: true, Verdict: false, Checks: []Check{
				{Metric: "prefix_cache_hit_rate_pct", Observed: f(0), Op: "<", Threshold: f(20), ThresholdFrom: "cold_prefix_hit_pct", Passed: true},
				{Metric: "p99_ttft_ms", Observed: f(2040), Op: ">", Threshold: f(1000), ThresholdFrom: "cold_ttft_ms", Passed: true},
			}}},
		{"the unrounded p99 TTFT passes where the rounded one would not",
			with(steady(100, 500, 500.04), 100, cachedPct(0)), HypothesisColdPrefix, HypothesisColdPrefix,
			RuleEvidence{Rule: HypothesisColdPrefix, Matched: true, Verdict: true, Checks: []Check{
				{Metric: "prefix_cache_hit_rate_pct", Observed: f(0), Op: "<", Threshold: f(20), ThresholdFrom: "cold_prefix_hit_pct", Passed: true},
				{Metric: "p99_ttft_ms", Observed: f(1000.04), Op: ">", Threshold: f(1000), ThresholdFrom: "cold_ttft_ms", Passed: true},
			}}},
		{"no rule: every check with its values",
			steady(100, 10, 40), HypothesisNoRule, HypothesisHeadOfLine,
			RuleEvidence{Rule: HypothesisHeadOfLine, Checks: []Check{
				{Metric: "p99_ttft_ms", Observed: f(50), Op: ">", Threshold: f(250), ThresholdFrom: "hol_ttft_ratio 5 x p50_ttft_ms", Passed: false},
				{Metric: "preemption_count", Observed: f(0), Op: "==", Threshold: f(0), ThresholdFrom: "seed", Passed: true},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnosisOf(t, tt.logs, DefaultOptions())
			assert.Equal(t, tt.verdict, d.DiagnosticHypothesis)
			assert.Equal(t, tt.want, ruleNamed(t, d, tt.rule))
		})
	}
	// The snapshot rounds the p99 TTFT of 1000.04 onto the threshold.
	d := diagnosisOf(t, with(steady(100, 500, 500.04), 100, cachedPct(0)), DefaultOptions())
	assert.Equal(t, 1000.0, d.P99TTFTMs)
}

func TestP99TTFTBreakdown(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name string
		logs []RequestLog
		want TTFTBreakdown
	}{
		{"the slowest 1% of 100: the two at or above the p99",
			with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs, r.PrefillMs = 900, 100 }),
			TTFTBreakdown{Requests: 2, MeanTTFTMs: f(1000), MeanQueueWaitMs: f(900), MeanPrefillMs: f(100),
				QueueWaitSharePct: f(90), PrefillSharePct: f(10), MeanRecomputePenaltyMs: f(0)}},
		{"ties at the p99 are all slow",
			with(steady(100, 10, 40), 3, func(r *RequestLog) { r.QueueWaitMs, r.PrefillMs = 100, 900 }),
			TTFTBreakdown{Requests: 3, MeanTTFTMs: f(1000), MeanQueueWaitMs: f(100), MeanPrefillMs: f(900),
				QueueWaitSharePct: f(10), PrefillSharePct: f(90), MeanRecomputePenaltyMs: f(0)}},
		{"shares of the summed TTFT, recompute beside them",
			with(with(steady(100, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs, r.PrefillMs = 300, 100 }), 1,
				func(r *RequestLog) {
					r.QueueWaitMs, r.PrefillMs, r.Preempted, r.RecomputePenaltyMs = 100, 300, true, 800
				}),
			TTFTBreakdown{Requests: 2, MeanTTFTMs: f(400), MeanQueueWaitMs: f(200), MeanPrefillMs: f(200),
				QueueWaitSharePct: f(50), PrefillSharePct: f(50), MeanRecomputePenaltyMs: f(400), Preempted: 1}},
		{"TTFT 0 everywhere: no shares",
			steady(5, 0, 0),
			TTFTBreakdown{Requests: 5, MeanTTFTMs: f(0), MeanQueueWaitMs: f(0), MeanPrefillMs: f(0), MeanRecomputePenaltyMs: f(0)}},
		{"one request", steady(1, 3, 1),
			TTFTBreakdown{Requests: 1, MeanTTFTMs: f(4), MeanQueueWaitMs: f(3), MeanPrefillMs: f(1),
				QueueWaitSharePct: f(75), PrefillSharePct: f(25), MeanRecomputePenaltyMs: f(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, diagnosisOf(t, tt.logs, DefaultOptions()).P99TTFTBreakdown)
		})
	}
}

func TestLongPromptsFinding(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	slowWith := func(prompt int64, queueMs, prefillMs float64) []RequestLog {
		return with(steady(100, 10, 40), 2, func(r *RequestLog) { r.PromptTokens, r.QueueWaitMs, r.PrefillMs = prompt, queueMs, prefillMs })
	}
	tests := []struct {
		name string
		logs []RequestLog
		want LongPromptsFinding
	}{
		{"long prompts prefilling: present", slowWith(4600, 160, 2800),
			LongPromptsFinding{Present: true, SlowMedianPromptTokens: 4600, MedianPromptTokens: 100, Ratio: f(46), ThresholdRatio: 2,
				PrefillSharePct: f(94.6), ThresholdPrefillSharePct: 50}},
		{"exactly twice the median and half the TTFT: present", slowWith(200, 500, 500),
			LongPromptsFinding{Present: true, SlowMedianPromptTokens: 200, MedianPromptTokens: 100, Ratio: f(2), ThresholdRatio: 2,
				PrefillSharePct: f(50), ThresholdPrefillSharePct: 50}},
		{"long prompts behind a long queue: the queue is the cause", slowWith(4600, 30000, 2800),
			LongPromptsFinding{Present: false, SlowMedianPromptTokens: 4600, MedianPromptTokens: 100, Ratio: f(46), ThresholdRatio: 2,
				PrefillSharePct: f(8.5), ThresholdPrefillSharePct: 50}},
		{"slow prompts like the others", slowWith(199, 10, 2800),
			LongPromptsFinding{Present: false, SlowMedianPromptTokens: 199, MedianPromptTokens: 100, Ratio: f(1.99), ThresholdRatio: 2,
				PrefillSharePct: f(99.6), ThresholdPrefillSharePct: 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, diagnosisOf(t, tt.logs, DefaultOptions()).Findings.LongPrompts)
		})
	}
}

func TestOverloadFinding(t *testing.T) {
	// fifo serves prefills one at a time (serviceS each) in arrival order.
	fifo := func(arrivals []float64, serviceS float64) []RequestLog {
		logs := steady(len(arrivals), 0, serviceS*1000)
		free := 0.0
		for i, at := range arrivals {
			start := max(at, free)
			free = start + serviceS
			logs[i].QueueWaitMs = (start - at) * 1000
		}
		return logs
	}
	every := func(n int, gapS float64) []float64 {
		at := make([]float64, n)
		for i := range at {
			at[i] = float64(i) * gapS
		}
		return at
	}
	b := func(v bool) *bool { return &v }
	n := func(v int) *int { return &v }
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name     string
		arrivals []float64
		serviceS float64
		want     OverloadFinding
	}{
		{"arrivals at half the service rate: no queue, no overload", every(100, 1), 0.5,
			OverloadFinding{Present: b(false), IntervalStartS: f(0), IntervalEndS: f(99), IntervalS: f(99),
				Arrivals: n(99), Admissions: n(99), Completions: n(99), ArrivalRatePerS: f(1), AdmissionRatePerS: f(1), CompletionRatePerS: f(1),
				QueuedAtStart: n(0), QueuedAtEnd: n(0), ArrivalsOutpaceAdmissions: b(false), BacklogExceedsAdmissions: b(false), ThresholdRatio: 1.1}},
		{"arrivals at twice the service rate: the queue grows to the end (the earliest of two arrivals finding 49 queued)", every(100, 0.5), 1,
			OverloadFinding{Present: b(true), IntervalStartS: f(0), IntervalEndS: f(49), IntervalS: f(49),
				Arrivals: n(98), Admissions: n(49), Completions: n(48), ArrivalRatePerS: f(2), AdmissionRatePerS: f(1), CompletionRatePerS: f(0.98),
				QueuedAtStart: n(0), QueuedAtEnd: n(49), ArrivalsOutpaceAdmissions: b(true), BacklogExceedsAdmissions: b(false), ThresholdRatio: 1.1}},
		{"an overload then a lull: measured up to the longest queue", append(every(100, 0.5), 60, 90, 120, 150), 1,
			OverloadFinding{Present: b(true), IntervalStartS: f(0), IntervalEndS: f(49), IntervalS: f(49),
				Arrivals: n(98), Admissions: n(49), Completions: n(48), ArrivalRatePerS: f(2), AdmissionRatePerS: f(1), CompletionRatePerS: f(0.98),
				QueuedAtStart: n(0), QueuedAtEnd: n(49), ArrivalsOutpaceAdmissions: b(true), BacklogExceedsAdmissions: b(false), ThresholdRatio: 1.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := timedDiagnosisOf(t, fifo(tt.arrivals, tt.serviceS), tt.arrivals)
			assert.Equal(t, tt.want, d.Findings.Overload)
		})
	}

	// Without arrival times, or all at one instant, overload cannot be told.
	unknown := OverloadFinding{ThresholdRatio: OverloadArrivalRatio}
	assert.Equal(t, unknown, diagnosisOf(t, steady(10, 5, 5), DefaultOptions()).Findings.Overload)
	assert.Equal(t, unknown, timedDiagnosisOf(t, steady(3, 5, 5), []float64{7, 7, 7}).Findings.Overload)
	acc := NewAccumulator(2)
	require.NoError(t, acc.AddRecord(Record{Log: steady(1, 5, 5)[0], ArrivalS: 1, Arrival: ArrivalSeconds}))
	require.NoError(t, acc.Add(steady(1, 5, 5)[0]))
	d, err := acc.Diagnosis("w", DefaultOptions())
	require.NoError(t, err)
	assert.Nil(t, d.Findings.Overload.Present, "one request without an arrival time")
	out, err := json.Marshal(d.Findings.Overload)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"present":null`)

	// By window: the lull's first window inherits the queue, its next one
	// does not.
	arrivals := append(every(120, 0.5), 70, 75, 80, 85, 130, 135)
	logs := fifo(arrivals, 1)
	w, err := NewWindower(30)
	require.NoError(t, err)
	for i, r := range logs {
		require.NoError(t, w.Add(Record{Log: r, ArrivalS: arrivals[i], Arrival: ArrivalSeconds}))
	}
	report, err := w.Report("w", DefaultOptions())
	require.NoError(t, err)
	type counts struct {
		present, outpace, backlog                             bool
		arrivals, admissions, completions, queued0, queuedEnd int
	}
	var got []counts
	for _, win := range report.Windows {
		o := win.Findings.Overload
		got = append(got, counts{*o.Present, *o.ArrivalsOutpaceAdmissions, *o.BacklogExceedsAdmissions,
			*o.Arrivals, *o.Admissions, *o.Completions, *o.QueuedAtStart, *o.QueuedAtEnd})
		assert.Equal(t, 30.0, *o.IntervalS)
	}
	assert.Equal(t, []counts{
		{true, true, false, 60, 30, 29, 0, 30},  // [0, 30): 2/s in, 1/s admitted
		{true, true, false, 60, 30, 30, 30, 60}, // [30, 60): the queue grows on
		{true, false, true, 4, 30, 30, 60, 34},  // [60, 90): the lull, 60 queued at its start
		{false, false, false, 2, 6, 7, 4, 0},    // [120, 150): the queue is worked off
	}, got)
}

func TestNoPrefixCacheFinding(t *testing.T) {
	w, err := NewWindower(10)
	require.NoError(t, err)
	cached := steady(3, 10, 40)                      // 50 tokens cached each
	cold := with(steady(3, 10, 40), 3, cachedPct(0)) // none cached
	for i, r := range append(cold, cached...) {
		require.NoError(t, w.Add(Record{Log: r, ArrivalS: float64(i * 5), Arrival: ArrivalSeconds}))
	}
	report, err := w.Report("w", DefaultOptions())
	require.NoError(t, err)
	require.Len(t, report.Windows, 3)
	assert.Equal(t, NoPrefixCacheFinding{Present: false, RequestsWithCachedTokens: 0, LogRequests: 6, LogRequestsWithCachedTokens: 3},
		report.Windows[0].Findings.NoPrefixCache, "a cold window in a log with a cache: the cache exists")
	assert.Equal(t, NoPrefixCacheFinding{Present: false, RequestsWithCachedTokens: 2, LogRequests: 6, LogRequestsWithCachedTokens: 3},
		report.Windows[2].Findings.NoPrefixCache)

	d := diagnosisOf(t, with(steady(100, 500, 600), 100, cachedPct(0)), DefaultOptions())
	assert.Equal(t, HypothesisColdPrefix, d.DiagnosticHypothesis)
	assert.Equal(t, NoPrefixCacheFinding{Present: true, LogRequests: 100}, d.Findings.NoPrefixCache,
		"a log without any cached token cannot back a cold-cache verdict")
}

// TestMisleadingVerdictsOfIssue30 reproduces the two cases of issue 30,
// item 10 with small logs shaped like simulate's (testdata/refgen/
// evidence_logs.py): the seed's verdicts stay, and the evidence says what
// they leave out.
func TestMisleadingVerdictsOfIssue30(t *testing.T) {
	read := func(t *testing.T, name string, byWindowS float64) []Diagnosis {
		t.Helper()
		_, diagnoses, err := Logs([]string{filepath.Join("testdata", "logs", name)}, openFile(""), name, byWindowS, DefaultOptions())
		require.NoError(t, err)
		return diagnoses
	}
	t.Run("a one-GPU overload without a prefix cache is labelled a cold prefix-cache burst", func(t *testing.T) {
		for _, byWindowS := range []float64{0, 60} {
			diagnoses := read(t, "overload.csv", byWindowS)
			overloaded := 0
			for _, d := range diagnoses {
				assert.Equal(t, HypothesisColdPrefix, d.DiagnosticHypothesis, "the seed's verdict stays")
				assert.GreaterOrEqual(t, *d.P99TTFTBreakdown.QueueWaitSharePct, 98.0, "%s: the p99 TTFT is queue wait", d.WindowName)
				assert.True(t, d.Findings.NoPrefixCache.Present, d.WindowName)
				assert.False(t, d.Findings.LongPrompts.Present, d.WindowName)
				if *d.Findings.Overload.Present {
					overloaded++
				}
			}
			if byWindowS == 0 {
				o := diagnoses[0].Findings.Overload
				assert.True(t, *o.Present)
				assert.Equal(t, 3.0, *o.ArrivalRatePerS)
				assert.InDelta(t, 2.0, *o.AdmissionRatePerS, 0.01, "the prefills take 2 requests/s")
			} else {
				assert.Equal(t, 2, overloaded, "the two windows of arrivals at 3/s; not the one that works the backlog off")
			}
		}
	})
	t.Run("slow long prompts on a fleet are labelled head-of-line blocking", func(t *testing.T) {
		for _, byWindowS := range []float64{0, 60} {
			for _, d := range read(t, "long_prompt_fleet.csv", byWindowS) {
				assert.Equal(t, HypothesisHeadOfLine, d.DiagnosticHypothesis, "the seed's verdict stays")
				b := d.P99TTFTBreakdown
				assert.Equal(t, 160.0, *b.MeanQueueWaitMs, d.WindowName)
				assert.Equal(t, 2800.0, *b.MeanPrefillMs, d.WindowName)
				assert.Equal(t, 94.6, *b.PrefillSharePct, d.WindowName)
				l := d.Findings.LongPrompts
				assert.True(t, l.Present, d.WindowName)
				assert.Equal(t, int64(4600), l.SlowMedianPromptTokens)
				assert.False(t, *d.Findings.Overload.Present, d.WindowName)
				assert.True(t, d.Findings.NoPrefixCache.Present, d.WindowName)
			}
		}
	})
}

// TestDiagnosisJSONIsFinite: values that overflow to infinity are null:
// the evidence holds no NaN or infinity even for encoding/json, and the
// document the command writes (jsonout) none either.
func TestDiagnosisJSONIsFinite(t *testing.T) {
	logs := with(steady(3, 10, 40), 2, func(r *RequestLog) { r.QueueWaitMs, r.PrefillMs = math.MaxFloat64, math.MaxFloat64 })
	d := diagnosisOf(t, logs, DefaultOptions())
	_, err := json.Marshal(d.Snapshot)
	require.Error(t, err, "the seed's p99 TTFT is infinite")
	evidence, err := json.Marshal(struct {
		E []RuleEvidence
		B TTFTBreakdown
		F Findings
	}{d.Evidence, d.P99TTFTBreakdown, d.Findings})
	require.NoError(t, err)
	assert.Contains(t, string(evidence), `"observed":null`)
	chunks, err := jsonout.Chunks(d)
	require.NoError(t, err)
	out := bytes.Join(chunks, nil)
	require.True(t, json.Valid(out))
	assert.Contains(t, string(out), `"observed": null`)
	assert.Contains(t, string(out), `"mean_ttft_ms": null`)
	assert.Contains(t, string(out), `"p99_ttft_ms": null`)
	assert.NotContains(t, strings.ToLower(string(out)), "nan")
	assert.NotContains(t, strings.ToLower(string(out)), "inf")
}

// TestDiagnosisTable: the table carries the shares and findings in each
// row and every window's evidence below.
func TestDiagnosisTable(t *testing.T) {
	_, diagnoses, err := Logs([]string{filepath.Join("testdata", "logs", "overload.csv")}, openFile(""), "o", 60, DefaultOptions())
	require.NoError(t, err)
	table := DiagnosisTable(diagnoses)
	lines := strings.Split(table, "\n")
	assert.Regexp(t, `diagnosis +queue of p99 TTFT \(%\) +prefill of p99 TTFT \(%\) +findings$`, lines[0])
	assert.Regexp(t, `^o \[0s, 60s\) .* cold_prefix_cache_miss_burst +98\.\d +1\.\d +overload, no_prefix_cache$`, lines[1])
	for _, d := range diagnoses {
		assert.Contains(t, table, "\n"+d.WindowName+": cold_prefix_cache_miss_burst\n")
	}
	assert.Equal(t, 3, strings.Count(table, "  cold_prefix_cache_miss_burst                 yes *    prefix_cache_hit_rate_pct 0 < 20 (cold_prefix_hit_pct): yes; p99_ttft_ms "))
	assert.Contains(t, table, "  head_of_line_prefill_queue_blocking          no       p99_ttft_ms ")
	assert.Contains(t, table, "  no_prefix_cache: yes: 0 of the log's 372 requests have cached prompt tokens (0 in this window)\n")
	assert.Contains(t, table, "  overload: yes: in 60 s from 0 s, 180 arrivals (3/s), ")
	assert.Regexp(t, `  p99 TTFT breakdown: 2 slow requests, mean TTFT [\d.]+ ms = queue wait [\d.]+ ms \(98\.\d%\) \+ prefill [\d.]+ ms \(1\.\d%\)`, table)

	unknown := diagnosisOf(t, steady(3, 1, 1), DefaultOptions())
	table = DiagnosisTable([]Diagnosis{unknown})
	assert.Contains(t, table, "\n  overload: cannot tell (not every request has an arrival time, or they all arrive at one instant)\n")
	assert.Regexp(t, `(?m)^w .* no_rule_matched +50\.0 +50\.0 +overload\?$`, table)
}
