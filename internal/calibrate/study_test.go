package calibrate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/vllmbench"
)

func TestCalibrateRoundTrip(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	setup.Seeds = []uint64{0}
	truth := setup.GPU
	truth.MemoryEfficiency, truth.ComputeEfficiency, truth.IterationOverheadS = 0.83, 0.45, 0.003
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.Local)
	study := &Study{Setup: setup}
	for i, spec := range []struct {
		name        string
		n           int
		concurrency int
	}{{"c1.json", 40, 1}, {"c8.json", 120, 8}, {"c32.json", 200, 32}} {
		run, log := loggedRunOf(t, setup, measuredRun(t, setup, truth, spec.name, spec.n, math.Inf(1), spec.concurrency, uint64(i+1)), truth,
			start.Add(time.Duration(i)*time.Hour))
		study.Runs = append(study.Runs, run)
		study.PowerLogs = append(study.PowerLogs, log)
	}
	// A run at a rate idles between requests: it tells the idle power.
	run, log := loggedRunOf(t, setup, measuredRun(t, setup, truth, "r01.json", 40, 0.1, 0, 9), truth, start.Add(5*time.Hour))
	study.HeldOut = append(study.HeldOut, run)
	study.PowerLogs = append(study.PowerLogs, log)
	// A run with the GPU locked at 1230 MHz (nvidia-smi -lgc): its log's
	// clock says so, and its replay runs there.
	locked, _ := measuredRecordsAt(t, setup, truth, "r02-1230.json", 60, 0.2, 0, 11, 1230)
	locked, log = loggedRunOf(t, setup, locked, truth, start.Add(7*time.Hour))
	locked.ClockMHz = 0 // as read from its file: the study finds the clock
	study.HeldOut = append(study.HeldOut, locked)
	study.PowerLogs = append(study.PowerLogs, log)
	rep, err := study.Calibrate()
	require.NoError(t, err)
	assert.Equal(t, 1230.0, locked.ClockMHz, "the study locks the run's replay at its logged level")
	assert.InEpsilon(t, truth.MemoryEfficiency, rep.GPU.MemoryEfficiency, 0.02)
	assert.InEpsilon(t, truth.ComputeEfficiency, rep.GPU.ComputeEfficiency, 0.02)
	assert.InEpsilon(t, truth.IterationOverheadS, rep.GPU.IterationOverheadS, 0.02)
	require.Len(t, rep.Power, 2, "the top level and the locked one")
	prof := setup.Profile
	top := len(prof.ClockMHz) - 1
	assert.Equal(t, prof.ClockMHz[top], rep.Power[1].ClockMHz)
	assert.InEpsilon(t, prof.IdlePowerW[top], rep.Power[1].IdleW, 0.02)
	assert.InEpsilon(t, prof.PrefillPowerW[top], rep.Power[1].PrefillW, 0.02)
	assert.InEpsilon(t, prof.DecodePowerW[top], rep.Power[1].DecodeW, 0.02)
	k := nearest(prof.ClockMHz, 1230)
	assert.Equal(t, 1230.0, rep.Power[0].ClockMHz)
	assert.InEpsilon(t, prof.PrefillPowerW[k], rep.Power[0].PrefillW, 0.02)
	assert.InEpsilon(t, prof.DecodePowerW[k], rep.Power[0].DecodeW, 0.02)
	require.NotNil(t, rep.Thermal)
	assert.InEpsilon(t, setup.Plant.ThermalTimeConstantS, rep.Thermal.TimeConstantS, 0.02)
	require.Len(t, rep.PowerMatches, 5)
	for _, r := range rep.Runs {
		require.NotNil(t, r.Errors.MeanPower, r.File)
		assert.InDelta(t, 0, *r.Errors.MeanPower, 0.02, r.File)
		assert.InDelta(t, 0, *r.Errors.MeanTPOT, 0.02, r.File)
	}
	require.NotNil(t, rep.MedianErrors.HeldOut)
	assert.Less(t, math.Abs(*rep.MedianErrors.HeldOut.Throughput), 0.05)
	held := rep.Runs[len(rep.Runs)-1]
	require.NotNil(t, held.ClockMHz)
	assert.Equal(t, 1230.0, *held.ClockMHz, "replayed at its locked level")
	assert.InDelta(t, 0, *held.Errors.MeanTTFT, 0.02)
}

