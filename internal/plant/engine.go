package plant

import (
	"fmt"
	"math"
)

// Preemption is what the plant does when a decode step cannot get the KV
// it needs.
type Preemption string

// The preemption policies.
const (
	// PreemptionNone is the reference's behaviour: decoding takes what KV
	// is free and stalls when there is none.
	PreemptionNone Preemption = "none"
	// PreemptionRecompute is vLLM's recompute policy: the most recently
	// admitted running request gives its KV back and is prefilled again
	// later (see preempt.go).
	PreemptionRecompute Preemption = "recompute"
)

// PreemptionNames are the names of the preemption policies.
var PreemptionNames = []string{string(PreemptionNone), string(PreemptionRecompute)}

// ParsePreemption returns the policy called name: none or recompute.
func ParsePreemption(name string) (Preemption, error) {
	switch p := Preemption(name); p {
	case PreemptionNone, PreemptionRecompute:
		return p, nil
	}
	return "", fmt.Errorf("unknown preemption policy %q: expected none or recompute", name)
}

// DefaultKVBlockTokens is the KV block size of the prefix cache unless
// EngineOptions.KVBlockTokens says otherwise (vLLM's default).
const DefaultKVBlockTokens = 16

// EngineOptions turn on what real serving engines do and the reference
// plant does not. The zero value turns everything off, and a run is then
// the reference's, bit for bit.
type EngineOptions struct {
	// PrefixCache manages the KV cache in blocks of KVBlockTokens tokens
	// and keeps the blocks of prompt prefixes for later requests (see
	// prefix.go).
	PrefixCache bool
	// KVBlockTokens is the block size, tokens; 0 means
	// DefaultKVBlockTokens. Only with PrefixCache.
	KVBlockTokens int
	// SharedPrefixTokens is how many leading tokens every prompt shares
	// with every other, when the requests have no hash ids. Only with
	// PrefixCache.
	SharedPrefixTokens int
	// HashIDs, when set, gives the requests' block hash ids; a request
	// without any falls back to SharedPrefixTokens. Only with
	// PrefixCache.
	HashIDs HashIDSource
	// Preemption is the policy when decoding runs out of KV; "" means
	// PreemptionNone.
	Preemption Preemption
}

// Enabled reports whether any engine feature is on.
func (o EngineOptions) Enabled() bool {
	return o.PrefixCache || (o.Preemption != "" && o.Preemption != PreemptionNone)
}

// BlockTokens is the block size in use: KVBlockTokens, or
// DefaultKVBlockTokens for 0.
func (o EngineOptions) BlockTokens() int {
	if o.KVBlockTokens == 0 {
		return DefaultKVBlockTokens
	}
	return o.KVBlockTokens
}

// Names of the engine options in errors.
const (
	FieldKVBlockTokens      = "kv_block_tokens"
	FieldSharedPrefixTokens = "shared_prefix_tokens"
	FieldPreemption         = "preemption"
	FieldPrefixCache        = "prefix_cache"
)

// EngineError is an engine option that cannot be used.
type EngineError struct {
	Field  string // one of the Field* names
	Value  string // the value as given
	Reason string // what was expected
}

// Error names the field, its value and what was expected.
func (e *EngineError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Reason)
}

// Validate checks the options against plant p: block options only with the
// prefix cache, a block size of at least one token, at most MaxKVBlocks
// blocks and at least one, a known policy. The error is an *EngineError.
func (o EngineOptions) Validate(p Plant) error {
	if o.Preemption != "" {
		if _, err := ParsePreemption(string(o.Preemption)); err != nil {
			return &EngineError{Field: FieldPreemption, Value: fmt.Sprintf("%q", o.Preemption), Reason: "expected none or recompute"}
		}
	}
	if !o.PrefixCache {
		switch {
		case o.KVBlockTokens != 0:
			return &EngineError{Field: FieldKVBlockTokens, Value: fmt.Sprint(o.KVBlockTokens), Reason: "needs the prefix cache"}
		case o.SharedPrefixTokens != 0:
			return &EngineError{Field: FieldSharedPrefixTokens, Value: fmt.Sprint(o.SharedPrefixTokens), Reason: "needs the prefix cache"}
		case o.HashIDs != nil:
			return &EngineError{Field: FieldPrefixCache, Value: "false", Reason: "hash ids need the prefix cache"}
		}
		return nil
	}
	if o.SharedPrefixTokens < 0 {
		return &EngineError{Field: FieldSharedPrefixTokens, Value: fmt.Sprint(o.SharedPrefixTokens), Reason: "expected a nonnegative number of tokens"}
	}
	b := o.BlockTokens()
	if b < 1 {
		return &EngineError{Field: FieldKVBlockTokens, Value: fmt.Sprint(o.KVBlockTokens), Reason: "expected a positive number of tokens"}
	}
	if blocks := math.Floor(p.KVCapacityTokens / float64(b)); !(blocks >= 1 && blocks <= MaxKVBlocks) {
		return &EngineError{Field: FieldKVBlockTokens, Value: fmt.Sprint(b),
			Reason: fmt.Sprintf("kv_capacity_tokens %g holds %g blocks of %d tokens: expected 1 to %d", p.KVCapacityTokens, blocks, b, MaxKVBlocks)}
	}
	return nil
}

