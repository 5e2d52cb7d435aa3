package plant

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/sharedtest"
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

// TestRaceToIdleAgainstMax: on the embedded defaults and on the L4 rows
// with the code trace (first 900 s, normalized to 0.3, simulated until
// every request completes) the top level is busy at every step max is
// busy, and neither the power governor nor the thermal model (far below
// its limit) ever makes it slower, so every request is served at exactly
// the same times as under max; idling at the lowest level instead of the
// highest saves energy: 21.6% on the defaults (0.859 against 1.096 J per
// output token), 15.4% on the L4 rows (4.237 against 5.006 J).
func TestRaceToIdleAgainstMax(t *testing.T) {
	tests := []struct {
		name   string
		load   func(t *testing.T) (Workload, Config)
		saving float64
	}{
		{"embedded defaults", func(t *testing.T) (Workload, Config) {
			w, err := DefaultTrace(NoElapsedLimit)
			require.NoError(t, err)
			return w, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}}
		}, 0.216},
		{"L4 rows, code trace", func(t *testing.T) (Workload, Config) {
			f, err := os.Open(sharedtest.CodeTrace(t))
			require.NoError(t, err)
			defer f.Close()
			w, err := LoadWorkload(f, "code", 900)
			require.NoError(t, err)
			prof, err := profile.Load(sharedtest.Reference(t, "data", "l4_proxy", "l4_profile.csv"))
			require.NoError(t, err)
			p := NewPlant(prof)
			p.MaxSimulationTimeS = 100_000
			return w, Config{Plant: p, Scheduler: ChunkedPrefill{}, Normalize: 0.3}
		}, 0.154},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, cfg := tt.load(t)
			run := func(c ClockController) *Report {
				cfg.Controller = c
				rep, err := Run(w, cfg)
				require.NoError(t, err)
				require.Zero(t, rep.Metrics.UnfinishedRequestsAtEnd)
				return rep
			}
			maxRun, race := run(MaxClock{}), run(RaceToIdle{})
			require.Equal(t, len(maxRun.Requests), len(race.Requests))
			for i, m := range maxRun.Requests {
				r := race.Requests[i]
				require.Equal(t, m.PrefillStartS, r.PrefillStartS, "request %d prefill start", m.RequestID)
				require.Equal(t, m.FirstTokenTimeS, r.FirstTokenTimeS, "request %d first token", m.RequestID)
				require.Equal(t, m.CompletionTimeS, r.CompletionTimeS, "request %d completion", m.RequestID)
			}
			assert.Equal(t, maxRun.Metrics.TTFTViolationRate, race.Metrics.TTFTViolationRate)
			assert.Equal(t, maxRun.Metrics.P95TTFTS, race.Metrics.P95TTFTS)
			assert.Equal(t, maxRun.Metrics.TPOTViolationRate, race.Metrics.TPOTViolationRate)
			assert.LessOrEqual(t, race.Metrics.PeakTemperatureC, maxRun.Metrics.PeakTemperatureC)
			saving := 1 - race.Metrics.EnergyPerOutputTokenJ/maxRun.Metrics.EnergyPerOutputTokenJ
			t.Logf("energy per output token: max %.4f J, race-to-idle %.4f J (%.1f%% less)",
				maxRun.Metrics.EnergyPerOutputTokenJ, race.Metrics.EnergyPerOutputTokenJ, 100*saving)
			assert.InDelta(t, tt.saving, saving, 0.005)

			// It requests only the lowest and the highest level, both.
			levels := cfg.Plant.Profile.ClockMHz
			requested := map[float64]int{}
			for _, mhz := range race.Trajectory.RequestedClockMHz {
				requested[mhz]++
			}
			assert.Len(t, requested, 2)
			assert.Positive(t, requested[levels[0]])
			assert.Positive(t, requested[levels[len(levels)-1]])
		})
	}
}