func TestCalibrateRoundTripThroughFiles(t *testing.T) {
	t.Parallel()
	// Runs simulated with a known card, written as vllm bench result
	// files and nvidia-smi logs, read back and calibrated: the card, the
	// powers and the thermal constants within 2%.
	setup := testSetup(t)
	setup.Seeds = []uint64{0}
	truth := setup.GPU
	truth.MemoryEfficiency, truth.ComputeEfficiency, truth.IterationOverheadS = 0.78, 0.52, 0.0025
	dir := t.TempDir()
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.Local)
	study := &Study{Setup: setup}
	for i, spec := range []struct {
		n           int
		rate        float64
		concurrency int
	}{{40, math.Inf(1), 1}, {120, math.Inf(1), 8}, {200, math.Inf(1), 32}, {40, 0.1, 0}} {
		run, records := measuredRecords(t, setup, truth, "", spec.n, spec.rate, spec.concurrency, uint64(20+i))
		at := start.Add(time.Duration(i) * time.Hour)
		_, log := loggedRunOf(t, setup, run, truth, at)
		cfg := vllmbench.SaveConfig{Date: run.Date, Backend: "vllm", ModelID: "Qwen/Qwen2.5-7B-Instruct", TokenizerID: "Qwen/Qwen2.5-7B-Instruct",
			NumPrompts: spec.n, RequestRate: spec.rate, Burstiness: 1, MaxConcurrency: spec.concurrency}
		s, err := vllmbench.ServeOf(&plant.Report{Result: plant.Result{Requests: records}},
			vllmbench.ServeOptions{Metrics: vllmbench.MetricNames, Percentiles: []float64{99}, MaxConcurrency: spec.concurrency, RequestRate: spec.rate})
		require.NoError(t, err)
		chunks, err := jsonout.Chunks(s.Document(cfg))
		require.NoError(t, err)
		benchPath := filepath.Join(dir, cfg.FileName())
		require.NoError(t, os.WriteFile(benchPath, []byte(strings.Join(byteStrings(chunks), "")), 0o644))
		logPath := filepath.Join(dir, filepath.Base(benchPath)+".csv")
		require.NoError(t, os.WriteFile(logPath, formatPowerLogAt(at, log.Samples), 0o644))

		read, err := ReadRun(benchPath)
		require.NoError(t, err)
		if spec.rate == 0.1 {
			study.HeldOut = append(study.HeldOut, read)
		} else {
			study.Runs = append(study.Runs, read)
		}
		readLog, err := ReadPowerLog(logPath)
		require.NoError(t, err)
		study.PowerLogs = append(study.PowerLogs, readLog)
	}
	rep, err := study.Calibrate()
	require.NoError(t, err)
	assert.InEpsilon(t, truth.MemoryEfficiency, rep.GPU.MemoryEfficiency, 0.02)
	assert.InEpsilon(t, truth.ComputeEfficiency, rep.GPU.ComputeEfficiency, 0.02)
	assert.InEpsilon(t, truth.IterationOverheadS, rep.GPU.IterationOverheadS, 0.02)
	require.Len(t, rep.Power, 1)
	prof := setup.Profile
	top := len(prof.ClockMHz) - 1
	// The log keeps power to the hundredth of a W and the clock and
	// temperature whole.
	assert.InEpsilon(t, prof.IdlePowerW[top], rep.Power[0].IdleW, 0.02)
	assert.InEpsilon(t, prof.PrefillPowerW[top], rep.Power[0].PrefillW, 0.02)
	assert.InEpsilon(t, prof.DecodePowerW[top], rep.Power[0].DecodeW, 0.02)
	require.NotNil(t, rep.Thermal)
	assert.InEpsilon(t, setup.Plant.ThermalTimeConstantS, rep.Thermal.TimeConstantS, 0.02)
	assert.InEpsilon(t, setup.Plant.ThermalResistanceCPerW, rep.Thermal.ResistanceCPerW, 0.02)
	for _, r := range rep.Runs {
		require.NotNil(t, r.Errors.MeanPower, r.File)
		assert.InDelta(t, 0, *r.Errors.MeanPower, 0.02, r.File)
	}
}
