package fleet

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCostHeapPicksRoutesChoice: over rounds of random states, with ties,
// each request routed changing its replica's state, the heap's top is the
// replica the router's Route picks, for every CostRouter.
func TestCostHeapPicksRoutesChoice(t *testing.T) {
	for _, router := range []CostRouter{LeastOutstanding{}, LeastTokens{}} {
		for _, n := range []int{1, 2, 3, 7, 64, 257} {
			t.Run(fmt.Sprintf("%s/replicas=%d", router.Name(), n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), 7))
				h := newCostHeap(router)
				require.NotNil(t, h)
				states := make([]ReplicaState, n)
				for round := range 20 {
					for k := range states {
						// Few distinct values: ties are common.
						states[k] = ReplicaState{QueuedRequests: rng.IntN(4), ActiveDecodes: rng.IntN(3),
							QueuedPromptTokens: float64(rng.IntN(3) * 100), KVTokens: float64(rng.IntN(3) * 50)}
					}
					h.reset(states)
					for i := range 50 {
						want := router.Route(Arrival{Index: i}, states)
						require.Equal(t, want, h.top(), "round %d, request %d", round, i)
						s := &states[want]
						s.QueuedRequests++
						s.QueuedPromptTokens += float64(rng.IntN(3) * 100)
						if rng.IntN(5) == 0 && s.QueuedRequests > 1 { // a state may also fall
							s.QueuedRequests -= 2
						}
						h.update(want, s)
					}
				}
			})
		}
	}
}

// TestOnlyCostRoutersGetAHeap: the state-free routers route without one,
// and so do the routers whose choice depends on the request (prefix-aware,
// session), which scan the replicas.
func TestOnlyCostRoutersGetAHeap(t *testing.T) {
	for _, name := range RouterNames {
		r, err := NewRouter(name, DefaultRouterSeed)
		require.NoError(t, err)
		_, cost := r.(CostRouter)
		require.Equal(t, cost, newCostHeap(r) != nil, name)
		requestAware := name == PrefixAwareName || name == SessionName
		require.Equal(t, !cost, IsStateFree(r) || requestAware, name)
	}
}

// BenchmarkRouteArrival routes arrivals over fleets of 32 and 2,048
// replicas as a lock-step round does (a choice, then the chosen replica's
// new state), by Route's scan of every replica and by the heap: ns/op is
// the cost of one arrival, and the heap allocates nothing in steady state.
func BenchmarkRouteArrival(b *testing.B) {
	for _, n := range []int{32, 2048} {
		states := make([]ReplicaState, n)
		for k := range states {
			states[k] = ReplicaState{QueuedRequests: k % 5, ActiveDecodes: k % 3}
		}
		router := LeastOutstanding{}
		b.Run(fmt.Sprintf("scan/replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := append([]ReplicaState(nil), states...)
			i := 0
			for b.Loop() {
				k := router.Route(Arrival{Index: i}, s)
				s[k].QueuedRequests++
				i++
			}
		})
		b.Run(fmt.Sprintf("heap/replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := append([]ReplicaState(nil), states...)
			h := newCostHeap(router)
			h.reset(s)
			for b.Loop() {
				k := h.top()
				s[k].QueuedRequests++
				h.update(k, &s[k])
			}
		})
	}
}
