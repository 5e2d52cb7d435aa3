package fleet

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// TestReplicasHaveTheirOwnEngine: with the engine features on, every
// replica of a round-robin fleet is plant.Simulate on its sub-list, its
// own prefix cache and preemption included, and the fleet's engine block
// sums the replicas'.
func TestReplicasHaveTheirOwnEngine(t *testing.T) {
	requests := embeddedTrace(t)
	cfg := defaultFleet(3, "chunked", "max")
	cfg.Plant.KVCapacityTokens = 8192
	cfg.Plant.DecodeKVReserveTokensPerActive = 64
	cfg.Options = plant.Options{Summary: true, Engine: plant.EngineOptions{
		PrefixCache: true, SharedPrefixTokens: 128, Preemption: plant.PreemptionRecompute}}
	rep, err := Run(plant.Workload{Requests: requests}, RunConfig{Config: cfg})
	require.NoError(t, err)
	var engines []*plant.EngineReport
	for k := range 3 {
		var sub []plant.Request
		for i := k; i < len(requests); i += 3 {
			sub = append(sub, requests[i])
		}
		p := cfg.Plant
		p.Profile = profile.Default()
		want, err := plant.Simulate(sub, p, plant.ChunkedPrefill{}, plant.MaxClock{}, cfg.Options)
		require.NoError(t, err)
		got := rep.Replicas[k].Engine
		require.NotNil(t, got)
		assert.Equal(t, want.Engine.Requests, got.Requests, "replica %d", k)
		assert.Equal(t, want.Engine.PrefixCachedTokens, got.PrefixCachedTokens, "replica %d", k)
		assert.Equal(t, want.Engine.PrefixCacheEvictions, got.PrefixCacheEvictions, "replica %d", k)
		assert.Equal(t, bits(want.Metrics), bits(rep.Replicas[k].Metrics), "replica %d", k)
		engines = append(engines, got)
	}
	sum := rep.Engine
	require.NotNil(t, sum)
	assert.Equal(t, engines[0].PromptTokens+engines[1].PromptTokens+engines[2].PromptTokens, sum.PromptTokens)
	assert.Equal(t, engines[0].PrefixCacheEvictions+engines[1].PrefixCacheEvictions+engines[2].PrefixCacheEvictions, sum.PrefixCacheEvictions)
	assert.Equal(t, engines[0].Preemptions+engines[1].Preemptions+engines[2].Preemptions, sum.Preemptions)
	assert.InDelta(t, sum.PrefixCachedTokens/float64(sum.PromptTokens), sum.PrefixCacheHitRate, 1e-15)
	assert.Positive(t, sum.PrefixCachedTokens)
	assert.Nil(t, sum.Requests)

	// Without engine features there is no engine block anywhere.
	plain, err := Run(plant.Workload{Requests: requests}, RunConfig{Config: defaultFleet(3, "chunked", "max")})
	require.NoError(t, err)
	assert.Nil(t, plain.Engine)
	for _, r := range plain.Replicas {
		assert.Nil(t, r.Engine)
	}
}

// TestRunReportsTheChecksumOfTheRequestsAsRun: a fleet run of a read
// workload (whose checksums are remembered) reports the checksum of its
// requests as run, normalized or not, run after run.
func TestRunReportsTheChecksumOfTheRequestsAsRun(t *testing.T) {
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	for _, normalize := range []float64{0, 0.05, 0, 0.05, 0.02} {
		asRun := w.Requests
		if normalize != 0 {
			asRun = slices.Clone(w.Requests)
			_, err := plant.NormalizeFleetOfferedLoadInPlace(asRun, profile.Default(), normalize, 2)
			require.NoError(t, err)
		}
		rep, err := Run(w, RunConfig{Config: defaultFleet(2, "chunked", "max"), Normalize: normalize})
		require.NoError(t, err)
		assert.Equal(t, plant.WorkloadChecksum(asRun), rep.Summary.WorkloadChecksum, "normalize %v", normalize)
	}
}
