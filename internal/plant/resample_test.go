package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestThinnedEqualsARunWithThatStride(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	run := func(opt Options) *Result {
		c, err := NewController("reactive")
		require.NoError(t, err)
		res, err := Simulate(requests, p, ChunkedPrefill{}, c, opt)
		require.NoError(t, err)
		return res
	}
	full := run(Options{Stride: 1})
	require.Greater(t, full.Len(), 1000)
	tests := []Options{{Stride: 1}, {Stride: 7}, {Stride: 50}, {Stride: 100000}, {Stride: 3, Summary: true}}
	for _, opt := range tests {
		want := run(opt)
		got := full.Thinned(opt.Stride, opt.Summary)
		assert.Equal(t, want, got, "stride %d summary %v", opt.Stride, opt.Summary)
	}
	assert.Equal(t, run(Options{Stride: 1}), full, "thinning leaves the full result unchanged")
}
