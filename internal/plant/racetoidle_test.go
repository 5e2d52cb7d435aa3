package plant

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestRaceToIdleDecisions(t *testing.T) {
	levels := []float64{300, 600, 900}
	tests := []struct {
		name                string
		queue, active       int
		busyMHz, want       float64
		temperature, oldest float64
	}{
		{"idle: lowest level", 0, 0, 0, 300, 25, 0},
		{"idle and hot: still the lowest level", 0, 0, 0, 300, 90, 0},
		{"one queued: highest level", 1, 0, 0, 900, 25, 0.05},
		{"one decoding: highest level", 0, 1, 0, 900, 25, 0},
		{"both, hot: highest level (the plant protects itself)", 3, 4, 0, 900, 80, 2},
		{"busy with a busy clock: that clock", 1, 2, 600, 600, 25, 0},
		{"busy with a clock between levels: the request as given", 0, 1, 750, 750, 25, 0},
		{"idle with a busy clock: lowest level", 0, 0, 600, 300, 25, 0},
	}
	for _, tt := range tests {
		obs := Observation{
			PrefillQueue: tt.queue, DecodeActive: tt.active, TemperatureC: tt.temperature, OldestPrefillAgeS: tt.oldest,
			ClockLevelsMHz: levels, RealizedClockLevelsMHz: []float64{310, 590, 880}, PreviousClockMHz: 590,
		}
		assert.Equal(t, tt.want, RaceToIdle{MHz: tt.busyMHz}.RequestClock(obs), tt.name)
	}
}

// runDefaults simulates the embedded trace on the embedded proxy with the
// default plant and the chunked scheduler under spec.
func runDefaults(t *testing.T, spec string) *Report {
	t.Helper()
	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	c, err := NewController(spec)
	require.NoError(t, err)
	rep, err := Run(w, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: c})
	require.NoError(t, err)
	return rep
}

// TestRaceToIdleAgainstMaxOnTheDefaults: on the embedded defaults the top
// level is busy at every step max is busy, and the power governor and the
// thermal model (peak 46 C, far below the limit) never make it slower, so
// every request is served at exactly the same times as under max; idling
// at the lowest level instead of the highest saves a fifth of the energy
// (0.859 against 1.096 J per output token when measured).
func TestRaceToIdleAgainstMaxOnTheDefaults(t *testing.T) {
	maxRun, race := runDefaults(t, "max"), runDefaults(t, "race-to-idle")
	require.Equal(t, len(maxRun.Requests), len(race.Requests))
	for i, m := range maxRun.Requests {
		r := race.Requests[i]
		assert.Equal(t, m.PrefillStartS, r.PrefillStartS, "request %d prefill start", m.RequestID)
		assert.Equal(t, m.FirstTokenTimeS, r.FirstTokenTimeS, "request %d first token", m.RequestID)
		assert.Equal(t, m.CompletionTimeS, r.CompletionTimeS, "request %d completion", m.RequestID)
	}
	assert.Equal(t, maxRun.Metrics.TTFTViolationRate, race.Metrics.TTFTViolationRate)
	assert.Equal(t, maxRun.Metrics.P95TTFTS, race.Metrics.P95TTFTS)
	assert.Equal(t, maxRun.Metrics.TPOTViolationRate, race.Metrics.TPOTViolationRate)
	assert.Less(t, race.Metrics.PeakTemperatureC, maxRun.Metrics.PeakTemperatureC)
	saving := 1 - race.Metrics.EnergyPerOutputTokenJ/maxRun.Metrics.EnergyPerOutputTokenJ
	t.Logf("energy per output token: max %.4f J, race-to-idle %.4f J (%.1f%% less)",
		maxRun.Metrics.EnergyPerOutputTokenJ, race.Metrics.EnergyPerOutputTokenJ, 100*saving)
	assert.InDelta(t, 0.216, saving, 0.01, "race-to-idle saves about 21.6% on the defaults")

	// Idle steps run the lowest level, busy steps the highest that the
	// power governor allows; max never idles below its top level.
	var idleLow, busy int
	for i, phase := range race.Trajectory.Phase {
		req := race.Trajectory.RequestedClockMHz[i]
		switch {
		case req == profile.Default().MinClockMHz():
			idleLow++
		case req == profile.Default().MaxClockMHz():
			busy++
		default:
			t.Fatalf("step %d (%s): requested %v MHz", i, phase, req)
		}
	}
	assert.Positive(t, idleLow)
	assert.Positive(t, busy)
}
