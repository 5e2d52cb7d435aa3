package fleet

import "servesim/internal/plant"

// prefixIndex is the approximate index of the prefix-aware router: what it
// sent where, as vLLM production-stack's prefix router and llm-d's
// approximate prefix-cache producer keep it. It keys prompts in chunks
// of stride blocks (ApproximateChunkTokens): of a prompt's shared blocks
// (plant.PrefixKey) it keeps the last of each whole chunk and the last
// one, so a prefix held whole is matched to its last block and one held in
// part to its last whole chunk. For each replica it holds an LRU set of
// the chunk keys of the prompts routed to it, at most its cache's blocks
// over stride: a chunk is assumed cached from the request that sent it
// until the replica has been sent that many other chunks since it was
// last used. It never sees an eviction the replica makes for its running
// requests' own blocks, nor a block the replica dropped: it is what a
// router knows without KV events.
//
// Keys are touched from a prompt's last shared block to its first, so a
// prefix's first blocks are the most recently used, as the plant releases
// them: a replica holding block j of a prefix then holds blocks 0..j-1.
//
// One chained hash table keys the nodes (a key held by a replica) by the
// block key alone, so a key's chain lists its holders; each replica's nodes
// form its LRU list. Nodes and buckets grow by doubling and are reused: a
// run whose replicas' sets are full allocates nothing.
//
// Replicas are known by their cache (plant.PrefixCache) rather than by
// their position among the states a router is handed, which changes when
// an elastic fleet starts or drains one.
type prefixIndex struct {
	stride int // blocks per chunk
	// keys and depth are the chunk keys of the last request matched and
	// the blocks each reaches (the key's block index plus one).
	keys  []plant.PrefixKey
	depth []int

	nodes   []indexNode
	free    int32   // first free node, -1 for none
	buckets []int32 // first node of each chain, -1 for none
	mask    uint64
	used    int // nodes in use

	replicas []indexReplica              // by replica id
	ids      map[plant.PrefixCache]int32 // the id of each replica seen
	// slots[k] is the id of the replica at position k of the last
	// states, views[k] its cache.
	slots []int32
	views []plant.PrefixCache
	// hit[id] is the leading keys of the routed request replica id holds,
	// for the ids in touched (0 for the others).
	hit     []int32
	touched []int32
}

// indexNode is one key held by one replica.
type indexNode struct {
	key          plant.PrefixKey
	replica      int32
	hprev, hnext int32 // its chain in the hash table
	lprev, lnext int32 // its replica's LRU list, the least recent first
}

// indexReplica is one replica's LRU set.
type indexReplica struct {
	head, tail int32 // least and most recently used node, -1 when empty
	count      int   // nodes held
	capacity   int   // nodes it may hold: its cache's blocks over the stride, rounded up
}

// newPrefixIndex returns an empty index of chunks of stride blocks.
func newPrefixIndex(stride int) *prefixIndex {
	return &prefixIndex{stride: max(1, stride), free: -1, ids: map[plant.PrefixCache]int32{}}
}

// bind maps the positions of states to replica ids, giving a replica seen
// for the first time an empty set the size of its cache. It costs one
// comparison per replica when the replicas are those of the last call.
func (x *prefixIndex) bind(states []ReplicaState) {
	if len(x.slots) != len(states) {
		x.slots = append(x.slots[:0], make([]int32, len(states))...)
		x.views = append(x.views[:0], make([]plant.PrefixCache, len(states))...)
		for k := range x.slots {
			x.slots[k] = -1
		}
	}
	for k := range states {
		v := states[k].Prefix
		if x.slots[k] >= 0 && x.views[k] == v {
			continue
		}
		id, ok := x.ids[v]
		if !ok {
			id = int32(len(x.replicas))
			x.ids[v] = id
			capacity := (v.CapacityBlocks() + x.stride - 1) / x.stride
			x.replicas = append(x.replicas, indexReplica{head: -1, tail: -1, capacity: capacity})
			x.hit = append(x.hit, 0)
		}
		x.slots[k], x.views[k] = id, v
	}
}

// match takes the chunk keys of a request's shared block keys, and sets
// hit[id] to the number of its leading chunk keys each replica holds, for
// the replicas holding the first (listed in touched); it walks the chain
// of each chunk key while some replica still matches.
func (x *prefixIndex) match(keys []plant.PrefixKey) {
	x.keys, x.depth = x.keys[:0], x.depth[:0]
	for j := range keys {
		if (j+1)%x.stride == 0 || j == len(keys)-1 {
			x.keys = append(x.keys, keys[j])
			x.depth = append(x.depth, j+1)
		}
	}
	x.clear()
	if x.used == 0 {
		return
	}
	for j, key := range x.keys {
		advanced := false
		for n := x.buckets[key.Hash()&x.mask]; n >= 0; n = x.nodes[n].hnext {
			node := &x.nodes[n]
			if node.key != key {
				continue
			}
			id := node.replica
			switch {
			case j == 0:
				x.touched = append(x.touched, id)
			case x.hit[id] != int32(j):
				continue
			}
			x.hit[id] = int32(j + 1)
			advanced = true
		}
		if !advanced {
			return
		}
	}
}

