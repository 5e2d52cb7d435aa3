package main

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/capacity"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
	"servesim/internal/sharedtest"
	"servesim/internal/trace"
)

// parseCapacity runs `servesim capacity args` with a runF that captures the
// options instead of running the study.
func parseCapacity(t *testing.T, args ...string) (*capacityOptions, int, string) {
	t.Helper()
	o, code, _, stderr := parseFlags(t, "capacity", newCapacityCmd, args...)
	return o, code, stderr
}

func TestCapacityFlagDefaults(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseCapacity(t)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, &capacityOptions{Config: capacity.Config{
		MaxElapsedS: math.Inf(1), Attainment: 0.99, Router: "round-robin", RouterSeed: 1,
		Controllers: []string{"max"}, ExecTimeoutS: 5, Scheduler: "chunked", MaxReplicas: 1024, Jobs: 0,
		Plant: plant.NewPlant(nil), Trace: trace.Flags{TimeUnit: "s"}, Engine: runparams.Engine{Preemption: "none"},
		Service: o.Service, Link: defaultLink,
	}, Format: "json"}, o)
	assert.Equal(t, plant.ServiceReference, o.Service.Kind, "the reference service model by default")
}

func TestCapacityFlagsSetEveryField(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseCapacity(t, "--trace", "t.csv", "--fleet", "f.json", "--max-elapsed", "900",
		"--ttft-slo", "2", "--tpot-slo", "0.2", "--e2e-slo", "30", "--attainment", "0.9", "--router", "random",
		"--router-seed", "7", "--controller", "max,reactive", "--controller", "fixed:1500", "--exec-timeout", "0.25", "--scheduler", "static",
		"--max-replicas", "64", "--jobs", "3", "--quiet", "--format", "table", "-o", "out.json", "--power-limit", "70",
		"--trace-format", "burstgpt", "--trace-filter", "model=GPT-4,log-type=API log",
		"--prefix-cache", "--kv-block-tokens", "8", "--shared-prefix-tokens", "100", "--preemption", "recompute")
	require.Equal(t, exitOK, code, stderr)
	p := plant.NewPlant(nil)
	p.PowerLimitW = 70
	assert.Equal(t, &capacityOptions{Config: capacity.Config{
		TracePath: "t.csv", FleetPath: "f.json", MaxElapsedS: 900, SLO: plant.SLO{TTFTSeconds: 2, TPOTSeconds: 0.2, E2ESeconds: 30},
		Attainment: 0.9, Router: "random", RouterSeed: 7, Controllers: []string{"max", "reactive", "fixed:1500"},
		ExecTimeoutS: 0.25, Scheduler: "static", MaxReplicas: 64, Jobs: 3, Plant: p,
		Trace: trace.Flags{Format: "burstgpt", Filter: []string{"model=GPT-4", "log-type=API log"}, TimeUnit: "s",
			Options: trace.Options{Format: trace.BurstGPT, Filter: trace.Filter{Models: []string{"GPT-4"}, LogTypes: []string{"API log"}}}},
		Engine:  runparams.Engine{PrefixCache: true, KVBlockTokens: 8, SharedPrefixTokens: 100, Preemption: "recompute"},
		Service: o.Service, Link: defaultLink,
	}, Quiet: true, Format: "table", Output: outputOptions{Path: "out.json"}}, o)
}

func TestCapacityUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"attainment zero", []string{"--attainment", "0"}, "--attainment 0: expected a share greater than 0 and at most 1"},
		{"attainment above one", []string{"--attainment", "1.01"}, "--attainment 1.01"},
		{"attainment nan", []string{"--attainment", "NaN"}, "--attainment NaN"},
		{"router", []string{"--router", "nearest"}, `--router: unknown router "nearest": expected round-robin, random, least-outstanding, least-tokens, prefix-aware, session`},
		{"controller", []string{"--controller", "max,turbo"}, `--controller: unknown controller "turbo"`},
		{"no controller", []string{"--controller", ""}, "--controller: expected at least one controller"},
		{"scheduler", []string{"--scheduler", "fifo"}, `--scheduler: unknown scheduler "fifo"`},
		{"max replicas zero", []string{"--max-replicas", "0"}, "--max-replicas 0: expected 1 to 4096"},
		{"max replicas too many", []string{"--max-replicas", "5000"}, "--max-replicas 5000: expected 1 to 4096"},
		{"jobs", []string{"--jobs", "-1"}, "--jobs -1: expected a nonnegative number (0: all cores)"},
		{"ttft slo", []string{"--ttft-slo", "-1"}, "--ttft-slo -1: expected a finite positive number of seconds"},
		{"e2e slo", []string{"--e2e-slo", "0"}, "--e2e-slo 0"},
		{"max elapsed", []string{"--max-elapsed", "-5"}, "--max-elapsed -5"},
		{"format", []string{"--format", "csv"}, `--format "csv": expected json or table`},
		{"argument", []string{"extra"}, `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, code, stderr := parseCapacity(t, tt.args...)
			assert.Nil(t, o)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tt.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
		})
	}
}

// TestCapacityOnTheCodeTrace runs capacity on the first 15 minutes of the
// Azure 2023 code trace with the reference's L4 rows and checks the answer
// against fleet simulations of its own: the answer meets the target, one
// replica fewer does not.
func TestCapacityOnTheCodeTrace(t *testing.T) {
	t.Parallel()
	tracePath := sharedtest.CodeTrace(t)
	prof := sharedtest.Reference(t, "data", "l4_proxy", "l4_profile.csv")
	s, out, errOut := testStreams("")
	code := run(context.Background(), []string{"capacity", "--trace", tracePath, "--profile", prof, "--max-elapsed", "900",
		"--ttft-slo", "60", "--attainment", "0.9", "--controller", "max,reactive"}, s)
	require.Equal(t, exitOK, code, errOut.String())
	assert.Empty(t, errOut.String(), "no progress off a terminal")
	var doc struct {
		Replicas    *int                  `json:"replicas"`
		Evaluations []capacity.Evaluation `json:"evaluations"`
		Controllers []struct {
			Controller string `json:"controller"`
			capacity.Evaluation
		} `json:"controllers"`
		SLO struct {
			TTFT float64  `json:"ttft_slo_s"`
			TPOT float64  `json:"tpot_slo_s"`
			E2E  *float64 `json:"e2e_slo_s"`
		} `json:"slo"`
		Provenance struct {
			RequestsLoaded int `json:"requests_loaded"`
		} `json:"provenance"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.NotNil(t, doc.Replicas)
	answer := *doc.Replicas
	assert.Equal(t, 60.0, doc.SLO.TTFT)
	assert.InDelta(t, 1.5*0.05705563711023753, doc.SLO.TPOT, 1e-15, "the profile's TPOT SLO")
	assert.Nil(t, doc.SLO.E2E)
	assert.Equal(t, 2598, doc.Provenance.RequestsLoaded)
	require.Len(t, doc.Controllers, 2)

	w, err := (&trace.Source{Path: tracePath, MaxElapsedS: 900}).Load()
	require.NoError(t, err)
	p, err := profile.Load(prof)
	require.NoError(t, err)
	slo := plant.SLO{TTFTSeconds: 60}
	for _, n := range []int{answer - 1, answer} {
		groups := []fleet.Group{{Replicas: n, Profile: p, Scheduler: "chunked", Controller: "max"}}
		res, err := fleet.Simulate(w.Requests, fleet.Config{Plant: plant.NewPlant(nil), Groups: groups,
			Options: plant.Options{Summary: true, SLO: slo}})
		require.NoError(t, err)
		got := capacity.Judge(res, groups, slo)
		assert.Equal(t, n == answer, got.Attainment >= 0.9, "%d replicas: attainment %v", n, got.Attainment)
		for _, e := range doc.Evaluations {
			if e.Replicas == n {
				assert.Equal(t, got.Attainment, e.Attainment)
				assert.Equal(t, got.EnergyPerOutputTokenJ, e.EnergyPerOutputTokenJ)
			}
		}
	}
	assert.Equal(t, "max", doc.Controllers[0].Controller)
	assert.Equal(t, "reactive", doc.Controllers[1].Controller)
}

func TestCapacityProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		terminal bool
		args     []string
		wantBar  bool
	}{
		{"terminal", true, nil, true},
		{"terminal, quiet", true, []string{"-q"}, false},
		{"pipe", false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams("")
			s.ErrIsTerminal = tt.terminal
			code := run(context.Background(), append([]string{"capacity", "--max-elapsed", "120", "--ttft-slo", "5", "--attainment", "0.9"}, tt.args...), s)
			require.Equal(t, exitOK, code, errOut.String())
			assert.Equal(t, tt.wantBar, strings.Contains(errOut.String(), "capacity"), errOut.String())
			if tt.wantBar {
				assert.True(t, strings.HasSuffix(errOut.String(), "\r\x1b[K"), "the bar is erased at the end")
			}
			var doc map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "progress never goes to stdout")
		})
	}
}
