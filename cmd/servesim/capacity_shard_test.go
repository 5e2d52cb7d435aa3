package main

import (
	"servesim/internal/capacity"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCapacityShardFlags is not parallel: it sets the environment.
func TestCapacityShardFlags(t *testing.T) {
	o, code, stderr := parseCapacity(t, "--shard", "2/3", "--max-replicas", "64")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, capacity.ShardFlags{Shard: "2/3", I: 2, N: 3}, o.ShardFlags)

	t.Setenv("JOB_COMPLETION_INDEX", "3")
	t.Setenv("SERVESIM_SHARD_COUNT", "4")
	o, code, stderr = parseCapacity(t, "--shard", "auto")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, capacity.ShardFlags{Shard: "auto", I: 4, N: 4}, o.ShardFlags)

	o, code, stderr = parseCapacity(t, "--evaluations", "a.jsonl,'cap-*.jsonl'", "--evaluations", "b.jsonl")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, []string{"a.jsonl", "'cap-*.jsonl'", "b.jsonl"}, o.Evaluations)
}
