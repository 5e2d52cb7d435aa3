package runparams

import (
	"math"

	"servesim/internal/plant"
)

// Engine holds the engine feature settings: prefix-cache,
// kv-block-tokens, shared-prefix-tokens and preemption.
type Engine struct {
	PrefixCache        bool
	KVBlockTokens      int // 0: plant.DefaultKVBlockTokens
	SharedPrefixTokens int
	Preemption         string
	// hashIDs are the block hash ids of the trace's requests, nil for a
	// trace without any.
	hashIDs plant.HashIDSource
}

// Check rejects engine settings that cannot mean anything, including a
// block size that leaves the plant p without a whole block, or with more
// than plant.MaxKVBlocks; given says which settings were given (by name).
func (o *Engine) Check(given func(name string) bool, p plant.Plant) error {
	if _, err := plant.ParsePreemption(o.Preemption); err != nil {
		return Errorf("%s %q: expected none or recompute", Setting("preemption"), o.Preemption)
	}
	for _, f := range []struct {
		name  Setting
		value int
		min   int
	}{{"kv-block-tokens", o.KVBlockTokens, 1}, {"shared-prefix-tokens", o.SharedPrefixTokens, 0}} {
		if !given(string(f.name)) {
			continue
		}
		if !o.PrefixCache {
			return Errorf("%s %d: needs %s", f.name, f.value, Setting("prefix-cache"))
		}
		if f.value < f.min {
			return Errorf("%s %d: expected a whole number of tokens of at least %d", f.name, f.value, f.min)
		}
	}
	if !o.PrefixCache || !(p.KVCapacityTokens > 0) || math.IsInf(p.KVCapacityTokens, 0) {
		return nil // a bad kv-capacity is the plant's error
	}
	block := o.Options().BlockTokens()
	if blocks := math.Floor(p.KVCapacityTokens / float64(block)); !(blocks >= 1 && blocks <= plant.MaxKVBlocks) {
		return Errorf("%s %d: %s %g holds %g blocks of %d tokens: expected 1 to %d blocks",
			Setting("kv-block-tokens"), block, Setting("kv-capacity"), p.KVCapacityTokens, blocks, block, plant.MaxKVBlocks)
	}
	return nil
}

// UseHashIDs gives the prefix cache the hash ids of the trace's requests
// (nil for a trace without any).
func (o *Engine) UseHashIDs(ids plant.HashIDSource) { o.hashIDs = ids }

// Options are the plant's engine options of the settings: with the prefix
// cache, the trace's hash ids (UseHashIDs) when it has some.
func (o *Engine) Options() plant.EngineOptions { return o.OptionsFor(o.hashIDs) }

// OptionsFor are the plant's engine options of the settings for a trace whose
// requests have the hash ids ids (nil for none).
func (o *Engine) OptionsFor(ids plant.HashIDSource) plant.EngineOptions {
	opt := plant.EngineOptions{
		PrefixCache:        o.PrefixCache,
		KVBlockTokens:      o.KVBlockTokens,
		SharedPrefixTokens: o.SharedPrefixTokens,
		Preemption:         plant.Preemption(o.Preemption),
	}
	if o.PrefixCache {
		opt.HashIDs = ids
	}
	return opt
}
