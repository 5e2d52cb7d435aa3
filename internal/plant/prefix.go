package plant

import (
	"math"

	"servesim/internal/workload"
)

// The prefix cache model.
//
// With the prefix cache on, the KV cache is counted in blocks of B tokens
// (EngineOptions.KVBlockTokens): a request holding t tokens of context
// holds ceil(t/B) blocks (with a 1e-9 tolerance, tokens being fluid), and
// live plus cached blocks never exceed floor(kv_capacity_tokens / B).
//
// A prompt of P tokens is a sequence of blocks; its hashable blocks are the
// full blocks before the one holding its last token, j < floor((P-1)/B), so
// at least one token is always prefilled (as vLLM recomputes the last
// token of a fully cached prompt). Block j's key says what it holds:
//   - from the request's hash ids (a Mooncake trace: one id per 512 tokens,
//     each id naming the whole prefix up to the end of its 512-token block):
//     the id of the 512-token block holding the block's last token,
//     (j+1)B-1, and that token's offset in it. Equal keys mean equal
//     prefixes for any B. Blocks past the ids are the request's own;
//   - else from the shared prefix (EngineOptions.SharedPrefixTokens = N, as
//     `scenarios` models it): blocks wholly inside it, (j+1)B <= N, share
//     one key per position across all requests; the rest are the request's
//     own.
//
// When a request's prefill pass starts (its first, or the one after a
// preemption), it looks up its hashable blocks in order and takes the
// longest leading run present: those blocks are referenced, not prefilled,
// and cost no prefill work or time. As the prefill fills a hashable block,
// the block is registered under its key; if the key is present already
// (another request filled the same prefix meanwhile), the request drops its
// copy and references the registered block. Blocks of generated tokens and
// the block holding the prompt's last token are never hashed.
//
// When a request completes or is preempted, it releases its blocks: private
// ones are freed, hashed ones lose a holder and, when nobody holds them,
// stay cached, appended to the LRU list from the last block to the first,
// so that a prefix's first blocks are the last to go. A request needing
// blocks that are not free evicts cached blocks least recently used first.
//
// prefix_cached_tokens of a request counts the prompt positions it got
// from the cache without having held them before (above its high-water
// mark): so prefill work plus decode work equals prompt + output tokens
// minus cached tokens plus recomputed tokens, exactly, for every completed
// request.

// HashIDBlockTokens is the tokens per hash id of a Mooncake trace.
const HashIDBlockTokens = workload.HashIDBlockTokens

// Kinds of block keys.
const (
	keyShared uint8 = iota + 1 // the shared prefix's block pos
	keyOwn                     // block pos of the request whose index is id
	keyHashID                  // the token at offset pos of the trace block named id
)

// hashable is the number of hashable blocks of request i's prompt.
func (sim *simulation) hashable(i int) int {
	return (sim.records[i].PromptTokens - 1) / int(sim.engine.blockTokens)
}

// blockKey is the key of block j of request i's prompt.
func (sim *simulation) blockKey(i, j int) blockKey {
	e := sim.engine
	if k, ok := sharedKey(int(e.blockTokens), e.sharedBlocks, e.reqs[i].hashIDs, j); ok {
		return k
	}
	return blockKey{id: uint64(i), pos: uint32(j), kind: keyOwn}
}

// sharedKey is the key of block j (of b tokens) of a prompt with hash ids
// ids, when other prompts can hold it too: a block the ids reach, or,
// without ids, one of the sharedBlocks leading blocks. ok is false for a
// block that is the prompt's own.
func sharedKey(b, sharedBlocks int, ids []int64, j int) (k blockKey, ok bool) {
	if len(ids) > 0 {
		last := (j+1)*b - 1
		if k := last / HashIDBlockTokens; k < len(ids) {
			return blockKey{id: uint64(ids[k]), pos: uint32(last % HashIDBlockTokens), kind: keyHashID}, true
		}
		return blockKey{}, false
	}
	if j < sharedBlocks {
		return blockKey{pos: uint32(j), kind: keyShared}, true
	}
	return blockKey{}, false
}

// AppendPrefixKeys appends to keys the keys of the leading hashable
// blocks of a prompt of promptTokens tokens, with hash ids ids (nil for
// none), that other prompts can share, as the prefix cache of o (with
// PrefixCache) keys them: it stops at the first block that is the
// prompt's own, which no other request can have cached. A replica's cache
// would find the leading run of these keys it holds (PrefixCache.Match).
func (o EngineOptions) AppendPrefixKeys(keys []PrefixKey, promptTokens int, ids []int64) []PrefixKey {
	b := o.BlockTokens()
	shared := o.SharedPrefixTokens / b
	for j, n := 0, (promptTokens-1)/b; j < n; j++ {
		k, ok := sharedKey(b, shared, ids, j)
		if !ok {
			break
		}
		keys = append(keys, k)
	}
	return keys
}

// PrefixCache is a read-only view of a replica's prefix cache: the blocks
// it holds, live or cached, as a router reading the replica's KV cache
// events knows them. The zero value is a replica without the prefix
// cache, which holds nothing. Two views are equal when they show the same
// replica's cache.
type PrefixCache struct{ blocks *kvBlocks }