// clear resets the hits of the last match.
func (x *prefixIndex) clear() {
	for _, id := range x.touched {
		x.hit[id] = 0
	}
	x.touched = x.touched[:0]
}

// hitAt is the leading blocks of the matched request the replica at
// position k holds: the depth of its last chunk key held.
func (x *prefixIndex) hitAt(k int) int {
	if h := x.hit[x.slots[k]]; h > 0 {
		return x.depth[h-1]
	}
	return 0
}

// record notes that the replica at position k was sent the matched
// request: each of its chunk keys becomes the replica's most recently
// used, the first key last, evicting its least recently used ones beyond
// its capacity.
func (x *prefixIndex) record(k int) {
	keys := x.keys
	id := x.slots[k]
	r := &x.replicas[id]
	if r.capacity == 0 {
		return
	}
	for j := len(keys) - 1; j >= 0; j-- {
		n := x.find(keys[j], id)
		if n >= 0 {
			x.unlinkLRU(n)
		} else {
			if r.count == r.capacity {
				old := r.head
				x.unlinkLRU(old)
				x.remove(old)
				r.count--
			}
			n = x.insert(keys[j], id)
			r.count++
		}
		x.pushLRU(n)
	}
}

// find returns the node of key held by replica id, or -1.
func (x *prefixIndex) find(key plant.PrefixKey, id int32) int32 {
	if x.used == 0 {
		return -1
	}
	for n := x.buckets[key.Hash()&x.mask]; n >= 0; n = x.nodes[n].hnext {
		if x.nodes[n].replica == id && x.nodes[n].key == key {
			return n
		}
	}
	return -1
}

// insert adds a node for key held by replica id at the head of its chain,
// growing the table to keep chains short.
func (x *prefixIndex) insert(key plant.PrefixKey, id int32) int32 {
	if x.used >= len(x.buckets) {
		x.grow()
	}
	n := x.free
	if n >= 0 {
		x.free = x.nodes[n].hnext
	} else {
		n = int32(len(x.nodes))
		x.nodes = append(x.nodes, indexNode{})
	}
	b := key.Hash() & x.mask
	head := x.buckets[b]
	x.nodes[n] = indexNode{key: key, replica: id, hprev: -1, hnext: head, lprev: -1, lnext: -1}
	if head >= 0 {
		x.nodes[head].hprev = n
	}
	x.buckets[b] = n
	x.used++
	return n
}

// remove takes node n out of its chain and frees it.
func (x *prefixIndex) remove(n int32) {
	node := &x.nodes[n]
	if node.hprev >= 0 {
		x.nodes[node.hprev].hnext = node.hnext
	} else {
		x.buckets[node.key.Hash()&x.mask] = node.hnext
	}
	if node.hnext >= 0 {
		x.nodes[node.hnext].hprev = node.hprev
	}
	node.hnext, node.hprev = x.free, -1
	x.free = n
	x.used--
}

// grow doubles the buckets (at least 64) and rechains the nodes in use.
func (x *prefixIndex) grow() {
	size := max(64, 2*len(x.buckets))
	x.buckets = make([]int32, size)
	for b := range x.buckets {
		x.buckets[b] = -1
	}
	x.mask = uint64(size - 1)
	for _, r := range x.replicas {
		for n := r.head; n >= 0; n = x.nodes[n].lnext {
			node := &x.nodes[n]
			b := node.key.Hash() & x.mask
			node.hprev, node.hnext = -1, x.buckets[b]
			if node.hnext >= 0 {
				x.nodes[node.hnext].hprev = n
			}
			x.buckets[b] = n
		}
	}
}

// pushLRU makes node n its replica's most recently used.
func (x *prefixIndex) pushLRU(n int32) {
	node := &x.nodes[n]
	r := &x.replicas[node.replica]
	node.lprev, node.lnext = r.tail, -1
	if r.tail >= 0 {
		x.nodes[r.tail].lnext = n
	} else {
		r.head = n
	}
	r.tail = n
}

// unlinkLRU takes node n off its replica's LRU list.
func (x *prefixIndex) unlinkLRU(n int32) {
	node := &x.nodes[n]
	r := &x.replicas[node.replica]
	if node.lprev >= 0 {
		x.nodes[node.lprev].lnext = node.lnext
	} else {
		r.head = node.lnext
	}
	if node.lnext >= 0 {
		x.nodes[node.lnext].lprev = node.lprev
	} else {
		r.tail = node.lprev
	}
	node.lprev, node.lnext = -1, -1
}