// EngineRecord is what the engine features did to one request.
type EngineRecord struct {
	// Preemptions counts the times the request was preempted.
	Preemptions int
	// RecomputedTokens counts the tokens prefilled again: prefill work
	// on positions of its context it had held before (see preempt.go).
	RecomputedTokens float64
	// RecomputeS is the time spent prefilling those tokens, s: each
	// step's recomputed tokens over that step's prefill rate.
	RecomputeS float64
	// RecomputeAfterFirstTokenS is the part of RecomputeS spent after
	// its first output token; the rest delays the first token.
	RecomputeAfterFirstTokenS float64
	// PrefixCachedTokens counts the prompt tokens it found in the prefix
	// cache without ever prefilling them (see prefix.go): a whole number
	// of blocks, unless it was preempted in the middle of a prefill.
	PrefixCachedTokens float64
}

// EngineReport is the `engine` block of a run with an engine feature on:
// the options and what they did. It is not among the reference's metrics.
type EngineReport struct {
	PrefixCache bool `json:"prefix_cache"` // prefix_cache: whether the prefix cache was on
	// kv_block_tokens and kv_capacity_blocks: the block size and the
	// blocks of the KV capacity; null without the prefix cache.
	KVBlockTokens    *int `json:"kv_block_tokens"`
	KVCapacityBlocks *int `json:"kv_capacity_blocks"`
	// prefix_source: where prompts' block hashes came from,
	// "shared_prefix_tokens" or "hash_ids" (some requests had them);
	// empty without the prefix cache.
	PrefixSource string `json:"prefix_source"`
	// shared_prefix_tokens: the shared prefix of every prompt without
	// hash ids, tokens; null without the prefix cache.
	SharedPrefixTokens *int `json:"shared_prefix_tokens"`
	// preemption: the policy, "none" or "recompute".
	Preemption Preemption `json:"preemption"`
	// prefix_cache_hit_rate: prefix_cached_tokens / prompt_tokens; null
	// without the prefix cache or without a completed request.
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	// prefix_cached_tokens: the completed requests' prompt tokens found in
	// the cache (EngineRecord.PrefixCachedTokens).
	PrefixCachedTokens float64 `json:"prefix_cached_tokens"`
	// prompt_tokens: the completed requests' prompt tokens.
	PromptTokens int `json:"prompt_tokens"`
	// prefix_cache_evictions: cached blocks evicted to make room.
	PrefixCacheEvictions int `json:"prefix_cache_evictions"`
	// preemptions: preemptions of all requests; preempted_requests: the
	// requests preempted at least once.
	Preemptions       int `json:"preemptions"`
	PreemptedRequests int `json:"preempted_requests"`
	// recomputed_tokens and recompute_time_s: EngineRecord's
	// RecomputedTokens and RecomputeS over all requests.
	RecomputedTokens float64 `json:"recomputed_tokens"`
	RecomputeTimeS   float64 `json:"recompute_time_s"`
	// Requests are the requests' records, in the order they were added
	// (workload order); not in the document.
	Requests []EngineRecord `json:"-"`
}

// engineRequest is the engine's state of one request.
type engineRequest struct {
	EngineRecord
	// hashIDs are its block hash ids, nil for none.
	hashIDs []int64
	// decoded counts the output tokens decoded since its last prefill
	// pass: its KV holds promptProcessed + decoded tokens, where
	// promptProcessed (in requestProgress) counts the context tokens of
	// its current prefill pass (the prompt, plus the tokens generated
	// before a preemption).
	decoded float64
	// highWater is the most context tokens it has ever held: prefill below
	// it is recomputation, cache hits above it are cached tokens.
	highWater float64
	// blocks is the number of KV blocks it holds, its first hashed of
	// them hashed (entries of the cache it references), the others
	// private. Prefix cache only.
	blocks, hashed int
	// lookedUp says its current prefill pass has looked up the cache.
	lookedUp bool
	// keep says it keeps its KV when it completes (Stepper.KeepKV), kept
	// that it completed and keeps it still.
	keep, kept bool
}

