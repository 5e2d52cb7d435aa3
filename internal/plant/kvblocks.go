package plant

import "fmt"

// MaxKVBlocks bounds the KV blocks of a plant with the prefix cache
// (kv_capacity_tokens / kv_block_tokens): the block table and its hash
// index are allocated up front, about 48 bytes a block, so 2^21 blocks take
// about 100 MB. A default plant has 8192 blocks of 16 tokens.
const MaxKVBlocks = 1 << 21

// PrefixKey identifies what a KV block of a prompt holds: the tokens of a
// prefix, so two requests whose blocks have the same key can share it.
// kind says how the other fields read (see prefix.go). Keys are
// comparable; EngineOptions.AppendPrefixKeys gives a prompt's shareable
// ones, as a router hashing the prompt would.
type PrefixKey struct {
	id   uint64
	pos  uint32
	kind uint8
}

// blockKey is the plant's name of a PrefixKey.
type blockKey = PrefixKey

// Hash is the key's 64-bit hash, the one the cache indexes it by.
func (k PrefixKey) Hash() uint64 { return hash(k) }

// kvEntry is one hashed block: a full prompt block registered under its
// key. While some request holds it (refs > 0) it is live; otherwise it is
// cached, on the LRU list, until evicted.
type kvEntry struct {
	key  blockKey
	refs int32
	// prev and next link the LRU list while refs == 0; next also links
	// the free entries.
	prev, next int32
}

// kvBlocks is the KV cache of a plant with the prefix cache, counted in
// blocks: live blocks (held by some request: its private blocks and the
// hashed blocks it references) and cached blocks (hashed blocks nobody
// holds), with live + cached <= capacity at all times. Cached blocks are
// evicted least recently used first when a request needs room.
//
// Every structure is allocated up front from the capacity: the entries,
// the LRU list threaded through them, and an open-addressing hash index
// (linear probing, at most half full, backward-shift deletion). No
// operation allocates.
type kvBlocks struct {
	capacity  int // blocks
	live      int // blocks some request holds
	cached    int // hashed blocks nobody holds (the LRU list's length)
	evictions int // cached blocks evicted so far

	entries []kvEntry
	free    int32 // first free entry, or -1
	// lruHead is the least recently used cached entry, lruTail the most
	// recently used; -1 when the list is empty.
	lruHead, lruTail int32
	// slots index the entries by key: 0 for an empty slot, else the
	// entry index + 1 in the low 32 bits and the high 32 bits of the key's
	// hash above them, so that a probe reads an entry only when its hash
	// matches. Its length is a power of two at least twice the capacity.
	slots []uint64
	mask  uint64
}

// newKVBlocks returns an empty cache of capacity blocks, 1 <= capacity <=
// MaxKVBlocks.
func newKVBlocks(capacity int) (*kvBlocks, error) {
	if capacity < 1 || capacity > MaxKVBlocks {
		return nil, fmt.Errorf("%d KV blocks: expected 1 to %d", capacity, MaxKVBlocks)
	}
	size := 1
	for size < 2*capacity {
		size *= 2
	}
	b := &kvBlocks{
		capacity: capacity,
		entries:  make([]kvEntry, capacity),
		slots:    make([]uint64, size),
		mask:     uint64(size - 1),
		lruHead:  -1,
		lruTail:  -1,
	}
	for i := range b.entries {
		b.entries[i].next = int32(i + 1)
	}
	b.entries[capacity-1].next = -1
	return b, nil
}

// available is the number of blocks a request can be given: the free ones
// and the cached ones, which can be evicted.
func (b *kvBlocks) available() int { return b.capacity - b.live }

