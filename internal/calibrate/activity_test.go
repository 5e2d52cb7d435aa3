package calibrate

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// loggedRun is a run at 0.8 requests/s measured on setup with its power
// log (loggedRunOf), started at start.
func loggedRun(t *testing.T, setup *Setup, start time.Time) (*Run, *PowerLog) {
	t.Helper()
	return loggedRunOf(t, setup, measuredRun(t, setup, setup.GPU, "c8.json", 150, 0.8, 0, 5), setup.GPU, start)
}

// loggedRunOf dates run as started at start and keeps its power log as
// nvidia-smi would (a sample every 100 ms: the board power and temperature
// the plant simulates under truth, the clock of the level that ran).
func loggedRunOf(t *testing.T, setup *Setup, run *Run, truth cards.GPU, start time.Time) (*Run, *PowerLog) {
	t.Helper()
	svc := setup.service(truth)
	p, err := setup.plantFor(svc)
	require.NoError(t, err)
	p.TimeStepS = 0.1
	p.MaxSimulationTimeS = 1e5
	res, err := plant.Simulate(run.workload(0), p, plant.ChunkedPrefill{}, run.controller(),
		plant.Options{Service: svc, Engine: plant.EngineOptions{Preemption: plant.PreemptionRecompute}, MaxConcurrency: run.MaxConcurrency})
	require.NoError(t, err)
	tr := &res.Trajectory
	log := &PowerLog{File: run.File + ".power.csv", Start: start}
	for k := range tr.TimeS {
		log.Samples = append(log.Samples, PowerSample{TimeS: tr.TimeS[k], PowerW: tr.PowerW[k], SMClockMHz: tr.RealizedClockMHz[k],
			MemClockMHz: 6251, TemperatureC: tr.TemperatureC[k], UtilizationPct: math.NaN()})
	}
	run.Date = start.Add(time.Duration(run.DurationS * float64(time.Second))).Format(benchDateLayout)
	return run, log
}

func TestPowerFitOfAReplayRecoversTheProfile(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	start := time.Date(2026, 12, 1, 9, 30, 0, 0, time.Local)
	run, log := loggedRun(t, setup, start)
	aligned, err := AlignPower(log, run)
	require.NoError(t, err)
	activity, err := ReplayActivity(run, setup, setup.GPU)
	require.NoError(t, err)
	// The file's date is to the second: the activity finds the rest.
	aligned, shift := Synchronize(aligned, activity)
	t.Logf("shifted by %.3f s", shift)
	top := setup.Profile.ClockMHz[len(setup.Profile.ClockMHz)-1]
	levels, err := FitPower(aligned, activity, []float64{top})
	require.NoError(t, err)
	require.Len(t, levels, 1)
	prof := setup.Profile
	last := len(prof.ClockMHz) - 1
	assert.InEpsilon(t, prof.IdlePowerW[last], levels[0].IdleW, 0.02)
	assert.InEpsilon(t, prof.PrefillPowerW[last], levels[0].PrefillW, 0.02)
	assert.InEpsilon(t, prof.DecodePowerW[last], levels[0].DecodeW, 0.02)
	thermal, err := FitThermal(log)
	require.NoError(t, err)
	assert.InEpsilon(t, setup.Plant.ThermalTimeConstantS, thermal.TimeConstantS, 0.02)
	assert.InEpsilon(t, setup.Plant.ThermalResistanceCPerW, thermal.ResistanceCPerW, 0.02)
	assert.InDelta(t, setup.Plant.AmbientTemperatureC, thermal.AmbientC, 0.5)
}

func TestAlignPowerRefusesALogOfAnotherTime(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	run, log := loggedRun(t, setup, time.Date(2026, 12, 1, 9, 30, 0, 0, time.Local))
	log.Start = log.Start.Add(-2 * time.Hour)
	_, err := AlignPower(log, run)
	require.ErrorContains(t, err, "power log c8.json.power.csv: 0 samples during bench file c8.json")
	run.Date = "yesterday"
	_, err = AlignPower(log, run)
	require.EqualError(t, err, `bench file c8.json: key "date" "yesterday": expected vLLM's YYYYMMDD-HHMMSS to align a power log`)
}