// engine is the state of the engine features of one run.
type engine struct {
	opt        EngineOptions
	preemption bool
	// cache is the block cache, nil without the prefix cache; blockTokens
	// its block size.
	cache       *kvBlocks
	blockTokens float64
	// capacityTokens is the KV capacity: the plant's, or its whole blocks
	// with the prefix cache.
	capacityTokens float64
	reqs           []engineRequest
	// waiting holds the preempted requests waiting to be prefilled
	// again, the last one first: they come before the plant's queue.
	waiting []int
	// used is the KV in use, tokens, during a decode step without the
	// prefix cache; unfinished counts the active requests not finished
	// in the current decode round.
	used       float64
	unfinished int
	// recompute lists this step's recomputation (request, tokens), for
	// charging its time once the step's prefill rate is known.
	recompute []recomputeCharge
	// sharedBlocks is the number of leading blocks every prompt without
	// hash ids shares.
	sharedBlocks int
	hashIDs      bool // some request had hash ids
	preemptions  int
}

type recomputeCharge struct {
	request int
	tokens  float64
}

// newEngine returns the engine state of a run on p with options o (valid
// and enabled), with room for capacity requests.
func newEngine(p Plant, o EngineOptions, capacity int) (*engine, error) {
	e := &engine{
		opt:            o,
		preemption:     o.Preemption == PreemptionRecompute,
		capacityTokens: p.KVCapacityTokens,
		reqs:           make([]engineRequest, 0, capacity),
		waiting:        make([]int, 0, min(p.MaxActiveRequests, capacity)+1),
		recompute:      make([]recomputeCharge, 0, min(p.MaxActiveRequests, capacity)+1),
	}
	if o.PrefixCache {
		b := o.BlockTokens()
		blocks := int(p.KVCapacityTokens / float64(b))
		cache, err := newKVBlocks(blocks)
		if err != nil {
			return nil, err
		}
		e.cache = cache
		e.blockTokens = float64(b)
		e.capacityTokens = float64(blocks * b)
		e.sharedBlocks = o.SharedPrefixTokens / b
	}
	return e, nil
}

// add appends the state of request r.
func (e *engine) add(r Request) {
	var ids []int64
	if e.cache != nil && e.opt.HashIDs != nil {
		ids = e.opt.HashIDs.HashIDs(r.ID)
		e.hashIDs = e.hashIDs || len(ids) > 0
	}
	e.reqs = append(e.reqs, engineRequest{hashIDs: ids})
}

// kvTokens is the KV request i holds, tokens.
func (sim *simulation) kvTokens(i int) float64 {
	return sim.progress[i].promptProcessed + sim.engine.reqs[i].decoded
}

// front returns the request the prefill serves next: the first preempted
// request waiting, else the queue's head.
func (sim *simulation) front() (int, bool) {
	if n := len(sim.engine.waiting); n > 0 {
		return sim.engine.waiting[n-1], true
	}
	return sim.head, sim.head < sim.pending
}

// popFront takes the front request out of the queue.
func (sim *simulation) popFront() {
	if n := len(sim.engine.waiting); n > 0 {
		sim.engine.waiting = sim.engine.waiting[:n-1]
		return
	}
	sim.queuedPrompt -= sim.records[sim.head].PromptTokens
	sim.head++
}

// holder returns the front request when it holds KV (it is in the middle
// of a prefill pass), else -1. No other queued request holds any.
func (sim *simulation) holder() int {
	if i, ok := sim.front(); ok && (sim.progress[i].promptProcessed > 0 || sim.engine.reqs[i].blocks > 0) {
		return i
	}
	return -1
}

// engineOccupancy is the KV in use, tokens: the live blocks with the
// prefix cache; else the tokens of the front request and of the active
// requests, summed in the order of the reference's occupancy.
func (sim *simulation) engineOccupancy() float64 {
	e := sim.engine
	if e.cache != nil {
		return float64(e.cache.live) * e.blockTokens
	}
	total := 0.0
	if i, ok := sim.front(); ok {
		total += sim.kvTokens(i)
	}
	for _, i := range sim.active {
		total += sim.kvTokens(i)
	}
	return total
}

// waitingCount is the number of preempted requests waiting to be
// prefilled again (0 for a plant without engine features).
func (e *engine) waitingCount() int {
	if e == nil {
		return 0
	}
	return len(e.waiting)
}

// observeWaiting adds the preempted requests waiting to obs: to the queue,
// its remaining prefill tokens and its oldest age.
func (sim *simulation) observeWaiting(obs *Observation) {
	e := sim.engine
	if e == nil || len(e.waiting) == 0 {
		return
	}
	obs.PrefillQueue += len(e.waiting)
	for _, i := range e.waiting {
		obs.PrefillRemainingTokens += sim.progress[i].prefillRemaining
		obs.OldestPrefillAgeS = pyMax(obs.OldestPrefillAgeS, pyMax(0, sim.timeS-sim.records[i].ArrivalTimeS))
	}
}

