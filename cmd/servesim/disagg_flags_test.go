package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
)

// defaultLink is the KV transfer link the flags give by default.
var defaultLink = fleet.Link{BandwidthGBps: fleet.DefaultKVTransferBandwidthGBps, LatencyS: fleet.DefaultKVTransferLatencyS}

// TestDisaggregationFlags: the link flags of simulate and capacity, and
// capacity's --disaggregated; bad values are usage errors naming the flag.
func TestDisaggregationFlags(t *testing.T) {
	t.Parallel()
	s, code, stderr := parseSimulate(t, "--fleet", "pd.json", "--kv-transfer-bandwidth", "inf", "--kv-transfer-latency", "0.002")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, fleet.Link{BandwidthGBps: math.Inf(1), LatencyS: 0.002}, s.Fleet.Link)
	c, code, stderr := parseCapacity(t, "--disaggregated", "--kv-transfer-bandwidth", "12.5")
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, c.Disaggregated)
	assert.Equal(t, fleet.Link{BandwidthGBps: 12.5}, c.Link)
	for _, tc := range []struct {
		command string
		args    []string
		want    string
	}{
		{"simulate", []string{"--kv-transfer-bandwidth", "0"}, "--kv-transfer-bandwidth 0: expected a positive bandwidth in GB/s"},
		{"simulate", []string{"--kv-transfer-bandwidth", "-1"}, "--kv-transfer-bandwidth -1: expected a positive bandwidth in GB/s"},
		{"simulate", []string{"--kv-transfer-latency", "-0.1"}, "--kv-transfer-latency -0.1: expected a finite nonnegative latency in seconds"},
		{"capacity", []string{"--disaggregated", "--kv-transfer-latency", "inf"}, "--kv-transfer-latency +Inf: expected a finite nonnegative latency in seconds"},
		{"capacity", []string{"--disaggregated", "--shard", "1/2"}, "--disaggregated runs a whole study"},
		{"capacity", []string{"--disaggregated", "--over-time", "60"}, "--disaggregated cannot be combined with --over-time"},
	} {
		var code int
		var stderr string
		if tc.command == "simulate" {
			_, code, stderr = parseSimulate(t, tc.args...)
		} else {
			_, code, stderr = parseCapacity(t, tc.args...)
		}
		assert.Equal(t, exitUsage, code, "%s %v", tc.command, tc.args)
		assert.Contains(t, stderr, tc.want, "%s %v", tc.command, tc.args)
	}
}