// hash mixes a key's fields (the splitmix64 finalizer).
func hash(k blockKey) uint64 {
	x := k.id ^ (uint64(k.pos)<<8|uint64(k.kind))*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// home is the slot of hash h.
func (b *kvBlocks) home(h uint64) uint64 { return h & b.mask }

// slot is the slot value of entry e whose key has hash h.
func slot(h uint64, e int32) uint64 { return h&^(1<<32-1) | uint64(e+1) }

// find returns the entry holding key, or -1.
func (b *kvBlocks) find(k blockKey) int32 {
	e, _, _ := b.probe(k)
	return e
}

// probe returns the entry holding key k, or -1 and the empty slot where k
// belongs and k's hash.
func (b *kvBlocks) probe(k blockKey) (entry int32, empty, h uint64) {
	h = hash(k)
	high := h &^ (1<<32 - 1)
	for s := b.home(h); ; s = (s + 1) & b.mask {
		v := b.slots[s]
		if v == 0 {
			return -1, s, h
		}
		if e := int32(uint32(v)) - 1; v&^(1<<32-1) == high && b.entries[e].key == k {
			return e, 0, h
		}
	}
}

// register turns one of the live blocks into the hashed block of key k,
// held once, at the empty slot and with the hash probe found for k: the
// live count does not change.
func (b *kvBlocks) register(k blockKey, empty, h uint64) {
	e := b.free
	b.free = b.entries[e].next
	b.entries[e] = kvEntry{key: k, refs: 1, prev: -1, next: -1}
	b.slots[empty] = slot(h, e)
}

// acquire adds a holder to entry e; a cached entry becomes live.
func (b *kvBlocks) acquire(e int32) {
	entry := &b.entries[e]
	if entry.refs == 0 {
		b.unlink(e)
		b.cached--
		b.live++
	}
	entry.refs++
}

// release removes a holder from entry e; an entry nobody holds any more
// becomes cached, the most recently used.
func (b *kvBlocks) release(e int32) {
	entry := &b.entries[e]
	entry.refs--
	if entry.refs > 0 {
		return
	}
	entry.prev, entry.next = b.lruTail, -1
	if b.lruTail >= 0 {
		b.entries[b.lruTail].next = e
	} else {
		b.lruHead = e
	}
	b.lruTail = e
	b.live--
	b.cached++
}

// unlink takes entry e off the LRU list.
func (b *kvBlocks) unlink(e int32) {
	entry := &b.entries[e]
	if entry.prev >= 0 {
		b.entries[entry.prev].next = entry.next
	} else {
		b.lruHead = entry.next
	}
	if entry.next >= 0 {
		b.entries[entry.next].prev = entry.prev
	} else {
		b.lruTail = entry.prev
	}
	entry.prev, entry.next = -1, -1
}

// allocate gives n new private blocks, n <= available(), evicting the least
// recently used cached blocks as needed to keep live + cached within the
// capacity.
func (b *kvBlocks) allocate(n int) {
	for b.live+b.cached+n > b.capacity {
		b.evict()
	}
	b.live += n
}

// evict drops the least recently used cached block.
func (b *kvBlocks) evict() {
	e := b.lruHead
	b.unlink(e)
	b.remove(e)
	b.entries[e].next = b.free
	b.free = e
	b.cached--
	b.evictions++
}

// remove deletes entry e from the index, shifting the entries after it
// back so that no probe sequence is broken.
func (b *kvBlocks) remove(e int32) {
	h := hash(b.entries[e].key)
	s := b.home(h)
	for b.slots[s] != slot(h, e) {
		s = (s + 1) & b.mask
	}
	for {
		b.slots[s] = 0
		next := s
		for {
			next = (next + 1) & b.mask
			v := b.slots[next]
			if v == 0 {
				return
			}
			// The entry at next may move to s unless its home lies
			// cyclically in (s, next]. Its home is its hash's low bits,
			// which the slot does not keep: rehash its key.
			home := b.home(hash(b.entries[int32(uint32(v))-1].key))
			if s <= next && (home <= s || home > next) || s > next && home <= s && home > next {
				b.slots[s] = v
				s = next
				break
			}
		}
	}
}
