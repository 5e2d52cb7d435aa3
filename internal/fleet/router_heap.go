package fleet

// A CostRouter is a Router that sends each request to the replica of the
// least cost (the lowest index on a tie), a cost read from the replica's
// state alone. A lock-step fleet then keeps its replicas in a heap by
// cost during each round of routing, which finds that replica in O(1) and
// keeps the heap in O(log N) per request routed, where Route scans every
// replica; the choices are Route's, bit for bit.
type CostRouter interface {
	Router
	Cost(s *ReplicaState) float64
}

// costHeap is the replicas of a routing round in a binary min-heap by
// their cost under a CostRouter, then by index: its top is the replica
// argmin picks.
type costHeap struct {
	router CostRouter
	cost   []float64 // by replica
	heap   []int     // replica indices, heap-ordered
	pos    []int     // pos[k]: replica k's place in heap
}

// newCostHeap returns the heap of router's choices, or nil when router is
// not a CostRouter.
func newCostHeap(router Router) *costHeap {
	c, ok := router.(CostRouter)
	if !ok {
		return nil
	}
	return &costHeap{router: c}
}

// reset fills the heap with the replicas of states, in O(N).
func (h *costHeap) reset(states []ReplicaState) {
	n := len(states)
	h.cost, h.heap, h.pos = h.cost[:0], h.heap[:0], h.pos[:0]
	for k := range states {
		h.cost = append(h.cost, h.router.Cost(&states[k]))
		h.heap = append(h.heap, k)
		h.pos = append(h.pos, k)
	}
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// top is the replica of the least cost, the lowest index on a tie.
func (h *costHeap) top() int { return h.heap[0] }

// update takes replica k's new state s.
func (h *costHeap) update(k int, s *ReplicaState) {
	h.cost[k] = h.router.Cost(s)
	i := h.pos[k]
	h.up(i)
	h.down(h.pos[k])
}

// less orders replicas a and b by cost, then index.
func (h *costHeap) less(a, b int) bool {
	ca, cb := h.cost[a], h.cost[b]
	return ca < cb || (ca == cb && a < b)
}

func (h *costHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.pos[h.heap[i]], h.pos[h.heap[j]] = i, j
}

func (h *costHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.heap[i], h.heap[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *costHeap) down(i int) {
	n := len(h.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && h.less(h.heap[l], h.heap[least]) {
			least = l
		}
		if r := 2*i + 2; r < n && h.less(h.heap[r], h.heap[least]) {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}
