package fleet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// promptWorkload is a workload with Mooncake-style hash ids (one per 512
// prompt tokens), its HashIDs by request ID.
type promptWorkload struct {
	requests []plant.Request
	ids      [][]int64
}

// HashIDs implements plant.HashIDSource.
func (w *promptWorkload) HashIDs(id int) []int64 { return w.ids[id] }

// sharedPromptWorkload draws n requests arriving as a Poisson process of
// rate per second, each a system prompt of promptBlocks blocks of 512
// tokens drawn uniformly from prompts distinct ones (0: every prompt is
// its own) followed by 100 to 900 tokens of its own, with 50 to 250
// output tokens.
func sharedPromptWorkload(seed uint64, n, prompts, promptBlocks int, rate float64) *promptWorkload {
	rng := rand.New(rand.NewPCG(seed, 0))
	w := &promptWorkload{requests: make([]plant.Request, n), ids: make([][]int64, n)}
	own := int64(1 << 40) // the next id of a block of a request's own
	t := 0.0
	for i := range n {
		t += rng.ExpFloat64() / rate
		prompt := promptBlocks*plant.HashIDBlockTokens + 100 + rng.IntN(801)
		blocks := (prompt + plant.HashIDBlockTokens - 1) / plant.HashIDBlockTokens
		ids := make([]int64, 0, blocks)
		if prompts > 0 {
			s := int64(rng.IntN(prompts))
			for b := range promptBlocks {
				ids = append(ids, s*int64(promptBlocks)+int64(b))
			}
		}
		for len(ids) < blocks {
			ids = append(ids, own)
			own++
		}
		w.requests[i] = plant.Request{ID: i, ArrivalTimeS: math.Round(t*1e6) / 1e6, PromptTokens: prompt, OutputTokens: 50 + rng.IntN(201)}
		w.ids[i] = ids
	}
	return w
}

// prefixRun runs workload w on 4 replicas with the prefix cache, the
// router of spec and service model svc.
func prefixRun(t testing.TB, w *promptWorkload, spec string, svc plant.ServiceModel) *Report {
	t.Helper()
	cfg := defaultFleet(4, "chunked", "max")
	r, err := NewRouter(spec, 1)
	require.NoError(t, err)
	cfg.Router = r
	cfg.Options = plant.Options{Summary: true, Service: svc, Engine: plant.EngineOptions{PrefixCache: true, HashIDs: w}}
	rep, err := Run(plant.Workload{Requests: w.requests}, RunConfig{Config: cfg})
	require.NoError(t, err)
	return rep
}

func batchedService() plant.ServiceModel {
	gpu, _ := cards.BuiltinGPU(cards.DefaultGPU)
	model, _ := cards.BuiltinModel(cards.DefaultModel)
	return plant.NewBatchedService(gpu, model)
}

// TestPrefixAwareRaisesTheHitRateAndCutsTheTail: on 3000 requests sharing
// 32 system prompts of 4096 tokens (a replica's whole cache) over 4
// replicas, prefix-aware routing keeps each prompt on few replicas: a
// fleet hit rate above 0.85 where round-robin and least-outstanding stay
// under 0.71, and a p95 TTFT under half of theirs (measured: reference at
// 5 requests/s, round-robin 0.687 and 34.8 s, least-outstanding 0.692
// and 32.1 s, prefix-aware 0.863 and 2.08 s, its exact index 0.864 and
// 2.05 s; batched at 1/s, 0.694 and 1.67 s, 0.703 and 1.71 s, 0.871 and
// 0.371 s, 0.872 and 0.368 s).
func TestPrefixAwareRaisesTheHitRateAndCutsTheTail(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		svc  plant.ServiceModel
		rate float64
	}{{plant.ServiceModel{}, 5}, {batchedService(), 1}} {
		t.Run(c.svc.Name(), func(t *testing.T) {
			t.Parallel()
			w := sharedPromptWorkload(1, 3000, 32, 8, c.rate)
			aware := prefixRun(t, w, PrefixAwareName, c.svc)
			exact := prefixRun(t, w, PrefixAwareName+":index=exact", c.svc)
			for _, rep := range []*Report{aware, exact} {
				require.Equal(t, 1.0, rep.Metrics.CompletedFraction)
				assert.Greater(t, rep.Engine.PrefixCacheHitRate, 0.85, rep.Result.Router)
				t.Logf("%s: hit rate %.3f, p95 TTFT %.3f s", rep.Result.Router, rep.Engine.PrefixCacheHitRate, rep.Metrics.P95TTFTS)
			}
			for _, blind := range []string{RoundRobinName, LeastOutstandingName} {
				rep := prefixRun(t, w, blind, c.svc)
				t.Logf("%s: hit rate %.3f, p95 TTFT %.3f s", blind, rep.Engine.PrefixCacheHitRate, rep.Metrics.P95TTFTS)
				require.Equal(t, 1.0, rep.Metrics.CompletedFraction)
				assert.Less(t, rep.Engine.PrefixCacheHitRate, 0.71, blind)
				assert.Less(t, aware.Metrics.P95TTFTS, rep.Metrics.P95TTFTS/2, "p95 TTFT of prefix-aware and %s", blind)
			}
		})
	}
}

