package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestBuiltInNames(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"max", "maximum_clock_controller"},
		{"min", "minimum_clock_controller"},
		{"reactive", "reactive_clock_controller"},
		{"sampled-reactive", "sampled_reactive_clock_controller"},
		{"sampled-reactive:2.5", "sampled_reactive_clock_controller"},
		{"fixed:660", "fixed_660_mhz"},
		{"fixed:660.5", "fixed_660.5_mhz"},
		{"fixed:1234567", "fixed_1.23457e+06_mhz"},
		{"fixed:1e6", "fixed_1e+06_mhz"},
		{"fixed:123456", "fixed_123456_mhz"},
		{"fixed:2040.123456", "fixed_2040.12_mhz"},
		{"fixed:0.0001", "fixed_0.0001_mhz"},
		{"fixed:0.00001", "fixed_1e-05_mhz"},
		{"race-to-idle", "race_to_idle_clock_controller"},
		{"race-to-idle:1500", "race_to_idle_1500_mhz_clock_controller"},
		{"race-to-idle:1e6", "race_to_idle_1e+06_mhz_clock_controller"},
	}
	for _, tt := range tests {
		c, err := NewController(tt.spec)
		require.NoError(t, err, tt.spec)
		assert.Equal(t, tt.want, c.Name(), tt.spec)
	}
	for spec, want := range map[string]string{"static": "static_batch_scheduler", "continuous": "continuous_batch_scheduler", "chunked": "chunked_prefill_scheduler"} {
		s, err := NewScheduler(spec)
		require.NoError(t, err)
		assert.Equal(t, want, s.Name())
	}
	for _, bad := range []string{"", "maximum", "fixed", "fixed:", "fixed:x", "fixed:-1", "fixed:inf", "sampled-reactive:0", "sampled-reactive:nan", "reactive:1",
		"race-to-idle:", "race-to-idle:0", "race-to-idle:-5", "race-to-idle:nan", "race-to-idle:inf", "race_to_idle", "race-to-idle:1500:2"} {
		_, err := NewController(bad)
		assert.Error(t, err, bad)
	}
	_, err := NewScheduler("fifo")
	assert.ErrorContains(t, err, `unknown scheduler "fifo"`)
}

func TestSchedulersFollowTheReference(t *testing.T) {
	prefill := Action{Phase: profile.PhasePrefill}
	chunk := Action{Phase: profile.PhasePrefill, MaxPrefillTokens: 512}
	decode := Action{Phase: profile.PhaseDecode}
	idle := Action{Phase: profile.PhaseIdle}
	tests := []struct {
		name                        string
		queue, active, step         int
		kv                          float64
		static, continuous, chunked Action
	}{
		{"empty", 0, 0, 0, 0, idle, idle, idle},
		{"queue only", 3, 0, 1, 0, prefill, prefill, chunk},
		{"decode only", 0, 2, 0, 0, decode, decode, decode},
		{"both, even step", 1, 2, 2, 0, prefill, decode, chunk},
		{"both, odd step", 1, 2, 3, 0, prefill, decode, decode},
		{"both, kv pressure", 1, 2, 2, 0.7 * 131072, prefill, decode, decode},
	}
	for _, tt := range tests {
		obs := Observation{PrefillQueue: tt.queue, DecodeActive: tt.active, StepIndex: tt.step, KVTokens: tt.kv, KVCapacityTokens: 131072}
		assert.Equal(t, tt.static, StaticBatch{}.Schedule(obs), tt.name)
		assert.Equal(t, tt.continuous, ContinuousBatch{}.Schedule(obs), tt.name)
		assert.Equal(t, tt.chunked, ChunkedPrefill{}.Schedule(obs), tt.name)
	}
}

func TestReactiveController(t *testing.T) {
	levels := []float64{300, 600, 900}
	realized := []float64{310, 590, 880}
	tests := []struct {
		name string
		obs  Observation
		want float64
	}{
		{"hot steps down", Observation{PreviousClockMHz: 880, TemperatureC: 72, PrefillQueue: 20}, 600},
		{"pressure steps up", Observation{PreviousClockMHz: 590, PrefillQueue: 8}, 900},
		{"decode pressure counts twice", Observation{PreviousClockMHz: 590, DecodeActive: 4}, 900},
		{"old request steps up", Observation{PreviousClockMHz: 310, PrefillQueue: 1, OldestPrefillAgeS: 1}, 600},
		{"light load steps down", Observation{PreviousClockMHz: 590, PrefillQueue: 1}, 300},
		{"bottom stays", Observation{PreviousClockMHz: 310}, 300},
		{"top stays", Observation{PreviousClockMHz: 880, PrefillQueue: 9}, 900},
		{"otherwise holds", Observation{PreviousClockMHz: 600, PrefillQueue: 2}, 600},
	}
	for _, tt := range tests {
		tt.obs.ClockLevelsMHz, tt.obs.RealizedClockLevelsMHz = levels, realized
		assert.Equal(t, tt.want, Reactive{}.RequestClock(tt.obs), tt.name)
	}
}

// countingController returns how often it was consulted.
type countingController struct{ calls int }

func (c *countingController) Name() string { return "counting" }
func (c *countingController) RequestClock(Observation) float64 {
	c.calls++
	return float64(c.calls)
}

func TestSampleAndHold(t *testing.T) {
	inner := &countingController{}
	s, err := NewSampleAndHold(inner, 1)
	require.NoError(t, err)
	assert.Equal(t, "sampled_counting", s.Name())
	var got []float64
	time := 0.0
	for range 25 {
		got = append(got, s.RequestClock(Observation{TimeS: time}))
		time += 0.1
	}
	// Updates at t=0, at 0.9999999999999999 (within TimeEpsilonS of 1) and at ~2.
	assert.Equal(t, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3}, got)
	_, err = NewSampleAndHold(inner, 0)
	assert.ErrorContains(t, err, "period_s 0")
}

func TestActionValidate(t *testing.T) {
	assert.NoError(t, Action{Phase: profile.PhaseIdle}.Validate())
	assert.NoError(t, Action{Phase: profile.PhasePrefill, MaxPrefillTokens: 1}.Validate())
	assert.Error(t, Action{Phase: profile.PhaseInterleaved}.Validate())
	assert.Error(t, Action{Phase: profile.PhasePrefill, MaxPrefillTokens: -1}.Validate())
}

func TestFixedClockLevelIsTheLevelThePlantRuns(t *testing.T) {
	prof := profile.Default() // levels 420, 690, ..., 2040 MHz, 270 apart
	tests := []struct{ mhz, want float64 }{
		{1000, 960},
		{960, 960},
		{959.999, 690},
		{100, 420},
		{3000, 2040},
		{2040, 2040},
	}
	requests := []Request{{ID: 0, PromptTokens: 500, OutputTokens: 5}}
	p := NewPlant(prof)
	p.PowerLimitW = 1000 // no power governor: the realized clock is the level
	for _, tt := range tests {
		f := FixedClock{MHz: tt.mhz}
		assert.Equal(t, tt.want, f.Level(prof), "fixed:%v", tt.mhz)
		res, err := Simulate(requests, p, StaticBatch{}, f, Options{})
		require.NoError(t, err)
		for i := range res.Trajectory.Len() {
			assert.Equal(t, tt.want, res.Trajectory.RealizedClockMHz[i], "fixed:%v step %d", tt.mhz, i)
			assert.Equal(t, tt.mhz, res.Trajectory.RequestedClockMHz[i], "fixed:%v step %d", tt.mhz, i)
		}
	}
}