// Match returns the number of leading keys the cache holds: the blocks a
// request with these keys (AppendPrefixKeys) would find if its look-up
// ran now. It costs one probe per key matched, and one more.
func (c PrefixCache) Match(keys []PrefixKey) int {
	if c.blocks == nil {
		return 0
	}
	for k, key := range keys {
		if c.blocks.find(key) < 0 {
			return k
		}
	}
	return len(keys)
}

// CapacityBlocks is the cache's size, blocks; 0 without the prefix cache.
func (c PrefixCache) CapacityBlocks() int {
	if c.blocks == nil {
		return 0
	}
	return c.blocks.capacity
}

// The tolerance of blocksFor and fullBlocks for the rounding of fluid
// tokens, which are sums of rates times durations: x blocks within
// blockAbsTolerance + blockRelTolerance*x of a whole number count as that
// number. It is servesim's (the reference has no blocks).
const (
	blockAbsTolerance = 1e-9
	blockRelTolerance = 1e-12
)

// blocksFor is the blocks holding tokens tokens: ceil(tokens / B), with a
// tolerance (blockAbsTolerance and blockRelTolerance) for the rounding of
// fluid tokens.
func (e *engine) blocksFor(tokens float64) int {
	x := tokens / e.blockTokens
	return max(0, int(math.Ceil(x-blockAbsTolerance-blockRelTolerance*x)))
}

// fullBlocks is the whole blocks in tokens tokens: floor(tokens / B), with
// blocksFor's tolerance.
func (e *engine) fullBlocks(tokens float64) int {
	x := tokens / e.blockTokens
	return max(0, int(math.Floor(x+blockAbsTolerance+blockRelTolerance*x)))
}

// lookUp starts request i's prefill pass: with the prefix cache, it takes
// the longest leading run of its hashable blocks the cache holds.
func (sim *simulation) lookUp(i int) {
	e := sim.engine
	r := &e.reqs[i]
	if r.lookedUp {
		return
	}
	r.lookedUp = true
	if e.cache == nil {
		return
	}
	k, n := 0, sim.hashable(i)
	for ; k < n; k++ {
		entry := e.cache.find(sim.blockKey(i, k))
		if entry < 0 {
			break
		}
		e.cache.acquire(entry)
	}
	if k == 0 {
		return
	}
	hit := float64(k) * e.blockTokens
	r.blocks, r.hashed = k, k
	item := &sim.progress[i]
	item.promptProcessed = hit
	item.prefillRemaining -= hit
	r.PrefixCachedTokens += pyMax(0, hit-r.highWater)
	r.highWater = pyMax(r.highWater, hit)
}

// prefillRoom is the tokens request i, at the front of the queue, can add
// to its KV: without the prefix cache, the capacity minus the occupancy
// (the reference's arithmetic); with it, the blocks free or cached and the
// room left in its last block.
func (sim *simulation) prefillRoom(i int) float64 {
	e := sim.engine
	if e.cache == nil {
		return sim.plant.KVCapacityTokens - sim.engineOccupancy()
	}
	r := &e.reqs[i]
	return float64(e.cache.available()+r.blocks)*e.blockTokens - sim.progress[i].promptProcessed
}

// prefillServe records served prefill tokens of request i: its KV grows
// (blocks are allocated and filled hashable blocks registered), and the
// part below its high-water mark is recomputation.
func (sim *simulation) prefillServe(i int, served float64) {
	e := sim.engine
	r := &e.reqs[i]
	item := &sim.progress[i]
	before := item.promptProcessed
	item.promptProcessed += served
	after := item.promptProcessed
	if again := pyMin(after, r.highWater) - before; again > 0 {
		r.RecomputedTokens += again
		e.recompute = append(e.recompute, recomputeCharge{request: i, tokens: again})
	}
	r.highWater = pyMax(r.highWater, after)
	if e.cache == nil {
		return
	}
	need := e.blocksFor(after) - r.blocks
	e.cache.allocate(need)
	r.blocks += need
	for n := min(sim.hashable(i), e.fullBlocks(after)); r.hashed < n; r.hashed++ {
		k := sim.blockKey(i, r.hashed)
		if entry, empty, h := e.cache.probe(k); entry >= 0 {
			// Someone filled this prefix meanwhile: share theirs.
			e.cache.acquire(entry)
			e.cache.live--
		} else {
			e.cache.register(k, empty, h)
		}
	}
}

// releaseKV gives back request i's KV: its blocks (hashed ones from the
// last to the first) with the prefix cache, its tokens from the decode
// step's count without.
func (sim *simulation) releaseKV(i int) {
	e := sim.engine
	r := &e.reqs[i]
	if e.cache == nil {
		e.used -= sim.kvTokens(i)
		return
	}
	e.cache.live -= r.blocks - r.hashed
	for j := r.hashed - 1; j >= 0; j-- {
		e.cache.release(e.cache.find(sim.blockKey(i, j)))
	}
	r.blocks, r.hashed = 0, 0
}