// TestPrefixAwareOnIndependentPromptsIsLeastOutstanding: when no replica
// holds any of a prompt, the router is least-outstanding, request for
// request (1500 prompts of 4196 to 4996 tokens at 1 request/s on 4
// replicas: p95 TTFT 1.290 s under the reference model, 3.060 s under the
// batched one, for both; round-robin 1.218 s and 2.105 s).
func TestPrefixAwareOnIndependentPromptsIsLeastOutstanding(t *testing.T) {
	t.Parallel()
	w := sharedPromptWorkload(2, 1500, 0, 8, 1)
	for _, svc := range []plant.ServiceModel{{}, batchedService()} {
		cfg := defaultFleet(4, "chunked", "max")
		cfg.Options = plant.Options{Summary: true, Service: svc, Engine: plant.EngineOptions{PrefixCache: true, HashIDs: w}}
		var assignments [][]int
		for _, spec := range []string{LeastOutstandingName, PrefixAwareName, PrefixAwareName + ":weight=100,index=exact", RoundRobinName} {
			r, err := NewRouter(spec, 1)
			require.NoError(t, err)
			cfg.Router = r
			rep, err := Run(plant.Workload{Requests: w.requests}, RunConfig{Config: cfg})
			require.NoError(t, err)
			t.Logf("%s, %s: hit rate %.3f, p95 TTFT %.3f s, completed %.3f", svc.Name(), spec, rep.Engine.PrefixCacheHitRate, rep.Metrics.P95TTFTS, rep.Metrics.CompletedFraction)
			assignments = append(assignments, rep.Result.Assignment)
		}
		assert.Equal(t, assignments[0], assignments[1], svc.Name())
		assert.Equal(t, assignments[0], assignments[2], svc.Name())
	}
}

// TestPrefixAwareWithTheSharedPrefixRule: without hash ids every prompt
// shares its first SharedPrefixTokens, which every replica soon holds;
// the router then balances load and reaches the hit rate of
// least-outstanding.
func TestPrefixAwareWithTheSharedPrefixRule(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)[:400]
	cfg := defaultFleet(3, "chunked", "max")
	cfg.Options = plant.Options{Summary: true, Engine: plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 256}}
	hit := map[string]float64{}
	for _, spec := range []string{LeastOutstandingName, PrefixAwareName} {
		r, err := NewRouter(spec, 1)
		require.NoError(t, err)
		cfg.Router = r
		rep, err := Run(plant.Workload{Requests: requests}, RunConfig{Config: cfg})
		require.NoError(t, err)
		hit[spec] = rep.Engine.PrefixCacheHitRate
	}
	assert.Positive(t, hit[PrefixAwareName])
	assert.GreaterOrEqual(t, hit[PrefixAwareName], hit[LeastOutstandingName]-1e-3)
}

