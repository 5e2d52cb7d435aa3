package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/simrun"
)

func TestSimulateFleetFlags(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseSimulate(t)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, simrun.Fleet{Replicas: 1, Router: "round-robin", RouterSeed: 1, Scale: defaultScale, Link: defaultLink}, o.Fleet, "one GPU by default")

	o, code, stderr = parseSimulate(t, "--replicas", "16", "--fleet", "f.json", "--router", "random", "--router-seed", "42", "--jobs", "3")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, simrun.Fleet{Replicas: 16, Path: "f.json", Router: "random", RouterSeed: 42, Jobs: 3, Enabled: true, Scale: defaultScale, Link: defaultLink}, o.Fleet)

	for _, args := range [][]string{{"--replicas", "2"}, {"--fleet", "f.json"}, {"--router", "least-tokens"}, {"--router-seed", "3"}} {
		o, code, stderr = parseSimulate(t, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.True(t, o.Fleet.Enabled, "%v asks for a fleet document", args)
	}
	for _, args := range [][]string{{"--replicas", "1"}, {"--jobs", "2"}} {
		o, code, stderr = parseSimulate(t, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.False(t, o.Fleet.Enabled, "%v keeps the single-GPU document", args)
	}
}

func TestSimulateFleetUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no replica", []string{"--replicas", "0"}, "--replicas 0: expected a whole number from 1 to 4096"},
		{"negative replicas", []string{"--replicas", "-3"}, "--replicas -3: expected a whole number from 1 to 4096"},
		{"too many replicas", []string{"--replicas", "4097"}, "--replicas 4097: expected a whole number from 1 to 4096"},
		{"replicas not a number", []string{"--replicas", "many"}, `--replicas "many": expected a whole number from 1 to 4096`},
		{"router", []string{"--router", "fastest"}, `--router "fastest": expected round-robin, random, least-outstanding, least-tokens, prefix-aware, session`},
		{"router seed", []string{"--router-seed", "-1"}, `--router-seed "-1": expected a whole number, 0 or more`},
		{"jobs", []string{"--jobs", "-1"}, "--jobs -1: expected a nonnegative number"},
		{"normalize fleet", []string{"--fleet", "f.json", "--normalize", "0.5"}, "--normalize cannot be combined with --fleet"},
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

// TestFleetDocument checks the fleet document's top-level keys and their
// order, and that a fleet of one replica has the single-GPU metrics and
// slo block.
func TestFleetDocument(t *testing.T) {
	t.Parallel()
	s, out, errOut := testStreams("")
	require.Equal(t, exitOK, run(context.Background(), []string{"simulate", "--max-elapsed", "600", "--stride", "100", "--replicas", "2"}, s), errOut.String())
	var keys []string
	dec := json.NewDecoder(strings.NewReader(out.String()))
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, key.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	assert.Equal(t, []string{"metrics", "slo", "fleet", "replicas", "requests", "summary", "dilation", "plant", "provenance"}, keys)
	var doc struct {
		Metrics  map[string]any   `json:"metrics"`
		Replicas []map[string]any `json:"replicas"`
		Requests []map[string]any `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Len(t, doc.Metrics, 23)
	require.Len(t, doc.Replicas, 2)
	for _, key := range []string{"replica", "group", "profile_status", "controller_name", "scheduler_name", "requests_routed", "metrics", "slo", "time_s", "phase"} {
		assert.Contains(t, doc.Replicas[1], key)
	}
	assert.Len(t, doc.Requests[0], 8, "the single-GPU record plus replica")

	single, singleOut, errOut := testStreams("")
	require.Equal(t, exitOK, run(context.Background(), []string{"simulate", "--max-elapsed", "600", "--summary"}, single), errOut.String())
	one, oneOut, errOut := testStreams("")
	require.Equal(t, exitOK, run(context.Background(), []string{"simulate", "--max-elapsed", "600", "--summary", "--router", "least-outstanding"}, one), errOut.String())
	var a, b struct {
		Metrics json.RawMessage `json:"metrics"`
		SLO     json.RawMessage `json:"slo"`
		Summary json.RawMessage `json:"summary"`
	}
	require.NoError(t, json.Unmarshal(singleOut.Bytes(), &a))
	require.NoError(t, json.Unmarshal(oneOut.Bytes(), &b))
	assert.JSONEq(t, string(a.Metrics), string(b.Metrics))
	assert.JSONEq(t, string(a.SLO), string(b.SLO))
	assert.JSONEq(t, string(a.Summary), string(b.Summary))
}

// defaultScale is the autoscaling flags' defaults, without --autoscale.
var defaultScale = simrun.Scale{MinReplicas: fleet.DefaultMinReplicas, MaxReplicas: fleet.DefaultMaxReplicas,
	IntervalS: fleet.DefaultScaleIntervalS, ColdStartS: fleet.DefaultProvisionS + fleet.DefaultLoadS,
	ProvisionS: fleet.DefaultProvisionS, LoadS: fleet.DefaultLoadS,
	GPUCostPerHour: fleet.DefaultGPUCostPerHour, EnergyPricePerKWh: fleet.DefaultEnergyPricePerKWh,
	PowerBudget: fleet.BudgetEqual}

func TestSimulateScaleFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args              []string
		provision, load   float64
		initial, min, max int
	}{
		{[]string{"--autoscale", "static"}, 150, 150, 1, 1, 100},
		{[]string{"--autoscale", "static", "--cold-start", "100"}, 50, 50, 1, 1, 100},
		{[]string{"--autoscale", "static", "--cold-start", "100", "--provision-time", "70"}, 70, 30, 1, 1, 100},
		{[]string{"--autoscale", "static", "--cold-start", "100", "--load-time", "10"}, 90, 10, 1, 1, 100},
		{[]string{"--autoscale", "queue:target=3", "--replicas", "4", "--min-replicas", "2", "--max-replicas", "9"}, 150, 150, 4, 2, 9},
		{[]string{"--autoscale", "queue:target=3", "--min-replicas", "3"}, 150, 150, 3, 3, 100},
	} {
		o, code, stderr := parseSimulate(t, tc.args...)
		require.Equal(t, exitOK, code, stderr)
		s := o.Fleet.Scale
		assert.True(t, o.Fleet.Enabled, "%v", tc.args)
		assert.Equal(t, tc.provision, s.ProvisionS, "%v", tc.args)
		assert.Equal(t, tc.load, s.LoadS, "%v", tc.args)
		assert.Equal(t, tc.min, s.MinReplicas, "%v", tc.args)
		assert.Equal(t, tc.max, s.MaxReplicas, "%v", tc.args)
		assert.Equal(t, tc.initial, s.Initial(), "%v", tc.args)
	}
	_, code, stderr := parseSimulate(t, "--autoscale", "static", "--cold-start", "100", "--provision-time", "70", "--load-time", "20")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--cold-start 100: not --provision-time 70 plus --load-time 20")
}
