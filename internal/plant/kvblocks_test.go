package plant

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKVBlocksAgreeWithAMap drives a small cache (many collisions, probes
// wrapping around the index) with random operations and checks it against
// a map after each one: every key is found where the model has it, counts
// agree, and eviction takes the least recently released block.
func TestKVBlocksAgreeWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, capacity := range []int{1, 2, 5, 13, 64} {
		b, err := newKVBlocks(capacity)
		require.NoError(t, err)
		refs := map[blockKey]int{} // the model: holders of every entry
		var lru []blockKey         // entries nobody holds, least recent first
		private := 0
		key := func() blockKey {
			return blockKey{id: uint64(rng.IntN(3)), pos: uint32(rng.IntN(2 * capacity)), kind: uint8(1 + rng.IntN(3))}
		}
		drop := func(k blockKey) {
			for j, x := range lru {
				if x == k {
					lru = append(lru[:j], lru[j+1:]...)
					return
				}
			}
		}
		for step := range 5000 {
			k := key()
			switch op := rng.IntN(4); {
			case op == 0 && b.available() > 0: // a private block, registered when absent
				b.allocate(1)
				for len(refs) > 0 && private+1+len(refs) > capacity {
					delete(refs, lru[0])
					lru = lru[1:]
				}
				if _, ok := refs[k]; ok {
					private++
					break
				}
				entry, empty, h := b.probe(k)
				require.Equal(t, int32(-1), entry)
				b.register(k, empty, h)
				refs[k] = 1
			case op == 1: // acquire a present key
				if n, ok := refs[k]; ok {
					b.acquire(b.find(k))
					if n == 0 {
						drop(k)
					}
					refs[k] = n + 1
				}
			case op == 2: // release a held key
				if n := refs[k]; n > 0 {
					b.release(b.find(k))
					refs[k] = n - 1
					if n == 1 {
						lru = append(lru, k)
					}
				}
			case op == 3 && private > 0: // free a private block
				b.live--
				private--
			}
			held := 0
			for k, n := range refs {
				e := b.find(k)
				require.GreaterOrEqualf(t, e, int32(0), "capacity %d step %d: %v lost", capacity, step, k)
				require.Equal(t, int32(n), b.entries[e].refs)
				if n > 0 {
					held++
				}
			}
			for range 4 {
				if k := key(); refs[k] == 0 {
					if _, ok := refs[k]; !ok {
						require.Equal(t, int32(-1), b.find(k), "absent key found")
					}
				}
			}
			require.Equal(t, private+held, b.live, "step %d", step)
			require.Equal(t, len(lru), b.cached, "step %d", step)
			require.LessOrEqual(t, b.live+b.cached, capacity)
		}
	}
}

func TestKVBlocksEvictLeastRecentlyReleasedFirst(t *testing.T) {
	b, err := newKVBlocks(4)
	require.NoError(t, err)
	keys := []blockKey{{pos: 0, kind: keyShared}, {pos: 1, kind: keyShared}, {pos: 2, kind: keyShared}, {pos: 3, kind: keyShared}}
	b.allocate(4)
	for _, k := range keys {
		_, empty, h := b.probe(k)
		b.register(k, empty, h)
	}
	// Released 2, 0, 3, 1: evicting two takes 2 and 0.
	for _, j := range []int{2, 0, 3, 1} {
		b.release(b.find(keys[j]))
	}
	assert.Equal(t, 0, b.live)
	assert.Equal(t, 4, b.cached)
	// Reusing 0 makes it live again and most recent when released.
	b.acquire(b.find(keys[0]))
	b.release(b.find(keys[0]))
	b.allocate(2)
	assert.Equal(t, 2, b.evictions)
	assert.Equal(t, int32(-1), b.find(keys[2]))
	assert.Equal(t, int32(-1), b.find(keys[3]))
	assert.GreaterOrEqual(t, b.find(keys[0]), int32(0))
	assert.GreaterOrEqual(t, b.find(keys[1]), int32(0))
	assert.Equal(t, 2, b.live)
	assert.Equal(t, 2, b.cached)
}

func TestKVBlocksCapacityIsBounded(t *testing.T) {
	for _, n := range []int{0, -1, MaxKVBlocks + 1} {
		_, err := newKVBlocks(n)
		assert.Error(t, err, "%d blocks", n)
	}
}
