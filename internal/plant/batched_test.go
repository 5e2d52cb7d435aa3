package plant

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/profile"
)

// batchedService is the batched model on the default cards.
func batchedService(t testing.TB) ServiceModel {
	t.Helper()
	gpu, ok := cards.BuiltinGPU(cards.DefaultGPU)
	require.True(t, ok)
	model, ok := cards.BuiltinModel(cards.DefaultModel)
	require.True(t, ok)
	return NewBatchedService(gpu, model)
}

// batchedPlant is the embedded proxy with the default cards' KV capacity.
func batchedPlant(t testing.TB, svc ServiceModel) Plant {
	t.Helper()
	p := NewPlant(profile.Default())
	kv, err := svc.KVCapacityTokens()
	require.NoError(t, err)
	p.KVCapacityTokens = kv
	return p
}

// batchedOptions are summary options of the batched model preempting as
// vLLM does.
func batchedOptions(svc ServiceModel) Options {
	return Options{Service: svc, Engine: EngineOptions{Preemption: PreemptionRecompute}}
}

// simultaneous is n requests of prompt and output tokens at time 0.
func simultaneous(n, prompt, output int) []Request {
	requests := make([]Request, n)
	for i := range requests {
		requests[i] = Request{ID: i, PromptTokens: prompt, OutputTokens: output}
	}
	return requests
}

func TestBatchedResultsDoNotDependOnTheTimeStep(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	trace := DefaultTraceConfig()
	trace.DurationS = 600
	loaded := trace.Requests()
	heavy := slices.Clone(loaded)
	for i := range heavy {
		heavy[i].ArrivalTimeS /= 4 // 4.8 requests/s: a queue builds
	}
	cases := []struct {
		name       string
		requests   []Request
		scheduler  Scheduler
		controller ClockController
	}{
		{"embedded trace, chunked, max", loaded, ChunkedPrefill{}, MaxClock{}},
		{"embedded trace, continuous, fixed 1230 MHz", loaded, ContinuousBatch{}, FixedClock{MHz: 1230}},
		{"embedded trace, static, min", loaded, StaticBatch{}, MinClock{}},
		{"four times the rate, chunked, max", heavy, ChunkedPrefill{}, MaxClock{}},
		{"closed loop of 4 at time 0", simultaneous(64, 700, 90), ChunkedPrefill{}, MaxClock{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var want Metrics
			for k, dt := range []float64{0.1, 0.01, 0.001} {
				p := batchedPlant(t, svc)
				p.TimeStepS = dt
				opt := batchedOptions(svc)
				opt.Summary = true
				if tc.name == "closed loop of 4 at time 0" {
					opt.MaxConcurrency = 4
				}
				res, err := Simulate(tc.requests, p, tc.scheduler, tc.controller, opt)
				require.NoError(t, err)
				got := res.Metrics
				require.Equal(t, 1.0, got.CompletedFraction)
				if k == 0 {
					want = got
					continue
				}
				for _, m := range []struct {
					name      string
					want, got float64
				}{
					{"throughput", want.OutputThroughputTokensPerS, got.OutputThroughputTokensPerS},
					{"mean TTFT", want.MeanTTFTS, got.MeanTTFTS},
					{"mean TPOT", want.MeanTPOTS, got.MeanTPOTS},
				} {
					assert.InDelta(t, 0, m.got/m.want-1, 0.02, "%s at time step %v: %v against %v at 0.1", m.name, dt, m.got, m.want)
				}
			}
		})
	}
}

func TestBatchedServesABatchPerIteration(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	// Decode throughput grows almost linearly with the batch: the weights
	// are read once per iteration whatever the batch.
	rate := func(n int) float64 {
		res, err := Simulate(simultaneous(n, 128, 256), p, ChunkedPrefill{}, MaxClock{}, batchedOptions(svc))
		require.NoError(t, err)
		last := 0.0
		for _, r := range res.Requests {
			last = max(last, r.CompletionTimeS)
		}
		return float64(n*256) / last
	}
	one, eight, sixtyFour := rate(1), rate(8), rate(64)
	assert.Greater(t, eight/one, 6.5, "8 requests decode %v tokens/s against %v alone", eight, one)
	assert.Greater(t, sixtyFour/one, 30.0, "64 requests decode %v tokens/s against %v alone", sixtyFour, one)
	// The reference shares one decode budget: no gain from the batch.
	ref := func(n int) float64 {
		res, err := Simulate(simultaneous(n, 128, 256), NewPlant(profile.Default()), ChunkedPrefill{}, MaxClock{}, Options{})
		require.NoError(t, err)
		return float64(n*256) / res.Metrics.MeanLatencyS
	}
	assert.Less(t, ref(8)/ref(1), 2.0)
}

