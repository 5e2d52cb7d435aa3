package plantflag

import (
	"github.com/spf13/cobra"

	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// AddEngine binds the engine flags to o.
func AddEngine(cmd *cobra.Command, o *runparams.Engine) {
	f := cmd.Flags()
	f.BoolVar(&o.PrefixCache, "prefix-cache", false, "keep prompt prefixes in a block KV cache for later requests (see README, \"Engine features\")")
	f.IntVar(&o.KVBlockTokens, "kv-block-tokens", 0, "KV block size of --prefix-cache in `TOKENS` (default 16)")
	f.IntVar(&o.SharedPrefixTokens, "shared-prefix-tokens", 0, "with --prefix-cache: the first `N` tokens of every prompt are one shared prefix")
	f.StringVar(&o.Preemption, "preemption", string(plant.PreemptionNone), "when decoding runs out of KV: none (stall, as the reference) or recompute (preempt the latest admitted request and prefill it again later)")
}