// TestPrefixAwareOnAHeterogeneousFleet: groups of other profiles and
// sizes route and serve every request.
func TestPrefixAwareOnAHeterogeneousFleet(t *testing.T) {
	t.Parallel()
	w := sharedPromptWorkload(3, 600, 8, 4, 2)
	slow := *profile.Default()
	cfg := Config{
		Plant: plant.NewPlant(nil),
		Groups: []Group{
			{Name: "a", Replicas: 2, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"},
			{Name: "b", Replicas: 1, Profile: &slow, Scheduler: "static", Controller: "reactive"},
		},
		Options: plant.Options{Summary: true, Engine: plant.EngineOptions{PrefixCache: true, HashIDs: w}},
	}
	r, err := NewRouter(PrefixAwareName, 1)
	require.NoError(t, err)
	cfg.Router = r
	rep, err := Run(plant.Workload{Requests: w.requests}, RunConfig{Config: cfg})
	require.NoError(t, err)
	assert.Equal(t, 1.0, rep.Metrics.CompletedFraction)
	assert.Greater(t, rep.Engine.PrefixCacheHitRate, 0.5)
	for _, replica := range rep.Replicas {
		assert.Positive(t, replica.RequestsRouted)
	}
}

func TestPrefixAwareNeedsThePrefixCache(t *testing.T) {
	t.Parallel()
	cfg := defaultFleet(2, "chunked", "max")
	r, err := NewRouter(PrefixAwareName, 1)
	require.NoError(t, err)
	cfg.Router = r
	_, err = Simulate(embeddedTrace(t)[:10], cfg)
	require.ErrorIs(t, err, errNoPrefixCache)
	assert.EqualError(t, err, "router prefix-aware needs the prefix cache (--prefix-cache): without it no replica keeps a prompt's prefix")
}

func TestNewRouterSpecs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, name string
		weight     float64
		index      string
	}{
		{"prefix-aware", "prefix-aware", 4, ApproximateIndex},
		{"prefix-aware:weight=4", "prefix-aware", 4, ApproximateIndex},
		{"prefix-aware:weight=0.5", "prefix-aware:weight=0.5", 0.5, ApproximateIndex},
		{"prefix-aware:index=exact,weight=0", "prefix-aware:weight=0,index=exact", 0, ExactIndex},
		{"prefix-aware:index=approximate", "prefix-aware", 4, ApproximateIndex},
	} {
		r, err := NewRouter(c.spec, 1)
		require.NoError(t, err, c.spec)
		p := r.(*PrefixAware)
		assert.Equal(t, c.name, p.Name(), c.spec)
		assert.Equal(t, c.weight, p.Weight, c.spec)
		assert.Equal(t, c.index, p.Index, c.spec)
		again, err := NewRouter(p.Name(), 1)
		require.NoError(t, err, "its name is its spec")
		assert.Equal(t, p.Name(), again.Name())
		assert.False(t, IsStateFree(r))
	}
	for _, c := range []struct{ spec, err string }{
		{"prefix-aware:weight=-1", `router prefix-aware: weight "-1": expected a finite number, 0 or more`},
		{"prefix-aware:weight=NaN", `router prefix-aware: weight "NaN": expected a finite number, 0 or more`},
		{"prefix-aware:weight=+Inf", `router prefix-aware: weight "+Inf": expected a finite number, 0 or more`},
		{"prefix-aware:weight=heavy", `router prefix-aware: weight "heavy": expected a finite number, 0 or more`},
		{"prefix-aware:weight=", `router prefix-aware: weight "": expected a finite number, 0 or more`},
		{"prefix-aware:index=fuzzy", `router prefix-aware: index "fuzzy": expected approximate or exact`},
		{"prefix-aware:lru=10", `router prefix-aware: "lru": expected weight or index`},
		{"prefix-aware:weight", `router prefix-aware: "weight": expected options as name=value: weight=W, index=approximate|exact`},
		{"prefix-aware:", `router prefix-aware: "": expected options as name=value: weight=W, index=approximate|exact`},
		{"prefix-aware:weight=1,weight=2", `router prefix-aware: weight "2": expected it once`},
		{"least-outstanding:weight=1", `router least-outstanding "weight=1": expected no options`},
		{"nearest:weight=1", `unknown router "nearest:weight=1": expected round-robin, random, least-outstanding, least-tokens, prefix-aware, session`},
	} {
		_, err := NewRouter(c.spec, 1)
		assert.EqualError(t, err, c.err, c.spec)
	}
	_, err := NewPrefixAware(-0.5, "")
	assert.EqualError(t, err, "router prefix-aware: weight -0.5: expected a finite number, 0 or more")
}

// FuzzNewRouter: any spec gives a router or an error, never a panic, and
// a router's name is a spec giving the same router.
func FuzzNewRouter(f *testing.F) {
	for _, s := range []string{"round-robin", "prefix-aware", "prefix-aware:weight=2,index=exact", "prefix-aware:weight=1e308", "prefix-aware:index=", "random:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := NewRouter(spec, 1)
		if err != nil {
			return
		}
		again, err := NewRouter(r.Name(), 1)
		require.NoError(t, err, spec)
		assert.Equal(t, r.Name(), again.Name())
	})
}

