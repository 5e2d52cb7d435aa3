package plant

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/profile"
)

// runChecked simulates requests step by step under the chunked scheduler
// at the maximum clock, checking the engine's invariants after every step
// and the token balance at the end.
func runChecked(t testing.TB, requests []Request, p Plant, opt Options) *Result {
	t.Helper()
	sim, err := startSimulation(requests, p, ChunkedPrefill{}, MaxClock{}, opt)
	require.NoError(t, err)
	for {
		done, err := sim.advance()
		require.NoError(t, err)
		require.NoError(t, checkEngine(sim), "step %d", sim.step)
		if done {
			break
		}
	}
	require.NoError(t, checkTokens(sim))
	return sim.result(WorkloadChecksum(requests), opt)
}

// longOutputs is a KV-hungry workload: 40 requests in two seconds with
// outputs longer than their prompts.
func longOutputs() []Request {
	requests := make([]Request, 40)
	for i := range requests {
		requests[i] = Request{ID: i, ArrivalTimeS: float64(i) * 0.05, PromptTokens: 300 + 37*i%500, OutputTokens: 600 + 71*i%900}
	}
	return requests
}

// kvStarved is n requests with outputs longer than their prompts, two a
// second (BenchmarkSimulateKVStarved's workload).
func kvStarved(n int) []Request {
	requests := make([]Request, n)
	for i := range requests {
		requests[i] = Request{ID: i, ArrivalTimeS: float64(i) * 0.5, PromptTokens: 500 + 37*i%1000, OutputTokens: 500 + 71*i%1500}
	}
	return requests
}

// starvedPlant is the embedded proxy with 8192 tokens of KV and a small
// decode reserve, so decoding outgrows the KV cache, run for ten minutes.
func starvedPlant() Plant {
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 8192
	p.DecodeKVReserveTokensPerActive = 64
	p.MaxSimulationTimeS = 600
	return p
}

func TestEngineOptionsOffAreNoEngine(t *testing.T) {
	for _, o := range []EngineOptions{{}, {Preemption: PreemptionNone}} {
		assert.False(t, o.Enabled())
	}
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	plain := simulateWith(t, requests, p, "chunked", "reactive", Options{Stride: 7})
	none := simulateWith(t, requests, p, "chunked", "reactive", Options{Stride: 7, Engine: EngineOptions{Preemption: PreemptionNone}})
	assert.Nil(t, none.Engine)
	sameResult(t, plain, none, "preemption none is the reference")
}

// TestPreemptionWithRoomChangesNothing: when decoding always finds its KV,
// the recompute policy never acts, and its arithmetic is the reference's
// to the last bit (the KV checks only gate).
func TestPreemptionWithRoomChangesNothing(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	for _, sched := range []string{"static", "continuous", "chunked"} {
		plain := simulateWith(t, requests, p, sched, "reactive", Options{Stride: 1})
		pre := simulateWith(t, requests, p, sched, "reactive", Options{Stride: 1, Engine: EngineOptions{Preemption: PreemptionRecompute}})
		require.NotNil(t, pre.Engine)
		assert.Zero(t, pre.Engine.Preemptions)
		engine := pre.Engine
		pre.Engine = nil
		for i := range pre.Requests {
			// The records count their preemptions (none here).
			require.Zero(t, *pre.Requests[i].Preemptions)
			pre.Requests[i].Preemptions, pre.Requests[i].RecomputedTokens = nil, nil
		}
		sameResult(t, plain, pre, "%s", sched)
		assert.Equal(t, PreemptionRecompute, engine.Preemption)
		assert.True(t, math.IsNaN(engine.PrefixCacheHitRate), "no prefix cache, no hit rate")
	}
}

