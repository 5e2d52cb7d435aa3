package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/runparams"
)

func TestEngineFlagsDefaultToTheReference(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseSimulate(t)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, runparams.Engine{Preemption: "none"}, o.Engine)
	assert.False(t, o.Engine.Options().Enabled())
}

func TestEngineFlagsReachThePlant(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseSimulate(t, "--prefix-cache", "--shared-prefix-tokens", "300", "--preemption", "recompute")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 300, Preemption: plant.PreemptionRecompute}, o.Engine.Options())
	assert.Equal(t, plant.DefaultKVBlockTokens, o.Engine.Options().BlockTokens())
}

func TestEngineFlagUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"block size without the cache", []string{"--kv-block-tokens", "32"}, "--kv-block-tokens 32: needs --prefix-cache"},
		{"shared prefix without the cache", []string{"--shared-prefix-tokens", "64"}, "--shared-prefix-tokens 64: needs --prefix-cache"},
		{"unknown policy", []string{"--preemption", "unknown-policy"}, `--preemption "unknown-policy": expected none or recompute`},
		{"zero block", []string{"--prefix-cache", "--kv-block-tokens", "0"}, "--kv-block-tokens 0: expected a whole number of tokens of at least 1"},
		{"negative prefix", []string{"--prefix-cache", "--shared-prefix-tokens", "-1"}, "--shared-prefix-tokens -1: expected a whole number of tokens of at least 0"},
		{"block over the capacity", []string{"--prefix-cache", "--kv-block-tokens", "200000"}, "--kv-block-tokens 200000: --kv-capacity 131072 holds 0 blocks of 200000 tokens: expected 1 to 2097152 blocks"},
		{"too many blocks", []string{"--prefix-cache", "--kv-block-tokens", "1", "--kv-capacity", "1e9"}, "--kv-block-tokens 1: --kv-capacity 1e+09 holds 1e+09 blocks of 1 tokens"},
		{"default block over the capacity", []string{"--prefix-cache", "--kv-capacity", "8"}, "--kv-block-tokens 16: --kv-capacity 8 holds 0 blocks"},
		{"block not a number", []string{"--prefix-cache", "--kv-block-tokens", "big"}, `--kv-block-tokens "big"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, code, stderr := parseSimulate(t, tt.args...)
			assert.Nil(t, o)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tt.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
		})
	}
}
