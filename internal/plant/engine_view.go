package plant

import (
	"fmt"
	"strings"

	"servesim/internal/texttable"
)

// WriteLines renders the engine block, when there is one, as a paragraph
// of a table (Report.Table, fleet's): the prefix cache's hits and
// evictions, the preemptions and their recomputation.
func (e *EngineReport) WriteLines(b *strings.Builder) {
	if e == nil {
		return
	}
	b.WriteByte('\n')
	if e.PrefixCache {
		fmt.Fprintf(b, "prefix cache (%d-token blocks, %d blocks): hit rate %s%% (%s of %d prompt tokens of completed requests), %d blocks evicted\n",
			*e.KVBlockTokens, *e.KVCapacityBlocks, texttable.Fixed(100*e.PrefixCacheHitRate, 2),
			texttable.Fixed(e.PrefixCachedTokens, 0), e.PromptTokens, e.PrefixCacheEvictions)
	}
	fmt.Fprintf(b, "preemption %s: %d preemptions of %d requests, %s tokens recomputed in %s s\n",
		e.Preemption, e.Preemptions, e.PreemptedRequests, texttable.Fixed(e.RecomputedTokens, 0), texttable.Fixed(e.RecomputeTimeS, 3))
}
