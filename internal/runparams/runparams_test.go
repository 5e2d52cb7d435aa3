package runparams

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// dashed names a setting as its flag.
func dashed(s Setting) string { return "--" + string(s) }

func TestParseValue(t *testing.T) {
	t.Parallel()
	maxActive, ok := ByName("max-active")
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
	_, ok = ByName("no-such-flag")
	assert.False(t, ok)
}

func TestFieldNamedAndAxisKey(t *testing.T) {
	t.Parallel()
	err := FieldNamed(&plant.FieldError{Field: "time_step_s", Value: -1, Why: "must be finite and positive"})
	assert.EqualError(t, err, "time-step: time_step_s -1: must be finite and positive")
	assert.Equal(t, "--time-step: time_step_s -1: must be finite and positive", Named(err, dashed).Error())
	var fe *plant.FieldError
	assert.ErrorAs(t, err, &fe)
	var field *FieldError
	require.ErrorAs(t, err, &field)
	assert.Equal(t, Setting("time-step"), field.Field)
	other := errors.New("other")
	assert.Equal(t, other, FieldNamed(other))
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

func TestCheckWorkNamesTheSettings(t *testing.T) {
	t.Parallel()
	p := plant.NewPlant(nil)
	p.MaxSimulationTimeS = 1e6
	assert.NoError(t, CheckWork(plant.NewPlant(nil), plant.Options{Summary: true, MaxSteps: plant.DefaultMaxSteps}, false))
	err := CheckWork(p, plant.Options{Summary: true, MaxSteps: 0}, false)
	assert.EqualError(t, err, "max-steps 0: expected a number of steps of at least 1")
	assert.EqualError(t, Named(err, dashed), "--max-steps 0: expected a number of steps of at least 1")
	err = CheckWork(p, plant.Options{Summary: true, MaxSteps: 1000}, false)
	assert.EqualError(t, err, "max-sim-time 1e+06 / time-step 0.1 = 1e+07 simulation steps: more than max-steps 1000 (raise max-steps, shorten max-sim-time or lengthen time-step)")
	assert.EqualError(t, Named(err, dashed), "--max-sim-time 1e+06 / --time-step 0.1 = 1e+07 simulation steps: more than --max-steps 1000 (raise --max-steps, shorten --max-sim-time or lengthen --time-step)")
	err = CheckWork(p, plant.Options{Stride: 1, MaxSteps: plant.DefaultMaxSteps}, true)
	assert.ErrorContains(t, Named(err, dashed), "--plot draws every step: ")
	err = CheckWork(p, plant.Options{Stride: 1, MaxSteps: plant.DefaultMaxSteps}, false)
	assert.ErrorContains(t, Named(err, dashed), "at --stride 1 keep ")
	var field *FieldError
	require.ErrorAs(t, err, &field)
	assert.Equal(t, Setting("max-sim-time"), field.Field)
}

func TestCheckSLOValues(t *testing.T) {
	t.Parallel()
	assert.NoError(t, CheckSLOValues(plant.SLO{}), "zero: the defaults")
	assert.NoError(t, CheckSLOValues(plant.SLO{TTFTSeconds: 1, E2ESeconds: 2}))
	assert.EqualError(t, CheckSLOValues(plant.SLO{TPOTSeconds: -1}), "tpot-slo -1: expected a finite positive number of seconds")
	assert.EqualError(t, CheckSLOValues(plant.SLO{E2ESeconds: math.NaN()}), "e2e-slo NaN: expected a finite positive number of seconds")
}