// waitingPrefill is the prefill tokens the preempted requests waiting
// still need.
func (sim *simulation) waitingPrefill() float64 {
	total := 0.0
	if sim.engine != nil {
		for _, i := range sim.engine.waiting {
			total += sim.progress[i].prefillRemaining
		}
	}
	return total
}

// chargeRecompute turns this step's recomputed tokens into time at the
// step's prefill rate, tokens per second.
func (e *engine) chargeRecompute(rate float64, records []RequestRecord) {
	if e == nil {
		return
	}
	for _, c := range e.recompute {
		t := c.tokens / pyMax(rate, RateFloorTokensPerS)
		r := &e.reqs[c.request]
		r.RecomputeS += t
		if !math.IsNaN(records[c.request].FirstTokenTimeS) {
			r.RecomputeAfterFirstTokenS += t
		}
	}
	e.recompute = e.recompute[:0]
}

// kvCapacityTokens is the KV capacity, tokens: the plant's, or its whole
// blocks with the prefix cache.
func (sim *simulation) kvCapacityTokens() float64 {
	if sim.engine == nil {
		return sim.plant.KVCapacityTokens
	}
	return sim.engine.capacityTokens
}

// engineRecords are the requests' engine records, nil when the engine
// features are off.
func (sim *simulation) engineRecords() []EngineRecord {
	if sim.engine == nil {
		return nil
	}
	records := make([]EngineRecord, len(sim.engine.reqs))
	for i := range sim.engine.reqs {
		records[i] = sim.engine.reqs[i].EngineRecord
	}
	return records
}

// markRecords points each of records (the run's, in workload order) at its
// preemptions and recomputed tokens when the report's preemption is
// recompute; nothing otherwise (nor for a nil report).
func (r *EngineReport) markRecords(records []RequestRecord) {
	if r == nil || r.Preemption != PreemptionRecompute || len(r.Requests) != len(records) {
		return
	}
	for i := range records {
		records[i].Preemptions = &r.Requests[i].Preemptions
		records[i].RecomputedTokens = &r.Requests[i].RecomputedTokens
	}
}

// engineReport is the engine block of the run.
func (sim *simulation) engineReport() *EngineReport {
	e := sim.engine
	if e == nil {
		return nil
	}
	rep := &EngineReport{
		PrefixCache:        e.cache != nil,
		Preemption:         PreemptionNone,
		PrefixCacheHitRate: math.NaN(),
		Preemptions:        e.preemptions,
		Requests:           sim.engineRecords(),
	}
	if e.preemption {
		rep.Preemption = PreemptionRecompute
	}
	for i := range rep.Requests {
		r := &rep.Requests[i]
		if r.Preemptions > 0 {
			rep.PreemptedRequests++
		}
		rep.RecomputedTokens += r.RecomputedTokens
		rep.RecomputeTimeS += r.RecomputeS
		if sim.records[i].Completed() {
			rep.PromptTokens += sim.records[i].PromptTokens
			rep.PrefixCachedTokens += r.PrefixCachedTokens
		}
	}
	if e.cache != nil {
		b, blocks, shared := int(e.blockTokens), e.cache.capacity, e.opt.SharedPrefixTokens
		rep.KVBlockTokens, rep.KVCapacityBlocks, rep.SharedPrefixTokens = &b, &blocks, &shared
		rep.PrefixSource = "shared_prefix_tokens"
		if e.hashIDs {
			rep.PrefixSource = "hash_ids"
		}
		rep.PrefixCacheEvictions = e.cache.evictions
		if rep.PromptTokens > 0 {
			rep.PrefixCacheHitRate = rep.PrefixCachedTokens / float64(rep.PromptTokens)
		}
	}
	return rep
}

// SumEngineReports is the engine block of a fleet: the replicas' counts
// summed, the hit rate of the sums, the options of the first (all replicas
// share them) and no per-request records; nil when reports has no block.
func SumEngineReports(reports []*EngineReport) *EngineReport {
	var sum *EngineReport
	for _, r := range reports {
		if r == nil {
			continue
		}
		if sum == nil {
			first := *r
			sum = &first
			sum.Requests = nil
			continue
		}
		sum.PrefixCachedTokens += r.PrefixCachedTokens
		sum.PromptTokens += r.PromptTokens
		sum.PrefixCacheEvictions += r.PrefixCacheEvictions
		sum.Preemptions += r.Preemptions
		sum.PreemptedRequests += r.PreemptedRequests
		sum.RecomputedTokens += r.RecomputedTokens
		sum.RecomputeTimeS += r.RecomputeTimeS
		if r.PrefixSource == "hash_ids" {
			sum.PrefixSource = r.PrefixSource
		}
	}
	if sum != nil && sum.PrefixCache && sum.PromptTokens > 0 {
		sum.PrefixCacheHitRate = sum.PrefixCachedTokens / float64(sum.PromptTokens)
	}
	return sum
}
