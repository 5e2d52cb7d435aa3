package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// runChecked simulates requests step by step, checking the engine's
// invariants after every step and the token balance at the end.
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

func TestEngineSmoke(t *testing.T) {
	requests := smallWorkload(t)
	for i := range requests {
		requests[i].ArrivalTimeS /= 4
	}
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 8192
	p.DecodeKVReserveTokensPerActive = 64
	long := make([]Request, 40)
	for i := range long {
		long[i] = Request{ID: i, ArrivalTimeS: float64(i) * 0.05, PromptTokens: 300 + 37*i%500, OutputTokens: 600 + 71*i%900}
	}
	for _, eo := range []EngineOptions{
		{Preemption: PreemptionRecompute},
		{PrefixCache: true, SharedPrefixTokens: 256, Preemption: PreemptionRecompute},
		{PrefixCache: true, SharedPrefixTokens: 256},
	} {
		res := runChecked(t, long, p, Options{Summary: true, Engine: eo})
		rep := *res.Engine
		rep.Requests = nil
		t.Logf("long %+v: %+v completed %v", eo, rep, res.Metrics.CompletedFraction)
	}
	for _, eo := range []EngineOptions{
		{Preemption: PreemptionRecompute},
		{PrefixCache: true, SharedPrefixTokens: 256},
		{PrefixCache: true, SharedPrefixTokens: 256, Preemption: PreemptionRecompute},
	} {
		res := runChecked(t, requests, p, Options{Summary: true, Engine: eo})
		rep := *res.Engine
		rep.Requests = nil
		t.Logf("%+v: %+v completed %v", eo, rep, res.Metrics.CompletedFraction)
		assert.NotNil(t, res.Engine)
	}
}
