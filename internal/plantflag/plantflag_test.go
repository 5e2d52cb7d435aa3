package plantflag

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

func TestParseValue(t *testing.T) {
	t.Parallel()
	maxActive, ok := ByFlag("max-active")
	require.True(t, ok)
	tests := []struct {
		param Param
		in    string
		want  float64
		err   string
	}{
		{Params[0], "0.05", 0.05, ""},
		{Params[0], "abc", 0, `"abc": expected a positive number of seconds`},
		{maxActive, "12", 12, ""},
		{maxActive, "1.5", 0, `"1.5": expected a positive whole number`},
		{maxActive, "1e12", 0, `"1e12": expected a positive whole number`},
	}
	for _, tt := range tests {
		got, err := tt.param.ParseValue(tt.in)
		if tt.err != "" {
			assert.EqualError(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	_, ok = ByFlag("no-such-flag")
	assert.False(t, ok)
}

func TestValueSetsThePlant(t *testing.T) {
	t.Parallel()
	p := plant.NewPlant(nil)
	for _, pp := range Params {
		v := Value{pp, &p}
		require.NoError(t, v.Set("7"), pp.Flag)
		assert.Equal(t, 7.0, pp.Get(&p), pp.Flag)
		assert.Equal(t, "7", v.String(), pp.Flag)
	}
	assert.Equal(t, 7, p.MaxActiveRequests)
	assert.Equal(t, "int", Value{Param: Params[3]}.Type())
	assert.Equal(t, "", Value{Param: Params[0]}.String(), "no plant yet")
}

func TestFlagNamedAndAxisKey(t *testing.T) {
	t.Parallel()
	err := FlagNamed(&plant.FieldError{Field: "time_step_s", Value: -1, Why: "must be finite and positive"})
	assert.EqualError(t, err, "--time-step: time_step_s -1: must be finite and positive")
	var fe *plant.FieldError
	assert.ErrorAs(t, err, &fe)
	other := errors.New("other")
	assert.Equal(t, other, FlagNamed(other))
	assert.Equal(t, "power_limit_w", AxisKey("power-limit"))
	assert.Equal(t, "scheduler", AxisKey("scheduler"))
}

func TestControllerOptionsClampTheTimeout(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 2*time.Second, ControllerOptions(2, nil).ExecTimeout)
	assert.Equal(t, time.Nanosecond, ControllerOptions(1e-12, nil).ExecTimeout)
	assert.Equal(t, time.Duration(math.MaxInt64), ControllerOptions(1e300, nil).ExecTimeout)
	assert.NoError(t, CheckExecTimeout(0.5))
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		assert.ErrorContains(t, CheckExecTimeout(bad), "expected "+ExecTimeoutExpected)
	}
}

func TestCheckWorkNamesTheFlags(t *testing.T) {
	t.Parallel()
	p := plant.NewPlant(nil)
	p.MaxSimulationTimeS = 1e6
	assert.NoError(t, CheckWork(plant.NewPlant(nil), plant.Options{Summary: true, MaxSteps: plant.DefaultMaxSteps}, false))
	assert.EqualError(t, CheckWork(p, plant.Options{Summary: true, MaxSteps: 0}, false), "--max-steps 0: expected a number of steps of at least 1")
	err := CheckWork(p, plant.Options{Summary: true, MaxSteps: 1000}, false)
	assert.ErrorContains(t, err, "more than --max-steps 1000 (raise --max-steps")
	err = CheckWork(p, plant.Options{Stride: 1, MaxSteps: plant.DefaultMaxSteps}, true)
	assert.ErrorContains(t, err, "--plot draws every step: ")
	err = CheckWork(p, plant.Options{Stride: 1, MaxSteps: plant.DefaultMaxSteps}, false)
	assert.ErrorContains(t, err, "at --stride 1 keep ")
}

func TestAddPlantAxesGivesTheFlagsGiven(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "sweep", RunE: func(*cobra.Command, []string) error { return nil }}
	axes := AddPlantAxes(cmd)
	cmd.SetArgs([]string{"--power-limit", "55, 64.8", "--max-active", "32"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, map[string][]string{"power-limit": {"55", "64.8"}, "max-active": {"32"}}, axes())
}

// TestSLOFlagsOneRule: a flag given must be a finite positive number of
// seconds, 0 included, with one message whatever the fault; objectives set
// without flags are checked by the same rule, zero meaning the default.
func TestSLOFlagsOneRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--ttft-slo", "0.4", "--tpot-slo", "0.05", "--e2e-slo", "5"}, ""},
		{[]string{"--ttft-slo", "0"}, "--ttft-slo 0: expected a finite positive number of seconds"},
		{[]string{"--tpot-slo", "-1"}, "--tpot-slo -1: expected a finite positive number of seconds"},
		{[]string{"--e2e-slo", "Inf"}, "--e2e-slo +Inf: expected a finite positive number of seconds"},
		{[]string{"--e2e-slo", "NaN"}, "--e2e-slo NaN: expected a finite positive number of seconds"},
	}
	for _, tt := range tests {
		var slo plant.SLO
		cmd := &cobra.Command{Use: "x", RunE: func(cmd *cobra.Command, _ []string) error { return CheckSLO(cmd, &slo) }}
		AddSLO(cmd, &slo)
		cmd.SetArgs(tt.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if tt.want == "" {
			require.NoError(t, err)
			assert.Equal(t, plant.SLO{TTFTSeconds: 0.4, TPOTSeconds: 0.05, E2ESeconds: 5}, slo)
			continue
		}
		assert.EqualError(t, err, tt.want, "%v", tt.args)
	}
	var slo plant.SLO
	cmd := &cobra.Command{Use: "x"}
	AddSLO(cmd, &slo)
	err := cmd.Flags().Set("ttft-slo", "abc")
	require.Error(t, err)
	assert.Equal(t, "a finite positive number of seconds", cmd.Flags().Lookup("ttft-slo").Value.(interface{ Expected() string }).Expected())

	assert.NoError(t, CheckSLOValues(plant.SLO{}), "zero: the defaults")
	assert.NoError(t, CheckSLOValues(plant.SLO{TTFTSeconds: 1, E2ESeconds: 2}))
	assert.EqualError(t, CheckSLOValues(plant.SLO{TPOTSeconds: -1}), "--tpot-slo -1: expected a finite positive number of seconds")
	assert.EqualError(t, CheckSLOValues(plant.SLO{E2ESeconds: math.NaN()}), "--e2e-slo NaN: expected a finite positive number of seconds")
}