func TestEngineInvariants(t *testing.T) {
	loaded := smallWorkload(t)
	for i := range loaded {
		loaded[i].ArrivalTimeS /= 4
	}
	starved := kvStarved(100)
	starvedPlant16k := starvedPlant()
	starvedPlant16k.KVCapacityTokens = 16384
	starvedPlant16k.MaxSimulationTimeS = 3600
	starvedPlant16k600 := starvedPlant16k
	starvedPlant16k600.MaxSimulationTimeS = 600
	cases := []struct {
		name     string
		requests []Request
		plant    Plant
		engine   EngineOptions
		preempts bool // the run must preempt
	}{
		{"preemption, long outputs", longOutputs(), starvedPlant(), EngineOptions{Preemption: PreemptionRecompute}, true},
		{"cache and preemption, long outputs", longOutputs(), starvedPlant(), EngineOptions{PrefixCache: true, SharedPrefixTokens: 256, Preemption: PreemptionRecompute}, true},
		{"cache of 1-token blocks and preemption", longOutputs(), starvedPlant(), EngineOptions{PrefixCache: true, KVBlockTokens: 1, SharedPrefixTokens: 100, Preemption: PreemptionRecompute}, true},
		{"cache of 7-token blocks and preemption", longOutputs(), starvedPlant(), EngineOptions{PrefixCache: true, KVBlockTokens: 7, SharedPrefixTokens: 350, Preemption: PreemptionRecompute}, true},
		{"cache only, long outputs", longOutputs(), starvedPlant(), EngineOptions{PrefixCache: true, SharedPrefixTokens: 256}, false},
		{"cache, loaded", loaded, starvedPlant(), EngineOptions{PrefixCache: true, SharedPrefixTokens: 256}, false},
		{"cache and preemption, loaded", loaded, starvedPlant(), EngineOptions{PrefixCache: true, KVBlockTokens: 32, SharedPrefixTokens: 1000, Preemption: PreemptionRecompute}, false},
		{"preemption, loaded", loaded, starvedPlant(), EngineOptions{Preemption: PreemptionRecompute}, false},
		// Decoding fills the cache's last free blocks to the token
		// (without preemption, until everything stalls).
		{"cache only, starved", starved, starvedPlant16k600, EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024}, false},
		{"both, starved", starved, starvedPlant16k, EngineOptions{PrefixCache: true, SharedPrefixTokens: 1024, Preemption: PreemptionRecompute}, true},
		{"preemption, starved", starved, starvedPlant16k, EngineOptions{Preemption: PreemptionRecompute}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runChecked(t, c.requests, c.plant, Options{Summary: true, Engine: c.engine})
			if c.preempts {
				assert.Positive(t, res.Engine.Preemptions)
				assert.Equal(t, 1.0, res.Metrics.CompletedFraction, "preemption lets every request complete")
			}
			assert.Zero(t, res.Metrics.KVViolationTokens, "peak KV within the capacity")
		})
	}
}

func TestPreemptionNeverTakesTheOnlyRunningRequest(t *testing.T) {
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 2048
	p.MaxSimulationTimeS = 60
	// One request that can never fit: it decodes until the KV is full,
	// then stalls, never preempting itself, and stays unfinished.
	alone := []Request{{ID: 0, PromptTokens: 500, OutputTokens: 5000}}
	for _, eo := range []EngineOptions{{Preemption: PreemptionRecompute}, {PrefixCache: true, Preemption: PreemptionRecompute}} {
		res := runChecked(t, alone, p, Options{Stride: 1, Engine: eo})
		assert.Zero(t, res.Engine.Preemptions, "%+v", eo)
		assert.Equal(t, 1.0, res.Metrics.UnfinishedRequestsAtEnd)
		assert.InDelta(t, p.KVCapacityTokens, res.Metrics.PeakKVTokens, 1e-6, "it fills the KV cache")
		assert.Greater(t, res.Metrics.DecodeStallFraction, 0.8, "then stalls")
	}
}

