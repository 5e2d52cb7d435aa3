package trace

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// TestSynthesizeSharesThePromptsBlocks: every request's prompt is a shared
// prompt plus its own drawn tokens; the shared prompt's whole blocks carry
// its ids, equal across the requests that drew it, and every other block an
// id no other block has; the trace reads back as written.
func TestSynthesizeSharesThePromptsBlocks(t *testing.T) {
	base := workload.CodeTraceLike(3, 600)
	own := base.Requests()
	for _, tc := range []struct {
		name   string
		shared SharedPrompts
		whole  int // whole shared blocks per prompt
	}{
		{"none", SharedPrompts{}, 0},
		{"four of 1024", SharedPrompts{Prompts: 4, Tokens: 1024}, 2},
		{"three of 700", SharedPrompts{Prompts: 3, Tokens: 700}, 1},
		{"one of 100", SharedPrompts{Prompts: 1, Tokens: 100}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Synthesize(base, tc.shared)
			require.NoError(t, err)
			require.Len(t, tr.Requests, len(own))
			prompts := map[int64]int{} // first shared id -> the prompt's requests
			seen := map[int64]bool{}
			for i, r := range tr.Requests {
				shared := 0
				if tc.shared.Prompts > 0 {
					shared = tc.shared.Tokens
				}
				assert.Equal(t, own[i].PromptTokens+shared, r.PromptTokens, "request %d: the shared prompt, then its own", i)
				assert.Equal(t, own[i].OutputTokens, r.OutputTokens)
				ids := tr.HashIDs(i)
				require.Len(t, ids, (r.PromptTokens+workload.HashIDBlockTokens-1)/workload.HashIDBlockTokens, "request %d: an id a block", i)
				for b, id := range ids {
					if b < tc.whole {
						assert.Less(t, id, ownIDBase, "request %d block %d: the shared prompt's", i, b)
						continue
					}
					assert.GreaterOrEqual(t, id, ownIDBase, "request %d block %d: its own", i, b)
					assert.False(t, seen[id], "request %d block %d: id %d given twice", i, b, id)
					seen[id] = true
				}
				if tc.whole > 0 {
					prompts[ids[0]]++
				}
			}
			if tc.whole > 0 {
				assert.Len(t, prompts, tc.shared.Prompts, "every shared prompt drawn")
			}

			var buf bytes.Buffer
			require.NoError(t, WriteMooncake(&buf, tr))
			back, err := Load(&buf, "synth.jsonl", workload.NoElapsedLimit, Options{})
			require.NoError(t, err)
			require.Len(t, back.Requests, len(tr.Requests))
			first := tr.Requests[0].ArrivalTimeS
			for i := range back.Requests {
				assert.InDelta(t, tr.Requests[i].ArrivalTimeS-first, back.Requests[i].ArrivalTimeS, 1e-6)
				assert.Equal(t, tr.Requests[i].PromptTokens, back.Requests[i].PromptTokens)
				assert.Equal(t, tr.HashIDs(i), back.HashIDs(i))
			}
		})
	}
}

func TestSynthesizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		shared SharedPrompts
		want   string
	}{
		{SharedPrompts{Prompts: -1}, "-1 shared prompts: expected 0 to 1048576"},
		{SharedPrompts{Prompts: MaxSharedPrompts + 1, Tokens: 10}, "1048577 shared prompts: expected 0 to 1048576"},
		{SharedPrompts{Prompts: 2}, "shared prompts of 0 tokens: expected 1 to 1048576"},
		{SharedPrompts{Prompts: 2, Tokens: MaxSharedPromptTokens + 1}, "shared prompts of 1048577 tokens: expected 1 to 1048576"},
	} {
		_, err := Synthesize(workload.CodeTraceLike(1, 10), tc.shared)
		assert.EqualError(t, err, tc.want)
	}
}
