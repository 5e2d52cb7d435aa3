package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/runparams"
	"servesim/internal/simrun"
	"servesim/internal/trace"
)

// parseSimulate runs `servesim simulate args` with a runF that captures the
// options instead of simulating.
func parseSimulate(t *testing.T, args ...string) (*simulateOptions, int, string) {
	t.Helper()
	o, code, _, stderr := parseFlags(t, "simulate", newSimulateCmd, args...)
	return o, code, stderr
}

func TestSimulateFlagDefaults(t *testing.T) {
	t.Parallel()
	o, code, _ := parseSimulate(t)
	require.Equal(t, exitOK, code)
	want := plant.NewPlant(nil)
	assert.Equal(t, want, o.Plant)
	assert.Equal(t, "chunked", o.Scheduler)
	assert.Equal(t, "max", o.Controller)
	assert.Equal(t, 1, o.Stride)
	assert.True(t, math.IsInf(o.MaxElapsedS, 1))
	assert.Zero(t, o.Normalize)
	assert.False(t, o.Summary)
	assert.Empty(t, o.ProfilePath)
	assert.Empty(t, o.TracePath)
	assert.Equal(t, "json", o.Format)
	assert.Empty(t, o.Plot.Path)
	assert.Equal(t, plant.DefaultMaxSteps, o.MaxSteps)
	assert.Zero(t, o.SLO, "the profile's SLOs, no end-to-end SLO")
}

func TestSimulateFlagsSetEveryField(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseSimulate(t,
		"--profile", "p.csv", "--trace", "-", "--max-elapsed", "300", "--normalize", "0.8",
		"--scheduler", "static", "--controller", "sampled-reactive:2.5",
		"--time-step", "0.05", "--kv-capacity", "65536", "--kv-reserve", "512", "--max-active", "32",
		"--ambient", "30", "--thermal-tau", "20", "--thermal-resistance", "0.6", "--power-limit", "70",
		"--thermal-limit", "80", "--horizon", "120", "--max-sim-time", "86400",
		"--stride", "50", "--summary", "-o", "out.json", "--format", "table", "--plot", "run.svg", "--max-steps", "5e9",
		"--ttft-slo", "2.5", "--tpot-slo", "0.1", "--e2e-slo", "60", "--exec-timeout", "0.5",
		"--trace-columns", "arrival=a,prompt=b,output=c", "--time-unit", "ms",
		"--prefix-cache", "--kv-block-tokens", "32", "--shared-prefix-tokens", "512", "--preemption", "recompute")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, plant.Plant{
		TimeStepS: 0.05, KVCapacityTokens: 65536, DecodeKVReserveTokensPerActive: 512, MaxActiveRequests: 32,
		AmbientTemperatureC: 30, ThermalTimeConstantS: 20, ThermalResistanceCPerW: 0.6, PowerLimitW: 70,
		ThermalLimitC: 80, ReportingHorizonS: 120, MaxSimulationTimeS: 86400,
	}, o.Plant)
	assert.Equal(t, &simulateOptions{Config: simrun.Config{
		ProfilePath: "p.csv", TracePath: "-", MaxElapsedS: 300, Normalize: 0.8, Scheduler: "static",
		Trace: trace.Flags{Columns: []string{"arrival=a", "prompt=b", "output=c"}, TimeUnit: "ms",
			Options: trace.Options{Columns: &trace.Columns{Arrival: "a", Prompt: "b", Output: "c", Unit: trace.Milliseconds}}},
		Controller: "sampled-reactive:2.5", Stride: 50, Summary: true, Figure: true, Plant: o.Plant, MaxSteps: 5e9, ExecTimeoutS: 0.5,
		SLO:     plant.SLO{TTFTSeconds: 2.5, TPOTSeconds: 0.1, E2ESeconds: 60},
		Fleet:   simrun.Fleet{Replicas: 1, Router: "round-robin", RouterSeed: 1, Scale: defaultScale, Link: defaultLink},
		Engine:  runparams.Engine{PrefixCache: true, KVBlockTokens: 32, SharedPrefixTokens: 512, Preemption: "recompute"},
		Service: o.Service,
	}, Output: outputOptions{Path: "out.json"}, Format: "table", Plot: plotOptions{Path: "run.svg"}}, o)
	assert.Equal(t, plant.ServiceReference, o.Service.Kind, "the reference service model by default")
}

func TestSimulateUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scheduler", []string{"--scheduler", "fifo"}, `--scheduler: unknown scheduler "fifo"`},
		{"controller", []string{"--controller", "turbo"}, `--controller: unknown controller "turbo"`},
		{"fixed without clock", []string{"--controller", "fixed:"}, `clock MHz "" must be a finite positive number`},
		{"fixed not a number", []string{"--controller", "fixed:abc"}, `clock MHz "abc"`},
		{"sampled period", []string{"--controller", "sampled-reactive:0"}, `period in seconds "0"`},
		{"stride", []string{"--stride", "0"}, "--stride 0: expected a positive whole number"},
		{"normalize one", []string{"--normalize", "1"}, "--normalize 1: expected a number in (0, 1)"},
		{"normalize zero", []string{"--normalize", "0"}, "--normalize 0"},
		{"max elapsed", []string{"--max-elapsed", "-1"}, "--max-elapsed -1"},
		{"not a number", []string{"--time-step", "fast"}, `servesim: --time-step "fast": expected a positive number of seconds`},
		{"argument", []string{"extra"}, `unknown command "extra"`},
		{"ttft slo zero", []string{"--ttft-slo", "0"}, "--ttft-slo 0: expected a finite positive number of seconds"},
		{"tpot slo negative", []string{"--tpot-slo", "-0.1"}, "--tpot-slo -0.1: expected a finite positive number of seconds"},
		{"e2e slo infinite", []string{"--e2e-slo", "inf"}, "--e2e-slo +Inf: expected a finite positive number of seconds"},
		{"e2e slo nan", []string{"--e2e-slo", "NaN"}, "--e2e-slo NaN"},
		{"slo not a number", []string{"--ttft-slo", "soon"}, `--ttft-slo "soon": expected a finite positive number of seconds`},
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

func TestSimulateBadInputIsExitOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := func(body string) string {
		path := filepath.Join(dir, "t.csv")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"plant value", []string{"--time-step", "-1"}, "servesim: plant: --time-step: time_step_s -1: must be finite and positive"},
		{"thermal limit", []string{"--thermal-limit", "20"}, "thermal_limit_c 20: must exceed ambient_temperature_c 25"},
		{"max active", []string{"--max-active", "0"}, "--max-active: maximum_active_requests 0"},
		{"missing trace", []string{"--trace", filepath.Join(dir, "none.csv")}, "none.csv: open"},
		{"bad tokens", []string{"--trace", trace("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,-3\n")}, `t.csv line 2: GeneratedTokens "-3": token counts must be positive`},
		{"missing profile", []string{"--profile", filepath.Join(dir, "none.csv")}, "none.csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams("")
			code := run(context.Background(), append([]string{"simulate"}, tt.args...), s)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, out.String())
			assert.Contains(t, errOut.String(), tt.want)
			assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line")
		})
	}
}

func TestSimulateReadsStdinAndWritesTheReport(t *testing.T) {
	t.Parallel()
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,100,3\r\n2023-11-16 18:17:04.0799600,200,2\r\n"
	s, out, errOut := testStreams(csv)
	code := run(context.Background(), []string{"simulate", "--trace", "-", "--controller", "fixed:900", "--scheduler", "static"}, s)
	require.Equal(t, exitOK, code, errOut.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, "fixed_900_mhz", doc["controller_name"])
	assert.Equal(t, "static_batch_scheduler", doc["scheduler_name"])
	assert.Nil(t, doc["dilation"])
	prov := doc["provenance"].(map[string]any)
	assert.Equal(t, "stdin", prov["trace_path"])
	assert.EqualValues(t, 2, prov["requests_loaded"])
	assert.Len(t, doc["requests"], 2)
	assert.Equal(t, 1.0, doc["metrics"].(map[string]any)["completed_fraction"])
}