// TestPreemptionTakesTheLatestAndRecomputes: two requests share 2048
// tokens of KV. The second, admitted last, is preempted when the first
// needs room; it keeps its first-token time, prefills its prompt and its
// generated tokens again, and completes after the first.
func TestPreemptionTakesTheLatestAndRecomputes(t *testing.T) {
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 2048
	p.DecodeKVReserveTokensPerActive = 16
	requests := []Request{
		{ID: 0, PromptTokens: 400, OutputTokens: 1200},
		{ID: 1, ArrivalTimeS: 0.5, PromptTokens: 300, OutputTokens: 1000},
	}
	res := runChecked(t, requests, p, Options{Stride: 1, Engine: EngineOptions{Preemption: PreemptionRecompute}})
	first, second := res.Engine.Requests[0], res.Engine.Requests[1]
	assert.Zero(t, first.Preemptions, "the first admitted is never the victim")
	require.Positive(t, second.Preemptions)
	assert.Greater(t, second.RecomputedTokens, 300.0, "the prompt and some generated tokens are recomputed")
	assert.Positive(t, second.RecomputeS)
	assert.Equal(t, second.RecomputeS, second.RecomputeAfterFirstTokenS, "preempted after its first token")
	r0, r1 := res.Requests[0], res.Requests[1]
	require.True(t, r0.Completed() && r1.Completed())
	assert.Less(t, r1.FirstTokenTimeS, r0.CompletionTimeS, "its first token came before the preemption")
	assert.Greater(t, r1.CompletionTimeS, r0.CompletionTimeS)
	assert.Equal(t, 1, res.Engine.PreemptedRequests)
	assert.Equal(t, second.Preemptions, res.Engine.Preemptions)
	assert.Equal(t, second.RecomputedTokens, res.Engine.RecomputedTokens)
	// The queue shows the preempted request while it waits.
	waited := false
	for k := range res.Len() {
		waited = waited || (res.PrefillQueue[k] == 1 && res.DecodeActive[k] == 1 && res.TimeS[k] > 1)
	}
	assert.True(t, waited)
}

// sequential is requests one after the other, each arriving after the one
// before has completed, all with prompt prompt and output 4.
func sequential(n, prompt int) []Request {
	requests := make([]Request, n)
	for i := range requests {
		requests[i] = Request{ID: i, ArrivalTimeS: float64(i) * 5, PromptTokens: prompt, OutputTokens: 4}
	}
	return requests
}

func TestPrefixCacheHitsTheSharedPrefix(t *testing.T) {
	p := NewPlant(profile.Default())
	cases := []struct {
		prompt, shared, block int
		cached                float64 // the second request's cached tokens
	}{
		{prompt: 1000, shared: 100, block: 16, cached: 96},  // the whole blocks of the prefix
		{prompt: 1000, shared: 0, block: 16, cached: 0},     // nothing shared
		{prompt: 64, shared: 64, block: 16, cached: 48},     // never the block of the last token
		{prompt: 65, shared: 64, block: 16, cached: 64},     // ... which is the next one here
		{prompt: 10, shared: 10, block: 16, cached: 0},      // no whole block
		{prompt: 1000, shared: 2000, block: 1, cached: 999}, // all but the last token
	}
	for _, c := range cases {
		name := fmt.Sprintf("prompt %d shared %d block %d", c.prompt, c.shared, c.block)
		eo := EngineOptions{PrefixCache: true, KVBlockTokens: c.block, SharedPrefixTokens: c.shared}
		res := runChecked(t, sequential(3, c.prompt), p, Options{Stride: 1, Engine: eo})
		recs := res.Engine.Requests
		assert.Zero(t, recs[0].PrefixCachedTokens, name)
		assert.Equal(t, c.cached, recs[1].PrefixCachedTokens, name)
		assert.Equal(t, c.cached, recs[2].PrefixCachedTokens, name)
		assert.InDelta(t, 2*c.cached/float64(3*c.prompt), res.Engine.PrefixCacheHitRate, 1e-12, name)
		assert.InDelta(t, float64(3*c.prompt)-2*c.cached, res.CumulativePrefillTokens[res.Len()-1], 1e-6, "%s: cached tokens are not prefilled", name)
		assert.Zero(t, res.Engine.PrefixCacheEvictions, name)
	}
}

// engineString formats an engine block with its pointers followed, for
// comparing two bit for bit (NaN included).
func engineString(r *EngineReport) string {
	c := *r
	deref := func(p *int) any {
		if p == nil {
			return nil
		}
		return *p
	}
	s := fmt.Sprint(deref(c.KVBlockTokens), deref(c.KVCapacityBlocks), deref(c.SharedPrefixTokens))
	c.KVBlockTokens, c.KVCapacityBlocks, c.SharedPrefixTokens = nil, nil, nil
	return s + fmt.Sprintf("%+v", c)
}

type hashIDs map[int][]int64

func (h hashIDs) HashIDs(id int) []int64 { return h[id] }