// prefixSteppers are n steppers whose caches hold blocks blocks each, and
// their states.
func prefixSteppers(t testing.TB, n, blocks int) []ReplicaState {
	t.Helper()
	p := plant.NewPlant(profile.Default())
	p.KVCapacityTokens = float64(blocks * plant.DefaultKVBlockTokens)
	p.DecodeKVReserveTokensPerActive = 1
	states := make([]ReplicaState, n)
	for k := range states {
		st, err := plant.NewStepper(p, plant.ChunkedPrefill{}, plant.MaxClock{}, plant.Options{Summary: true, Engine: plant.EngineOptions{PrefixCache: true}}, 0)
		require.NoError(t, err)
		states[k] = st.Load()
	}
	return states
}

// keysOf are the shared keys of a prompt of the given hash ids.
func keysOf(ids ...int64) []plant.PrefixKey {
	return plant.EngineOptions{PrefixCache: true}.AppendPrefixKeys(nil, len(ids)*plant.HashIDBlockTokens+1, ids)
}

func TestPrefixIndex(t *testing.T) {
	t.Parallel()
	states := prefixSteppers(t, 3, 64) // 2 hash ids of 32 blocks each
	x := newPrefixIndex(1)
	x.bind(states)
	hits := func(keys []plant.PrefixKey) []int {
		x.match(keys)
		out := make([]int, len(x.slots))
		for k := range out {
			out[k] = x.hitAt(k)
		}
		return out
	}
	send := func(k int, keys []plant.PrefixKey) {
		x.match(keys)
		x.record(k)
	}
	a, ab, ac := keysOf(1), keysOf(1, 2), keysOf(1, 3)
	require.Len(t, ab, 64)
	assert.Equal(t, []int{0, 0, 0}, hits(ab), "empty")
	send(0, ab)
	send(2, a)
	assert.Equal(t, []int{64, 0, 32}, hits(ab))
	assert.Equal(t, []int{32, 0, 32}, hits(ac), "the shared first half")
	// Replica 0 holds 64 blocks: the 32 of ac's second half evict ab's.
	send(0, ac)
	assert.Equal(t, []int{32, 0, 32}, hits(ab))
	assert.Equal(t, []int{64, 0, 32}, hits(ac))
	assert.Equal(t, 64, x.replicas[x.slots[0]].count)
	// The replicas move: the index follows each by its cache.
	moved := []ReplicaState{states[2], states[0]}
	x.bind(moved)
	assert.Equal(t, []int{32, 64}, hits(ac))
	// A new replica holds nothing.
	fresh := prefixSteppers(t, 1, 64)
	x.bind(append(moved, fresh...))
	assert.Equal(t, []int{32, 64, 0}, hits(ac))
	// Growing the table past its buckets keeps every key.
	for id := range int64(200) {
		send(2, keysOf(100+id))
	}
	assert.Equal(t, []int{32, 64, 0}, hits(ac))
	assert.Equal(t, []int{0, 0, 32}, hits(keysOf(100+199)))
	assert.Equal(t, []int{0, 0, 32}, hits(keysOf(100+198)))
	assert.Equal(t, []int{0, 0, 0}, hits(keysOf(100+197)), "evicted: the replica holds 64 blocks")
}

// TestPrefixIndexChunks: in chunks of 16 blocks, a prefix held whole
// matches to its last block, one held in part to its last whole chunk, and
// a replica holds its cache's blocks over 16 chunk keys.
func TestPrefixIndexChunks(t *testing.T) {
	t.Parallel()
	states := prefixSteppers(t, 2, 64)
	x := newPrefixIndex(16)
	x.bind(states)
	hit := func(keys []plant.PrefixKey) int {
		x.match(keys)
		return x.hitAt(0)
	}
	ab := keysOf(1, 2)
	x.match(ab)
	x.record(0)
	assert.Equal(t, 4, x.replicas[x.slots[0]].count, "a key per 16 blocks")
	assert.Equal(t, 64, hit(ab), "whole: to its last block")
	assert.Equal(t, 32, hit(ab[:40]), "in part: to its last whole chunk")
	assert.Equal(t, 0, hit(ab[:10]), "less than a chunk")
	x.match(ab[:40])
	x.record(1)
	x.match(ab[:40])
	assert.Equal(t, 40, x.hitAt(1), "whole, not a whole number of chunks: to its last block")
	assert.Equal(t, 32, hit(append(slices.Clone(ab[:40]), keysOf(9)...)))
	x.match(keysOf(5, 6))
	x.record(0)
	assert.Equal(t, 4, x.replicas[x.slots[0]].count, "its capacity: 64 blocks over 16")
	assert.Equal(t, 0, hit(ab), "evicted")
	assert.Equal(t, 64, hit(keysOf(5, 6)))
}

