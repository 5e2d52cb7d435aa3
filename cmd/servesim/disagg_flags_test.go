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
	c, code, stderr = parseCapacity(t, "--disaggregated", "--over-time", "3600", "--out-plan", "plan.csv", "-o", "plan.csv")
	require.Equal(t, exitOK, code, "-o may name --out-plan's file: the pools' plans are beside it: %s", stderr)
	assert.Equal(t, 3600.0, c.OverTimeS)
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
		{"capacity", []string{"--disaggregated", "--over-time", "60", "--out-plan", "plan.csv", "-o", "plan.prefill.csv"},
			"--out-plan plan.csv: with --disaggregated it writes the prefill pool's plan to plan.prefill.csv, which -o writes already"},
		{"capacity", []string{"--disaggregated", "--over-time", "60", "--out-plan", "plan", "-o", "./plan.decode"},
			"--out-plan plan: with --disaggregated it writes the decode pool's plan to plan.decode, which -o writes already"},
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

func TestPoolPlanPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, prefill, decode string }{
		{"plan.csv", "plan.prefill.csv", "plan.decode.csv"},
		{"out/day.plan.csv", "out/day.plan.prefill.csv", "out/day.plan.decode.csv"},
		{"plan", "plan.prefill", "plan.decode"},
		{"dir.d/plan", "dir.d/plan.prefill", "dir.d/plan.decode"},
	} {
		assert.Equal(t, tc.prefill, poolPlanPath(tc.path, fleet.RolePrefill), tc.path)
		assert.Equal(t, tc.decode, poolPlanPath(tc.path, fleet.RoleDecode), tc.path)
	}
}