// TestPrefixCacheFollowsHashIDs: requests share the 512-token blocks whose
// ids agree, mapped onto any block size; a request without ids falls back
// to the shared prefix.
func TestPrefixCacheFollowsHashIDs(t *testing.T) {
	p := NewPlant(profile.Default())
	ids := hashIDs{0: {7, 8, 9}, 1: {7, 8, 10}, 2: {7, 11, 9}, 3: {12}}
	requests := sequential(5, 1500)
	cases := []struct {
		block  int
		cached []float64
	}{
		// Request 1 shares two 512-token blocks, request 2 one (the id of
		// its second block differs, and its third block's id, equal to
		// request 0's, names a different prefix). Request 3 shares
		// nothing; request 4, without ids, shares its 100-token prefix
		// with nobody who had one.
		{16, []float64{0, 1024, 512, 0, 0}},
		{512, []float64{0, 1024, 512, 0, 0}},
		// 100-token blocks: block j ends at token 100j+99, so blocks 0-4
		// (tokens up to 499) lie in the first id block, 5-9 end in the
		// second, 10 ends in the third.
		{100, []float64{0, 1000, 500, 0, 0}},
		{1, []float64{0, 1024, 512, 0, 0}},
	}
	for _, c := range cases {
		eo := EngineOptions{PrefixCache: true, KVBlockTokens: c.block, SharedPrefixTokens: 100, HashIDs: ids}
		res := runChecked(t, requests, p, Options{Summary: true, Engine: eo})
		for i, want := range c.cached {
			assert.Equal(t, want, res.Engine.Requests[i].PrefixCachedTokens, "block %d request %d", c.block, i)
		}
		assert.Equal(t, "hash_ids", res.Engine.PrefixSource)
	}
}

func TestPrefixCacheEvictsForLiveRequests(t *testing.T) {
	// Each prompt fills most of the 4096-token cache: the next request
	// evicts its predecessor's blocks (all its own but the shared ones,
	// which it references).
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 4096
	p.DecodeKVReserveTokensPerActive = 16
	eo := EngineOptions{PrefixCache: true, SharedPrefixTokens: 512}
	res := runChecked(t, sequential(4, 3000), p, Options{Summary: true, Engine: eo})
	assert.Positive(t, res.Engine.PrefixCacheEvictions)
	for i := 1; i < 4; i++ {
		assert.Equal(t, 512.0, res.Engine.Requests[i].PrefixCachedTokens, "request %d keeps the shared prefix", i)
	}
}

func TestEngineOptionsValidate(t *testing.T) {
	p := NewPlant(profile.Default())
	cases := []struct {
		o     EngineOptions
		field string
	}{
		{EngineOptions{KVBlockTokens: 16}, FieldKVBlockTokens},
		{EngineOptions{SharedPrefixTokens: 16}, FieldSharedPrefixTokens},
		{EngineOptions{HashIDs: hashIDs{}}, FieldPrefixCache},
		{EngineOptions{Preemption: "swap"}, FieldPreemption},
		{EngineOptions{PrefixCache: true, KVBlockTokens: -1}, FieldKVBlockTokens},
		{EngineOptions{PrefixCache: true, KVBlockTokens: 200_000}, FieldKVBlockTokens}, // no whole block
		{EngineOptions{PrefixCache: true, SharedPrefixTokens: -1}, FieldSharedPrefixTokens},
	}
	for _, c := range cases {
		err := c.o.Validate(p)
		var ee *EngineError
		require.ErrorAs(t, err, &ee, "%+v", c.o)
		assert.Equal(t, c.field, ee.Field)
		_, err = Simulate(smallWorkload(t), p, ChunkedPrefill{}, MaxClock{}, Options{Summary: true, Engine: c.o})
		assert.ErrorAs(t, err, &ee, "Simulate refuses %+v", c.o)
	}
	big := p
	big.KVCapacityTokens = MaxKVBlocks + 1
	err := EngineOptions{PrefixCache: true, KVBlockTokens: 1}.Validate(big)
	assert.ErrorContains(t, err, "expected 1 to 2097152")
	assert.NoError(t, EngineOptions{PrefixCache: true, KVBlockTokens: 1}.Validate(p))
	assert.NoError(t, EngineOptions{Preemption: PreemptionRecompute}.Validate(p))

	pol, err := ParsePreemption("recompute")
	require.NoError(t, err)
	assert.Equal(t, PreemptionRecompute, pol)
	_, err = ParsePreemption("swap")
	assert.ErrorContains(t, err, `unknown preemption policy "swap": expected none or recompute`)
}

