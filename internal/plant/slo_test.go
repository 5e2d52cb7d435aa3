package plant

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/numeric"
	"servesim/internal/profile"
)

// sloRecords are seven requests: five completed (one with a single output
// token), one that got its first token only and one that never started.
// The expected numbers in the tests below were computed with numpy
// (np.percentile, linear) from the same times.
func sloRecords() []RequestRecord {
	nan := math.NaN()
	rec := func(arrival, first, completion float64, output int) RequestRecord {
		return RequestRecord{ArrivalTimeS: arrival, PrefillStartS: nan, FirstTokenTimeS: first,
			CompletionTimeS: completion, PromptTokens: 100, OutputTokens: output}
	}
	return []RequestRecord{
		rec(0.0, 0.3, 1.2, 31),
		rec(0.5, 1.1, 2.0, 1),
		rec(1.0, 1.4, 5.0, 101),
		rec(1.2, 2.0, 2.5, 11),
		rec(2.0, 2.4, nan, 50),
		rec(3.0, nan, nan, 20),
		rec(3.1, 3.6, 4.1, 2),
	}
}

func TestRequestLatenciesFollowTheReference(t *testing.T) {
	records := sloRecords()
	tests := []struct {
		i                   int
		ttft, tpot, latency float64
		completed           bool
	}{
		{0, 0.3, 0.9 / 30, 1.2, true},
		{1, 0.6000000000000001, 0.8999999999999999, 1.5, true}, // one output token: divided by max(1, 0)
		{2, 0.3999999999999999, 0.036000000000000004, 4.0, true},
		{6, 0.5, 0.49999999999999956, 0.9999999999999996, true}, // two output tokens: divided by 1
		{4, 0.3999999999999999, math.NaN(), math.NaN(), false},
		{5, math.NaN(), math.NaN(), math.NaN(), false},
	}
	for _, tt := range tests {
		r := &records[tt.i]
		assert.Equal(t, tt.completed, r.Completed(), "request %d", tt.i)
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"ttft", r.TTFTS(), tt.ttft}, {"tpot", r.TPOTS(), tt.tpot}, {"latency", r.LatencyS(), tt.latency}} {
			if math.IsNaN(c.want) {
				assert.True(t, math.IsNaN(c.got), "request %d %s: %v", tt.i, c.name, c.got)
			} else {
				assert.InDelta(t, c.want, c.got, 1e-15, "request %d %s", tt.i, c.name)
			}
		}
	}
}

func TestSLOMetJudgesEveryObjective(t *testing.T) {
	records := sloRecords()
	tests := []struct {
		name string
		slo  SLO
		want []bool // per request
	}{
		// Request 3 has a TPOT of exactly 0.05: at the objective meets it.
		{"tight", SLO{TTFTSeconds: 0.5, TPOTSeconds: 0.05}, []bool{true, false, true, false, false, false, false}},
		// Request 1's TTFT is 0.6000000000000001: above an objective of 0.6.
		{"ttft 0.6", SLO{TTFTSeconds: 0.6, TPOTSeconds: 0.05}, []bool{true, false, true, false, false, false, false}},
		{"with e2e", SLO{TTFTSeconds: 0.6, TPOTSeconds: 0.05, E2ESeconds: 1.5}, []bool{true, false, false, false, false, false, false}},
		{"loose", SLO{TTFTSeconds: 1, TPOTSeconds: 1}, []bool{true, true, true, true, false, false, true}},
		{"loose e2e", SLO{TTFTSeconds: 1, TPOTSeconds: 1, E2ESeconds: 1}, []bool{false, false, false, false, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range records {
				assert.Equal(t, tt.want[i], tt.slo.Met(&records[i]), "request %d", i)
			}
		})
	}
}

