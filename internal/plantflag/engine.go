package plantflag

import (
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// Engine holds the engine feature flags: --prefix-cache,
// --kv-block-tokens, --shared-prefix-tokens and --preemption.
type Engine struct {
	PrefixCache        bool
	KVBlockTokens      int // 0: plant.DefaultKVBlockTokens
	SharedPrefixTokens int
	Preemption         string
	// hashIDs are the block hash ids of the trace's requests, nil for a
	// trace without any.
	hashIDs plant.HashIDSource
}

// AddEngine binds the engine flags to o.
func AddEngine(cmd *cobra.Command, o *Engine) {
	f := cmd.Flags()
	f.BoolVar(&o.PrefixCache, "prefix-cache", false, "keep prompt prefixes in a block KV cache for later requests (see README, \"Engine features\")")
	f.IntVar(&o.KVBlockTokens, "kv-block-tokens", 0, "KV block size of --prefix-cache in `TOKENS` (default 16)")
	f.IntVar(&o.SharedPrefixTokens, "shared-prefix-tokens", 0, "with --prefix-cache: the first `N` tokens of every prompt are one shared prefix")
	f.StringVar(&o.Preemption, "preemption", string(plant.PreemptionNone), "when decoding runs out of KV: none (stall, as the reference) or recompute (preempt the latest admitted request and prefill it again later)")
}

// Check rejects engine flags that cannot mean anything, including a block
// size that leaves the plant of flags p without a whole block, or with
// more than plant.MaxKVBlocks.
func (o *Engine) Check(cmd *cobra.Command, p plant.Plant) error {
	flags := cmd.Flags()
	if _, err := plant.ParsePreemption(o.Preemption); err != nil {
		return fmt.Errorf("--preemption %q: expected none or recompute", o.Preemption)
	}
	for _, f := range []struct {
		name  string
		value int
		min   int
	}{{"kv-block-tokens", o.KVBlockTokens, 1}, {"shared-prefix-tokens", o.SharedPrefixTokens, 0}} {
		if !flags.Changed(f.name) {
			continue
		}
		if !o.PrefixCache {
			return fmt.Errorf("--%s %d: needs --prefix-cache", f.name, f.value)
		}
		if f.value < f.min {
			return fmt.Errorf("--%s %d: expected a whole number of tokens of at least %d", f.name, f.value, f.min)
		}
	}
	if !o.PrefixCache || !(p.KVCapacityTokens > 0) || math.IsInf(p.KVCapacityTokens, 0) {
		return nil // a bad --kv-capacity is the plant's error
	}
	block := o.Options().BlockTokens()
	if blocks := math.Floor(p.KVCapacityTokens / float64(block)); !(blocks >= 1 && blocks <= plant.MaxKVBlocks) {
		return fmt.Errorf("--kv-block-tokens %d: --kv-capacity %g holds %g blocks of %d tokens: expected 1 to %d blocks",
			block, p.KVCapacityTokens, blocks, block, plant.MaxKVBlocks)
	}
	return nil
}

// UseHashIDs gives the prefix cache the hash ids of the trace's requests
// (nil for a trace without any).
func (o *Engine) UseHashIDs(ids plant.HashIDSource) { o.hashIDs = ids }

// Options are the plant's engine options of the flags: with the prefix
// cache, the trace's hash ids (UseHashIDs) when it has some.
func (o *Engine) Options() plant.EngineOptions { return o.OptionsFor(o.hashIDs) }

// OptionsFor are the plant's engine options of the flags for a trace whose
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