// TestEngineStepperIsSimulate: a fleet replica with engine features runs
// as Simulate does, step for step.
func TestEngineStepperIsSimulate(t *testing.T) {
	requests := longOutputs()
	p := starvedPlant()
	for _, eo := range []EngineOptions{{Preemption: PreemptionRecompute}, {PrefixCache: true, SharedPrefixTokens: 200, Preemption: PreemptionRecompute}} {
		opt := Options{Stride: 1, Engine: eo}
		want := simulateWith(t, requests, p, "chunked", "max", opt)
		st := newTestStepper(t, p, "chunked", "max", opt)
		next := 0
		for {
			for next < len(requests) && requests[next].ArrivalTimeS <= float64(st.Steps()+1)*p.TimeStepS {
				require.NoError(t, st.Add(requests[next]))
				next++
			}
			load := st.Load()
			assert.GreaterOrEqual(t, load.QueuedRequests, 0)
			done, err := st.Step()
			require.NoError(t, err)
			if done && next == len(requests) {
				break
			}
		}
		got, _ := st.Result()
		assert.Equal(t, engineString(want.Engine), engineString(got.Engine))
		assert.Positive(t, got.Engine.Preemptions)
		want.Engine, got.Engine = nil, nil
		sameResult(t, want, got, "%+v", eo)
	}
}

func TestEngineStepLoopAllocatesNothing(t *testing.T) {
	loaded := smallWorkload(t)
	for i := range loaded {
		loaded[i].ArrivalTimeS /= 4
	}
	for _, c := range []struct {
		requests []Request
		eo       EngineOptions
	}{
		{longOutputs(), EngineOptions{Preemption: PreemptionRecompute}},
		{loaded, EngineOptions{PrefixCache: true, SharedPrefixTokens: 256}},
		{longOutputs(), EngineOptions{PrefixCache: true, KVBlockTokens: 4, SharedPrefixTokens: 256, Preemption: PreemptionRecompute}},
	} {
		eo := c.eo
		sim, err := startSimulation(c.requests, starvedPlant(), ChunkedPrefill{}, MaxClock{}, Options{Summary: true, Engine: eo})
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(300, func() {
			done, err := sim.advance()
			require.NoError(t, err)
			require.False(t, done)
		})
		assert.Zero(t, allocs, "%+v", eo)
		work := sim.engine.preemptions
		if sim.engine.cache != nil {
			work += sim.engine.cache.evictions
		}
		assert.Positive(t, work, "%+v: the steps measured preempted or evicted", eo)
	}
}

func TestRequestRecordsCarryTheirPreemptions(t *testing.T) {
	t.Parallel()
	// Under recompute, each record says how often its request was
	// preempted and what it recomputed, as the engine block does.
	res, err := Simulate(longOutputs(), starvedPlant(), ChunkedPrefill{}, MaxClock{}, Options{Engine: EngineOptions{Preemption: PreemptionRecompute}})
	require.NoError(t, err)
	require.Positive(t, res.Engine.Preemptions)
	preemptions, recomputed := 0, 0.0
	for i, r := range res.Requests {
		require.NotNil(t, r.Preemptions, "request %d", i)
		require.NotNil(t, r.RecomputedTokens, "request %d", i)
		assert.Equal(t, res.Engine.Requests[i].Preemptions, *r.Preemptions)
		preemptions += *r.Preemptions
		recomputed += *r.RecomputedTokens
	}
	assert.Equal(t, res.Engine.Preemptions, preemptions)
	assert.InDelta(t, res.Engine.RecomputedTokens, recomputed, 1e-9)
	assert.Contains(t, encoded(t, res.Requests[0]), `"preemptions":`)
	// Without it (the prefix cache alone, or nothing), the records are the
	// reference's.
	for _, engine := range []EngineOptions{{}, {PrefixCache: true}} {
		res, err := Simulate(longOutputs(), starvedPlant(), ChunkedPrefill{}, MaxClock{}, Options{Engine: engine})
		require.NoError(t, err)
		assert.Nil(t, res.Requests[0].Preemptions, "%+v", engine)
		assert.NotContains(t, encoded(t, res.Requests[0]), "preemptions")
	}
}

// encoded is v as the result encoder writes it.
func encoded(t *testing.T, v any) string {
	t.Helper()
	chunks, err := jsonout.Chunks(v)
	require.NoError(t, err)
	return string(bytes.Join(chunks, nil))
}
