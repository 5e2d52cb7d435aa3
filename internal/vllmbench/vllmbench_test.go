package vllmbench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// handRecords are five requests: three completed (A: 3 output tokens,
// B: 1, C: 5), D unfinished after its first token, E unfinished before.
func handRecords() []plant.RequestRecord {
	nan := math.NaN()
	return []plant.RequestRecord{
		{RequestID: 0, ArrivalTimeS: 0, PrefillStartS: 0, FirstTokenTimeS: 0.5, CompletionTimeS: 1.5, PromptTokens: 10, OutputTokens: 3},
		{RequestID: 1, ArrivalTimeS: 1, PrefillStartS: 1, FirstTokenTimeS: 1.25, CompletionTimeS: 1.25, PromptTokens: 20, OutputTokens: 1},
		{RequestID: 2, ArrivalTimeS: 2, PrefillStartS: 2.5, FirstTokenTimeS: 3, CompletionTimeS: 7, PromptTokens: 30, OutputTokens: 5},
		{RequestID: 3, ArrivalTimeS: 3, PrefillStartS: 3, FirstTokenTimeS: 3.5, CompletionTimeS: nan, PromptTokens: 50, OutputTokens: 10},
		{RequestID: 4, ArrivalTimeS: 4, PrefillStartS: nan, FirstTokenTimeS: nan, CompletionTimeS: nan, PromptTokens: 60, OutputTokens: 2},
	}
}

// The expected statistics are worked out by hand below; numpy agrees
// (np.mean, np.median, np.std, np.percentile(v, 99) of each list, x 1000).
func TestEveryStatisticByHand(t *testing.T) {
	// A and B meet TTFT 0.6 s and TPOT 0.6 s (B's TPOT is 0 s); C does not.
	slo := plant.SLO{TTFTSeconds: 0.6, TPOTSeconds: 0.6}
	got := Compute(handRecords(), func(int) plant.SLO { return slo })
	const tol = 1e-9
	// The benchmark runs from the first arrival (0 s) to the last
	// completion (7 s).
	assert.Equal(t, 7.0, got.DurationS)
	assert.Equal(t, 3, got.Completed)
	assert.Equal(t, 2, got.Failed)
	assert.Equal(t, 60, got.TotalInputTokens, "completed requests only: 10+20+30")
	assert.Equal(t, 9, got.TotalOutputTokens, "3+1+5")
	assert.InDelta(t, 3.0/7, got.RequestThroughput, tol)
	assert.InDelta(t, 2.0/7, got.RequestGoodput, tol)
	assert.InDelta(t, 9.0/7, got.OutputThroughput, tol)
	assert.InDelta(t, 69.0/7, got.TotalTokenThroughput, tol)
	assert.Equal(t, []int{10, 20, 30, 50, 60}, got.InputLens)
	assert.Equal(t, []int{3, 1, 5, 0, 0}, got.OutputLens)
	assert.Equal(t, []float64{0.5, 0.25, 1, 0.5, 0}, got.TTFTs)
	assert.Equal(t, []float64{1.5, 0.25, 5, 0, 0}, got.Latencies)

	// TTFT of the completed requests [0.5, 0.25, 1] s: mean 7/12, median
	// 0.5, population variance (1/144 + 16/144 + 25/144)/3 = 7/72, p99
	// at index 1.98 of [0.25, 0.5, 1]: 0.5 + 0.98 x 0.5 = 0.99.
	assert.InDelta(t, 7000.0/12, got.MeanTTFTMs, tol)
	assert.InDelta(t, 500, got.MedianTTFTMs, tol)
	assert.InDelta(t, 1000*math.Sqrt(7.0/72), got.StdTTFTMs, tol)
	assert.InDelta(t, 990, got.P99TTFTMs, tol)
	// TPOT of the requests with more than one output token, A 0.5 s and C
	// 1 s: mean and median 0.75, std 0.25, p99 0.5 + 0.99 x 0.5.
	assert.InDelta(t, 750, got.MeanTPOTMs, tol)
	assert.InDelta(t, 750, got.MedianTPOTMs, tol)
	assert.InDelta(t, 250, got.StdTPOTMs, tol)
	assert.InDelta(t, 995, got.P99TPOTMs, tol)
	// ITL, one per token after the first: A's 0.5 s twice, C's 1 s four
	// times. Mean 5/6, median 1, variance (2/9 + 4/36)/6 = 1/18, p99 1.
	assert.InDelta(t, 5000.0/6, got.MeanITLMs, tol)
	assert.InDelta(t, 1000, got.MedianITLMs, tol)
	assert.InDelta(t, 1000*math.Sqrt(1.0/18), got.StdITLMs, tol)
	assert.InDelta(t, 1000, got.P99ITLMs, tol)
	// E2EL [1.5, 0.25, 5] s: mean 2.25, median 1.5, variance (0.5625 + 4 +
	// 7.5625)/3, p99 1.5 + 0.98 x 3.5 = 4.93.
	assert.InDelta(t, 2250, got.MeanE2ELMs, tol)
	assert.InDelta(t, 1500, got.MedianE2ELMs, tol)
	assert.InDelta(t, 1000*math.Sqrt(12.125/3), got.StdE2ELMs, tol)
	assert.InDelta(t, 4930, got.P99E2ELMs, tol)
}

