package plant

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestCheckWork(t *testing.T) {
	plantWith := func(stepS, maxSimS float64) Plant {
		p := NewPlant(profile.Default())
		p.TimeStepS, p.MaxSimulationTimeS = stepS, maxSimS
		return p
	}
	tests := []struct {
		name      string
		stepS     float64
		maxSimS   float64
		opt       Options
		wantLimit string // "" when the run is within the limits
		want      string
	}{
		{"defaults", 0.1, 3600, Options{}, "", ""},
		{"a day, every step kept", 0.1, 86400, Options{Stride: 1}, "", ""},
		{"1e-9 s steps", 1e-9, 3600, Options{Summary: true}, LimitSteps,
			"maximum_simulation_time_s 3600 / time_step_s 1e-09 = 3.6e+12 simulation steps: more than max_steps 1e+09"},
		{"1e-300 s steps", 1e-300, 3600, Options{Summary: true}, LimitSteps, "= 3.6e+303 simulation steps"},
		{"a quotient past the float range", 1e-320, 3600, Options{Summary: true}, LimitSteps, "= over 1.8e+308 simulation steps"},
		{"1e18 s of simulated time", 0.1, 1e18, Options{Summary: true}, LimitSteps, "= 1e+19 simulation steps"},
		{"raised step limit", 1e-6, 3600, Options{Summary: true, MaxSteps: 4e9}, "", ""},
		{"just over a raised limit", 1e-6, 3600, Options{Summary: true, MaxSteps: 3.6e9}, LimitSteps, "more than max_steps 3.6e+09"},
		{"exactly the step limit", 1, 1e9 - 1, Options{Summary: true}, "", ""},
		{"one step over", 1, 1e9, Options{Summary: true}, LimitSteps, "= 1000000001 simulation steps: more than max_steps 1e+09"},
		{"a long kept trajectory", 0.1, 1e7, Options{Stride: 1}, LimitTrajectorySamples,
			"maximum_simulation_time_s 1e+07 / time_step_s 0.1 = 1e+08 simulation steps at stride 1 keep 1e+08 trajectory samples: more than trajectory_samples 1e+07"},
		{"the same thinned enough", 0.1, 1e7, Options{Stride: int(MinStride(1e8 + 1))}, "", ""},
		{"the same as a summary", 0.1, 1e7, Options{Summary: true}, "", ""},
		{"invalid plants are Validate's", 0, 3600, Options{}, "", ""},
		{"NaN time step", math.NaN(), 3600, Options{}, "", ""},
		{"infinite simulation time", 0.1, math.Inf(1), Options{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWork(plantWith(tt.stepS, tt.maxSimS), tt.opt)
			if tt.wantLimit == "" {
				require.NoError(t, err)
				return
			}
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.wantLimit, le.Limit)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestSimulateRefusesWorkPastTheLimitsBeforeAllocating checks that the
// library refuses the run itself, whoever calls it.
func TestSimulateRefusesWorkPastTheLimitsBeforeAllocating(t *testing.T) {
	p := NewPlant(profile.Default())
	p.TimeStepS = 1e-9
	requests := []Request{{ID: 0, PromptTokens: 10, OutputTokens: 2}}
	var res *Result
	var err error
	allocs := testing.AllocsPerRun(1, func() {
		res, err = Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{})
	})
	assert.Nil(t, res)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitSteps, le.Limit)
	assert.Less(t, allocs, 10.0, "refused before the simulation state is built")
}

func TestPreallocationStaysWithinTheTrajectoryLimit(t *testing.T) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = (MaxTrajectorySamples - 2) * p.TimeStepS
	require.NoError(t, CheckWork(p, Options{Stride: 1}))
	// A trace spanning years asks for room for twice its span.
	got := preallocatedSamples(p, 3e8, 1)
	assert.LessOrEqual(t, float64(got), MaxTrajectorySamples+3)
	assert.Equal(t, 4098, preallocatedSamples(p, 0, 1), "a short trace reserves the minimum")
}

// FuzzStepLimit checks, over any time step, simulated time, stride and
// step limit, that CheckWork never panics and that a run it accepts stays
// within the limits: its step bound within the step limit and its
// preallocated trajectory within MaxTrajectorySamples.
func FuzzStepLimit(f *testing.F) {
	f.Add(0.1, 3600.0, 1, false, 0.0, 10.0)
	f.Add(1e-9, 3600.0, 1, true, 0.0, 0.0)
	f.Add(1e-300, 1e18, 50, false, 5e9, 1e12)
	f.Add(1e-320, 3600.0, 0, true, -1.0, 1e300)
	f.Add(0.1, 1e7, 1, false, 0.0, 1e9)
	f.Fuzz(func(t *testing.T, stepS, maxSimS float64, stride int, summary bool, maxSteps, lastArrivalS float64) {
		if stride < 0 {
			stride = -stride
		}
		if stride < 0 { // math.MinInt
			stride = 1
		}
		p := NewPlant(profile.Default())
		p.TimeStepS, p.MaxSimulationTimeS = stepS, maxSimS
		opt := Options{Stride: stride, Summary: summary, MaxSteps: maxSteps}
		err := CheckWork(p, opt)
		if err != nil {
			var le *LimitError
			if !errors.As(err, &le) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("not a one-line *LimitError: %v", err)
			}
			return
		}
		if p.Validate() != nil {
			return
		}
		limit := maxSteps
		if !(limit > 0) {
			limit = DefaultMaxSteps
		}
		if steps := StepBound(p); !(steps <= limit) {
			t.Fatalf("accepted %g steps, limit %g", steps, limit)
		}
		if summary || !(lastArrivalS >= 0) || math.IsInf(lastArrivalS, 0) {
			return
		}
		if n := preallocatedSamples(p, lastArrivalS, stride); n < 0 || float64(n) > MaxTrajectorySamples+3 {
			t.Fatalf("preallocates %d samples", n)
		}
	})
}
