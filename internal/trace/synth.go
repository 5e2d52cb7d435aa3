package trace

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"servesim/internal/workload"
)

// SharedPrompts makes a synthetic trace's prompts open with shared system
// prompts, as chat and agent deployments send the same instructions ahead
// of each user's own text: every request's prompt is one of Prompts shared
// prompts of Tokens tokens each (chosen uniformly at random, seeded by the
// trace's seed), followed by the request's own tokens (the length the
// synthetic trace draws). Written as a Mooncake trace, the shared prompt's
// whole 512-token blocks carry that prompt's hash ids and every other
// block an id of the request's own, so that a prefix cache and a
// prefix-aware router find the shared part and nothing else. Prompts 0
// gives every block an id of its own.
type SharedPrompts struct {
	Prompts int
	Tokens  int
}

// Limits of SharedPrompts.
const (
	MaxSharedPrompts      = 1 << 20
	MaxSharedPromptTokens = 1 << 20
)

// Check checks the setting: Prompts from 0 to MaxSharedPrompts and, with
// prompts, Tokens from 1 to MaxSharedPromptTokens.
func (p SharedPrompts) Check() error {
	switch {
	case p.Prompts < 0 || p.Prompts > MaxSharedPrompts:
		return fmt.Errorf("%d shared prompts: expected 0 to %d", p.Prompts, MaxSharedPrompts)
	case p.Prompts > 0 && (p.Tokens < 1 || p.Tokens > MaxSharedPromptTokens):
		return fmt.Errorf("shared prompts of %d tokens: expected 1 to %d", p.Tokens, MaxSharedPromptTokens)
	}
	return nil
}

// ownIDBase is the first hash id of a request's own blocks: above every
// shared prompt's (prompt s's block b is s * MaxSharedPromptTokens + b).
const ownIDBase = int64(MaxSharedPrompts) * MaxSharedPromptTokens

// Synthesize returns the synthetic trace c as a Mooncake trace, its
// prompts opening with p's shared prompts; at most
// workload.MaxHeldRequests requests, as any trace servesim reads.
func Synthesize(c workload.SyntheticTrace, p SharedPrompts) (*Trace, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5ea7ed))
	t := &Trace{Format: Mooncake, hashStart: []int{0}}
	own := ownIDBase
	var tooMany error
	c.Each(func(at int64, prompt, output int) bool {
		if len(t.Requests) == workload.MaxHeldRequests {
			tooMany = errors.New("more requests than servesim reads from one trace")
			return false
		}
		shared, s := 0, int64(0)
		if p.Prompts > 0 {
			shared, s = p.Tokens, int64(rng.IntN(p.Prompts))
		}
		total := shared + prompt
		t.Requests = append(t.Requests, workload.Request{ID: len(t.Requests), ArrivalTimeS: float64(at) / 1e6,
			PromptTokens: total, OutputTokens: output})
		for b := 0; b*workload.HashIDBlockTokens < total; b++ {
			if (b+1)*workload.HashIDBlockTokens <= shared {
				t.hashIDs = append(t.hashIDs, s*MaxSharedPromptTokens+int64(b))
				continue
			}
			t.hashIDs = append(t.hashIDs, own)
			own++
		}
		t.hashStart = append(t.hashStart, len(t.hashIDs))
		return true
	})
	if tooMany != nil {
		return nil, tooMany
	}
	t.Workload = t.Workload.WithRequests(t.Requests)
	return t, nil
}