// routeBench is a prefix-aware router, bound to a shared-prompt workload,
// in steady state over n replicas of random loads.
func routeBench(t testing.TB, n int, index string) (*PrefixAware, []ReplicaState, *promptWorkload) {
	w := sharedPromptWorkload(4, 4096, 32, 8, 10)
	r, err := NewPrefixAware(DefaultPrefixWeight, index)
	require.NoError(t, err)
	require.NoError(t, r.bind(&Config{Options: plant.Options{Engine: plant.EngineOptions{PrefixCache: true, HashIDs: w}}}))
	states := prefixSteppers(t, n, 512)
	rng := rand.New(rand.NewPCG(5, 0))
	for k := range states {
		states[k].QueuedRequests, states[k].ActiveDecodes = rng.IntN(4), rng.IntN(32)
	}
	for i, req := range w.requests {
		r.Route(Arrival{Index: i, ID: req.ID, PromptTokens: req.PromptTokens}, states)
	}
	return r, states, w
}

func TestPrefixAwareRouteAllocatesNothing(t *testing.T) {
	for _, index := range []string{ApproximateIndex, ExactIndex} {
		r, states, w := routeBench(t, 64, index)
		i := 0
		allocs := testing.AllocsPerRun(2000, func() {
			req := w.requests[i%len(w.requests)]
			r.Route(Arrival{Index: i, ID: req.ID, PromptTokens: req.PromptTokens}, states)
			i++
		})
		assert.Zero(t, allocs, index)
	}
}

// BenchmarkPrefixAwareRoute is one route, in steady state, of a request
// of 8 to 10 hash ids (256 to 320 blocks, 32 prompts shared) over 32 and
// 2048 replicas.
func BenchmarkPrefixAwareRoute(b *testing.B) {
	for _, index := range []string{ApproximateIndex, ExactIndex} {
		for _, n := range []int{32, 2048} {
			b.Run(fmt.Sprintf("index=%s/replicas=%d", index, n), func(b *testing.B) {
				r, states, w := routeBench(b, n, index)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					req := w.requests[i%len(w.requests)]
					r.Route(Arrival{Index: i, ID: req.ID, PromptTokens: req.PromptTokens}, states)
					i++
				}
			})
		}
	}
}

// TestPrefixAwareOnAStaticElasticFleet: the elastic engine hands the
// router only its ready replicas; with the static autoscaler they are the
// fixed fleet's, and so are the routes, the metrics and the hit rate.
func TestPrefixAwareOnAStaticElasticFleet(t *testing.T) {
	t.Parallel()
	w := sharedPromptWorkload(5, 600, 8, 4, 2)
	for _, spec := range []string{PrefixAwareName, PrefixAwareName + ":index=exact"} {
		run := func(scaled bool) *Result {
			cfg := defaultFleet(3, "chunked", "reactive")
			if scaled {
				cfg = elasticFleet(3, Static{}, 1, 8)
			}
			cfg.Options = plant.Options{Summary: true, Engine: plant.EngineOptions{PrefixCache: true, HashIDs: w}}
			r, err := NewRouter(spec, 1)
			require.NoError(t, err)
			cfg.Router = r
			res, err := Simulate(w.requests, cfg)
			require.NoError(t, err)
			return res
		}
		want, got := run(false), run(true)
		require.NotNil(t, got.Scaling)
		assert.Equal(t, want.Assignment, got.Assignment, spec)
		assert.Equal(t, bits(want.Metrics), bits(got.Metrics), spec)
		for k := range want.Replicas {
			assert.Equal(t, want.Replicas[k].Result.Engine.PrefixCachedTokens, got.Replicas[k].Result.Engine.PrefixCachedTokens, spec)
		}
	}
}