func TestNothingCompletedIsZerosAsInVLLM(t *testing.T) {
	records := handRecords()[3:]
	got := Compute(records, func(int) plant.SLO { return plant.SLO{TTFTSeconds: 1, TPOTSeconds: 1} })
	assert.Equal(t, &Result{
		Failed:     2,
		InputLens:  []int{50, 60},
		OutputLens: []int{0, 0},
		TTFTs:      []float64{0.5, 0},
		Latencies:  []float64{0, 0},
	}, got)
}

func TestGoodputJudgesEachRequestByItsSLO(t *testing.T) {
	records := handRecords()
	// Request 2 alone gets an SLO it meets; 0 and 1 miss theirs.
	got := Compute(records, func(i int) plant.SLO {
		if i == 2 {
			return plant.SLO{TTFTSeconds: 1, TPOTSeconds: 1, E2ESeconds: 5}
		}
		return plant.SLO{TTFTSeconds: 0.1, TPOTSeconds: 1}
	})
	assert.InDelta(t, 1.0/7, got.RequestGoodput, 1e-12)
	// An end-to-end objective counts.
	got = Compute(records, func(int) plant.SLO { return plant.SLO{TTFTSeconds: 1, TPOTSeconds: 1, E2ESeconds: 1} })
	assert.InDelta(t, 1.0/7, got.RequestGoodput, 1e-12, "only B's 0.25 s latency is within 1 s")
}

func TestFromPlantAgreesWithTheSLOBlock(t *testing.T) {
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	p := plant.NewPlant(profile.Default())
	for _, opt := range []plant.Options{
		{Stride: 1},
		{Summary: true, RequestLog: true},
		{Summary: true, RequestLog: true, SLO: plant.SLO{TTFTSeconds: 0.2, E2ESeconds: 0.5}},
	} {
		res, err := plant.Simulate(w.Requests, p, plant.ChunkedPrefill{}, plant.MaxClock{}, opt)
		require.NoError(t, err)
		got, err := FromPlant(res)
		require.NoError(t, err)
		assert.Equal(t, len(w.Requests), got.Completed)
		assert.InDelta(t, float64(res.SLO.RequestsMeetingSLO)/got.DurationS, got.RequestGoodput, 1e-12, "%+v", opt)
		// The slo block's percentiles are numpy's too.
		assert.InDelta(t, res.SLO.TTFTS.P99*1000, got.P99TTFTMs, 1e-9)
		assert.InDelta(t, res.SLO.E2ES.P99*1000, got.P99E2ELMs, 1e-9)
		assert.InDelta(t, res.Metrics.MeanTTFTS*1000, got.MeanTTFTMs, 1e-9)
		assert.InDelta(t, res.Metrics.MeanLatencyS*1000, got.MeanE2ELMs, 1e-9)
	}
	res, err := plant.Simulate(w.Requests, p, plant.ChunkedPrefill{}, plant.MaxClock{}, plant.Options{Summary: true})
	require.NoError(t, err)
	_, err = FromPlant(res)
	assert.ErrorContains(t, err, "RequestLog")
}

func TestFromFleetJudgesByTheServingReplicasProfile(t *testing.T) {
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	strict := *profile.Default()
	strict.BaselineTTFTS /= 4 // a TTFT SLO a quarter of the default's
	prof := profile.Default()
	res, err := fleet.Simulate(w.Requests, fleet.Config{
		Plant: plant.NewPlant(prof),
		Groups: []fleet.Group{
			{Name: "a", Replicas: 1, Profile: prof, Scheduler: "chunked", Controller: "max"},
			{Name: "b", Replicas: 1, Profile: &strict, Scheduler: "chunked", Controller: "max"},
		},
		Options: plant.Options{Summary: true},
	})
	require.NoError(t, err)
	got := FromFleet(res, plant.SLO{})
	good := 0
	for i := range res.Requests {
		slo := plant.ProfileSLO(res.Groups[res.Replicas[res.Assignment[i]].Group].Profile)
		if slo.Met(&res.Requests[i]) {
			good++
		}
	}
	loose := Compute(res.Requests, func(int) plant.SLO { return plant.ProfileSLO(prof) })
	assert.InDelta(t, float64(good)/got.DurationS, got.RequestGoodput, 1e-12)
	assert.Less(t, got.RequestGoodput, loose.RequestGoodput, "group b's requests are judged by its stricter SLO")
	assert.Equal(t, len(w.Requests), got.Completed)
}