func TestEvaluateSLOMatchesNumpy(t *testing.T) {
	tests := []struct {
		name       string
		slo        SLO
		met        int
		attainment float64
	}{
		{"tight", SLO{TTFTSeconds: 0.5, TPOTSeconds: 0.05}, 2, 0.2857142857142857},
		{"with e2e", SLO{TTFTSeconds: 0.6, TPOTSeconds: 0.05, E2ESeconds: 1.5}, 1, 0.14285714285714285},
		{"loose", SLO{TTFTSeconds: 1, TPOTSeconds: 1}, 5, 0.7142857142857143},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EvaluateSLO(sloRecords(), tt.slo, 10)
			assert.Equal(t, tt.slo.TTFTSeconds, got.TTFTSLOSeconds)
			assert.Equal(t, tt.slo.TPOTSeconds, got.TPOTSLOSeconds)
			if tt.slo.E2ESeconds == 0 {
				assert.Nil(t, got.E2ESLOSeconds)
			} else {
				require.NotNil(t, got.E2ESLOSeconds)
				assert.Equal(t, tt.slo.E2ESeconds, *got.E2ESLOSeconds)
			}
			assert.Equal(t, tt.met, got.RequestsMeetingSLO)
			assert.Equal(t, tt.attainment, got.Attainment, "unfinished requests count as misses")
			assert.Equal(t, float64(tt.met)/10, got.GoodputRequestsPerS)
			// np.percentile(values, [50, 90, 99]) over the five completed requests.
			assert.InDelta(t, 0.5, got.TTFTS.P50, 1e-15)
			assert.InDelta(t, 0.7200000000000001, got.TTFTS.P90, 1e-15)
			assert.InDelta(t, 0.792, got.TTFTS.P99, 1e-15)
			assert.InDelta(t, 0.05, got.TPOTS.P50, 1e-15)
			assert.InDelta(t, 0.7399999999999998, got.TPOTS.P90, 1e-15)
			assert.InDelta(t, 0.8839999999999999, got.TPOTS.P99, 1e-15)
			assert.InDelta(t, 1.3, got.E2ES.P50, 1e-15)
			assert.InDelta(t, 3.0, got.E2ES.P90, 1e-15)
			assert.InDelta(t, 3.9, got.E2ES.P99, 1e-15)
		})
	}
}

func TestEvaluateSLOWithoutCompletedRequests(t *testing.T) {
	records := sloRecords()[4:6]
	got := EvaluateSLO(records, SLO{TTFTSeconds: 1, TPOTSeconds: 1}, 0.1)
	assert.Zero(t, got.RequestsMeetingSLO)
	assert.Zero(t, got.Attainment)
	assert.Zero(t, got.GoodputRequestsPerS)
	for _, p := range []Percentiles{got.TTFTS, got.TPOTS, got.E2ES} {
		assert.True(t, math.IsNaN(p.P50) && math.IsNaN(p.P90) && math.IsNaN(p.P99), "%+v", p)
	}
}

func TestSLOValidateAndOrProfile(t *testing.T) {
	prof := profile.Default()
	assert.Equal(t, SLO{TTFTSeconds: prof.TTFTSLOSeconds(), TPOTSeconds: prof.TPOTSLOSeconds()}, ProfileSLO(prof))
	assert.Equal(t, ProfileSLO(prof), SLO{}.OrProfile(prof))
	assert.Equal(t, SLO{TTFTSeconds: 2, TPOTSeconds: prof.TPOTSLOSeconds(), E2ESeconds: 9}, SLO{TTFTSeconds: 2, E2ESeconds: 9}.OrProfile(prof))
	assert.Equal(t, SLO{TTFTSeconds: prof.TTFTSLOSeconds(), TPOTSeconds: 0.1}, SLO{TPOTSeconds: 0.1}.OrProfile(prof))

	require.NoError(t, SLO{}.Validate())
	require.NoError(t, SLO{TTFTSeconds: 1, TPOTSeconds: 0.1, E2ESeconds: 30}.Validate())
	for _, tt := range []struct {
		slo  SLO
		want string
	}{
		{SLO{TTFTSeconds: -1}, "ttft_slo_s -1: must be finite and positive"},
		{SLO{TPOTSeconds: math.NaN()}, "tpot_slo_s NaN"},
		{SLO{E2ESeconds: math.Inf(1)}, "e2e_slo_s +Inf"},
	} {
		assert.ErrorContains(t, tt.slo.Validate(), tt.want)
	}
	_, err := Simulate(smallWorkload(t), NewPlant(prof), ChunkedPrefill{}, MaxClock{}, Options{SLO: SLO{E2ESeconds: -2}})
	assert.EqualError(t, err, "e2e_slo_s -2: must be finite and positive")
}