func TestBatchedIterationTimeFollowsTheCards(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	p.PowerLimitW = 1e6 // no governor: the top level runs
	res, err := Simulate(simultaneous(1, 1024, 129), p, ChunkedPrefill{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	r := res.Requests[0]
	m, g := svc.Model, svc.GPU
	// One iteration prefills the prompt (within 2048 tokens) and gives the
	// first token: compute bound.
	flops := 1024*m.FLOPsPerToken() + m.AttentionFLOPs(0, 1024)
	assert.InDelta(t, g.IterationOverheadS+flops/(g.PeakTFLOPS*1e12*g.ComputeEfficiency), r.FirstTokenTimeS, 1e-9)
	// Each decode iteration reads the weights and the KV: memory bound.
	bytes := 0.0
	for k := range 128 {
		bytes += m.WeightGB*1e9 + m.KVBytesPerToken()*float64(1024+k+1)
	}
	decode := 128*g.IterationOverheadS + bytes/(g.MemoryBandwidthGBps*1e9*g.MemoryEfficiency)
	assert.InDelta(t, decode, r.CompletionTimeS-r.FirstTokenTimeS, 1e-9)
	assert.Equal(t, 0.0, r.PrefillStartS)
}

func TestBatchedAdmissionRules(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	svc.MaxNumBatchedTokens = 512
	p := batchedPlant(t, svc)
	// A 1500-token prompt: chunked prefill splits it into three
	// iterations; without chunking it runs whole in one.
	chunked, err := Simulate(simultaneous(1, 1500, 2), p, ChunkedPrefill{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	whole, err := Simulate(simultaneous(1, 1500, 2), p, ContinuousBatch{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	assert.Greater(t, chunked.Requests[0].FirstTokenTimeS, whole.Requests[0].FirstTokenTimeS+2*svc.GPU.IterationOverheadS*0.99)
	// Static batching admits no request while a batch runs.
	requests := []Request{{ID: 0, PromptTokens: 100, OutputTokens: 50}, {ID: 1, ArrivalTimeS: 0.05, PromptTokens: 100, OutputTokens: 5}}
	static, err := Simulate(requests, p, StaticBatch{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, static.Requests[1].PrefillStartS, static.Requests[0].CompletionTimeS)
	continuous, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	assert.Less(t, continuous.Requests[1].CompletionTimeS, continuous.Requests[0].CompletionTimeS)
	// max_num_seqs bounds the running requests.
	svc.MaxNumSeqs = 2
	capped, err := Simulate(simultaneous(4, 10, 20), p, ChunkedPrefill{}, MaxClock{}, batchedOptions(svc))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, capped.Requests[2].PrefillStartS, capped.Requests[0].CompletionTimeS)
}

func TestBatchedClosedLoopKeepsTheSlots(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	for _, model := range []string{ServiceReference, ServiceBatched} {
		for _, slots := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s, %d slots", model, slots), func(t *testing.T) {
				t.Parallel()
				p := batchedPlant(t, svc)
				opt := Options{MaxConcurrency: slots}
				if model == ServiceBatched {
					opt = batchedOptions(svc)
					opt.MaxConcurrency = slots
				}
				res, err := Simulate(simultaneous(10, 200, 20), p, ChunkedPrefill{}, MaxClock{}, opt)
				require.NoError(t, err)
				completions := make([]float64, 0, len(res.Requests))
				for i, r := range res.Requests {
					require.False(t, math.IsNaN(r.CompletionTimeS), "request %d completes", i)
					if i < slots {
						assert.Equal(t, 0.0, r.ArrivalTimeS, "the first %d are sent at once", slots)
					} else {
						// Sent when the (i - slots + 1)-th completion frees a slot.
						slices.Sort(completions)
						assert.InDelta(t, completions[i-slots], r.ArrivalTimeS, 1e-9, "request %d", i)
					}
					completions = append(completions, r.CompletionTimeS)
				}
			})
		}
	}
}

func TestBatchedPreemptsWhenKVRunsOut(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	p.KVCapacityTokens = 4096 // 256 blocks: eight 400-token requests outgrow it
	opt := batchedOptions(svc)
	res, err := Simulate(simultaneous(8, 400, 200), p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	assert.Equal(t, 1.0, res.Metrics.CompletedFraction)
	assert.LessOrEqual(t, res.Metrics.PeakKVTokens, 4096.0)
	sim, err := startSimulation(simultaneous(8, 400, 200), p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	require.NoError(t, sim.runToEnd(t.Context()))
	assert.Positive(t, sim.batched.preemptions)
	assert.Zero(t, sim.batched.usedBlocks, "every block is freed")
}

func TestBatchedReferenceUnchanged(t *testing.T) {
	t.Parallel()
	// The zero service model is the reference's: same run as no option.
	requests := DefaultTraceConfig().Requests()[:300]
	p := NewPlant(profile.Default())
	want, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{})
	require.NoError(t, err)
	got, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{Service: ServiceModel{Kind: ServiceReference}})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestBatchedStepAllocatesNothing(t *testing.T) {
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	trace := DefaultTraceConfig()
	requests := trace.Requests()
	for _, prefixCache := range []bool{false, true} {
		opt := batchedOptions(svc)
		opt.Summary = true
		opt.Engine.PrefixCache, opt.Engine.SharedPrefixTokens = prefixCache, 64*int(btoi(prefixCache))
		sim, err := startSimulation(requests, p, ChunkedPrefill{}, Reactive{}, opt)
		require.NoError(t, err)
		_, err = sim.steps(3000) // warm: the lists have grown
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(2000, func() {
			if _, err := sim.steps(1); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "prefix cache %v", prefixCache)
	}
}

// btoi is 1 for true.
func btoi(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestBatchedRefusesBadSettings(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	bad := svc
	bad.MaxNumSeqs = 0
	_, err := Simulate(simultaneous(1, 10, 10), p, ChunkedPrefill{}, MaxClock{}, Options{Service: bad})
	require.EqualError(t, err, "max_num_seqs 0: must be at least 1")
	bad = svc
	bad.Kind = "fluid"
	_, err = Simulate(simultaneous(1, 10, 10), p, ChunkedPrefill{}, MaxClock{}, Options{Service: bad})
	require.EqualError(t, err, `service_model "fluid": expected reference or batched`)
	_, err = Simulate(simultaneous(1, 10, 10), p, ChunkedPrefill{}, MaxClock{}, Options{Service: svc, MaxConcurrency: -1})
	require.EqualError(t, err, "max_concurrency -1: must be 0 (an open loop) or positive")
}

func TestBatchedPrefixCacheSkipsCachedPrefill(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	p.PowerLimitW = 1e6
	// Two requests one after the other sharing a 1,536-token prefix: the
	// second prefills only what the cache lacks.
	requests := []Request{{ID: 0, PromptTokens: 2000, OutputTokens: 4}, {ID: 1, ArrivalTimeS: 5, PromptTokens: 2000, OutputTokens: 4}}
	opt := batchedOptions(svc)
	opt.Engine.PrefixCache, opt.Engine.SharedPrefixTokens = true, 1536
	res, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	first := res.Requests[0].TTFTS()
	second := res.Requests[1].TTFTS()
	assert.Less(t, second, first/2, "the second prompt finds 1,536 of its 2,000 tokens cached")
	require.NotNil(t, res.Engine)
	assert.Equal(t, 1536.0, res.Engine.PrefixCachedTokens)
	assert.InDelta(t, 1536.0/4000, res.Engine.PrefixCacheHitRate, 1e-12)
	// Without the cache both prefill everything.
	opt.Engine.PrefixCache, opt.Engine.SharedPrefixTokens = false, 0
	plain, err := Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	assert.InDelta(t, plain.Requests[0].TTFTS(), plain.Requests[1].TTFTS(), 1e-9)
	assert.InDelta(t, first, plain.Requests[0].TTFTS(), 1e-9)
}

func TestBatchedPrefixCacheWithPreemption(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	p := batchedPlant(t, svc)
	p.KVCapacityTokens = 4096
	opt := batchedOptions(svc)
	opt.Engine.PrefixCache, opt.Engine.SharedPrefixTokens = true, 256
	sim, err := startSimulation(simultaneous(8, 400, 400), p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	require.NoError(t, sim.runToEnd(t.Context()))
	res := sim.result("", opt)
	assert.Equal(t, 1.0, res.Metrics.CompletedFraction)
	assert.Positive(t, res.Engine.Preemptions)
	assert.Positive(t, res.Engine.RecomputedTokens)
	assert.Positive(t, res.Engine.RecomputeTimeS)
	assert.Positive(t, res.Engine.PrefixCachedTokens)
	assert.Zero(t, sim.engine.cache.live, "every block is given back")
}

func TestBatchedCountsFollowTheRequests(t *testing.T) {
	t.Parallel()
	svc := batchedService(t)
	requests := DefaultTraceConfig().Requests()[:400]
	for i := range requests {
		requests[i].ArrivalTimeS /= 8 // a queue, preemptions
	}
	for _, prefixCache := range []bool{false, true} {
		p := batchedPlant(t, svc)
		p.KVCapacityTokens = 8192
		opt := batchedOptions(svc)
		opt.Engine.PrefixCache, opt.Engine.SharedPrefixTokens = prefixCache, 128*int(btoi(prefixCache))
		sim, err := startSimulation(requests, p, ChunkedPrefill{}, MaxClock{}, opt)
		require.NoError(t, err)
		for step := 0; ; step++ {
			done, err := sim.steps(1)
			require.NoError(t, err)
			kv, prefilling := 0.0, 0
			for _, i := range sim.active {
				kv += sim.progress[i].promptProcessed
				if sim.progress[i].prefillRemaining > 0 {
					prefilling++
				}
			}
			require.Equal(t, kv, sim.batched.kvTokens, "prefix cache %v, step %d", prefixCache, step)
			require.Equal(t, prefilling, sim.batched.prefilling, "prefix cache %v, step %d", prefixCache, step)
			if done {
				break
			}
		}
		assert.Positive(t, sim.batched.preemptions, "prefix cache %v", prefixCache)
		assert.Equal(t, len(requests), sim.completed)
	}
}