func TestSimulateJudgesByTheGivenSLO(t *testing.T) {
	requests := smallWorkload(t)
	prof := profile.Default()
	p := NewPlant(prof)
	byDefault, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{})
	require.NoError(t, err)
	byProfile, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{SLO: ProfileSLO(prof)})
	require.NoError(t, err)
	assert.Equal(t, byDefault, byProfile, "a zero SLO is the profile's")

	duration := math.Max(byDefault.TimeS[len(byDefault.TimeS)-1]-byDefault.TimeS[0], p.TimeStepS)
	assert.Equal(t, EvaluateSLO(byDefault.Requests, ProfileSLO(prof), duration), byDefault.SLO)
	assert.Equal(t, byDefault.Metrics.P95TTFTS, numericPercentile(byDefault.Requests, (*RequestRecord).TTFTS, 95))
	assert.Greater(t, byDefault.SLO.Attainment, 0.0)
	assert.Less(t, byDefault.SLO.Attainment, 1.0)

	loose := SLO{TTFTSeconds: 30, TPOTSeconds: 0.2, E2ESeconds: 600}
	judged, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{SLO: loose})
	require.NoError(t, err)
	assert.Equal(t, byDefault.Trajectory, judged.Trajectory, "objectives never change the run")
	assert.Equal(t, byDefault.Requests, judged.Requests)
	assert.Less(t, judged.Metrics.TTFTViolationRate, byDefault.Metrics.TTFTViolationRate, "violation rates use the given SLO")
	assert.Equal(t, fractionAboveOf(judged.Requests, (*RequestRecord).TTFTS, 30), judged.Metrics.TTFTViolationRate)
	assert.Equal(t, fractionAboveOf(judged.Requests, (*RequestRecord).TPOTS, 0.2), judged.Metrics.TPOTViolationRate)
	assert.Equal(t, EvaluateSLO(judged.Requests, loose, duration), judged.SLO)
	assert.Greater(t, judged.SLO.Attainment, byDefault.SLO.Attainment)

	summary, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{SLO: loose, Summary: true})
	require.NoError(t, err)
	assert.Equal(t, judged.SLO, summary.SLO, "the slo block is kept without records")
	assert.Equal(t, judged.SLO, judged.Thinned(7, false).SLO)
}

func TestSLOBlockJSON(t *testing.T) {
	e2e := 4.5
	data, err := json.Marshal(SLOReport{TTFTSLOSeconds: 0.5, TPOTSLOSeconds: 0.03, E2ESLOSeconds: &e2e, RequestsMeetingSLO: 3,
		Attainment: 0.75, GoodputRequestsPerS: 0.3, TTFTS: Percentiles{1, 2, 3}, TPOTS: Percentiles{4, 5, 6}, E2ES: Percentiles{7, 8, 9}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"ttft_slo_s":0.5,"tpot_slo_s":0.03,"e2e_slo_s":4.5,"requests_meeting_slo":3,"attainment":0.75,
		"goodput_requests_per_s":0.3,"ttft_s":{"p50":1,"p90":2,"p99":3},"tpot_s":{"p50":4,"p90":5,"p99":6},
		"e2e_s":{"p50":7,"p90":8,"p99":9}}`, string(data))
}

// numericPercentile is the linear percentile q of value over the completed
// records, sorting a copy.
func numericPercentile(records []RequestRecord, value func(*RequestRecord) float64, q float64) float64 {
	var values []float64
	for i := range records {
		if records[i].Completed() {
			values = append(values, value(&records[i]))
		}
	}
	return numeric.PercentileLinear(values, q)
}

// fractionAboveOf is the share of completed records whose value exceeds
// limit.
func fractionAboveOf(records []RequestRecord, value func(*RequestRecord) float64, limit float64) float64 {
	above, n := 0, 0
	for i := range records {
		if records[i].Completed() {
			n++
			if value(&records[i]) > limit {
				above++
			}
		}
	}
	return float64(above) / float64(n)
}

// BenchmarkEvaluateSLO judges a million completed requests: the cost the
// slo block adds to a run of a synthetic day.
func BenchmarkEvaluateSLO(b *testing.B) {
	const n = 1_000_000
	records := make([]RequestRecord, n)
	for i := range records {
		arrival := float64(i) * 0.0864
		first := arrival + 0.2 + float64(i*7919%1000)/100
		records[i] = RequestRecord{RequestID: i, ArrivalTimeS: arrival, FirstTokenTimeS: first,
			CompletionTimeS: first + float64(i*104729%500)/50, OutputTokens: 1 + i%300}
	}
	slo := SLO{TTFTSeconds: 5, TPOTSeconds: 0.05, E2ESeconds: 20}
	b.ReportAllocs()
	for b.Loop() {
		EvaluateSLO(records, slo, 86_400)
	}
}
