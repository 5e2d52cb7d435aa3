package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// testSetup is the L4 and Qwen2.5-7B-Instruct on the embedded proxy
// without its power governor (the top level runs).
func testSetup(t testing.TB) *Setup {
	t.Helper()
	gpu, ok := cards.BuiltinGPU("L4")
	require.True(t, ok)
	model, ok := cards.BuiltinModel("Qwen2.5-7B-Instruct")
	require.True(t, ok)
	p := plant.NewPlant(profile.Default())
	p.PowerLimitW = 1e6
	return &Setup{Profile: profile.Default(), Plant: p, GPU: gpu, Model: model, Seeds: []uint64{1, 2}}
}

// measuredRun is a run "measured" on setup with the card truth: n
// requests of random lengths (seeded) at rate with a concurrency cap,
// replayed as Replay replays it and written down as vLLM would.
func measuredRun(t testing.TB, setup *Setup, truth cards.GPU, name string, n int, rate float64, concurrency int, seed uint64) *Run {
	t.Helper()
	run, _ := measuredRecords(t, setup, truth, name, n, rate, concurrency, seed)
	return run
}

// measuredRecords is measuredRun with the simulated request records it
// was written down from.
func measuredRecords(t testing.TB, setup *Setup, truth cards.GPU, name string, n int, rate float64, concurrency int, seed uint64) (*Run, []plant.RequestRecord) {
	t.Helper()
	return measuredRecordsAt(t, setup, truth, name, n, rate, concurrency, seed, 0)
}

// measuredRecordsAt is measuredRecords with the GPU locked at the level
// clockMHz (0: the top).
func measuredRecordsAt(t testing.TB, setup *Setup, truth cards.GPU, name string, n int, rate float64, concurrency int, seed uint64, clockMHz float64) (*Run, []plant.RequestRecord) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	run := &Run{File: name, RequestRate: rate, Burstiness: 1, MaxConcurrency: concurrency, ClockMHz: clockMHz}
	for range n {
		run.Requests = append(run.Requests, Request{InputTokens: 200 + rng.IntN(1800), OutputTokens: 20 + rng.IntN(200)})
	}
	svc := setup.service(truth)
	p, err := setup.plantFor(svc)
	require.NoError(t, err)
	requests := run.workload(0)
	p.MaxSimulationTimeS = 1e6
	res, err := plant.Simulate(requests, p, plant.ChunkedPrefill{}, run.controller(),
		plant.Options{Summary: true, RequestLog: true, Service: svc, Engine: plant.EngineOptions{Preemption: plant.PreemptionRecompute}, MaxConcurrency: concurrency})
	require.NoError(t, err)
	first, last := math.Inf(1), 0.0
	for i, r := range res.Log.Records {
		run.Requests[i].TTFTS, run.Requests[i].LatencyS = r.TTFTS(), r.LatencyS()
		first, last = min(first, r.ArrivalTimeS), max(last, r.CompletionTimeS)
	}
	run.DurationS = last - first
	return run, res.Log.Records
}

func TestFitLatencyRecoversKnownParameters(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	setup.Seeds = []uint64{0}
	truth := setup.GPU
	truth.MemoryEfficiency, truth.ComputeEfficiency, truth.IterationOverheadS = 0.81, 0.47, 0.0035
	runs := []*Run{
		measuredRun(t, setup, truth, "c1.json", 40, math.Inf(1), 1, 1),
		measuredRun(t, setup, truth, "c8.json", 120, math.Inf(1), 8, 2),
		measuredRun(t, setup, truth, "c32.json", 200, math.Inf(1), 32, 3),
	}
	heldOut := []*Run{measuredRun(t, setup, truth, "c16.json", 150, math.Inf(1), 16, 4)}
	fit, err := FitLatency(runs, heldOut, setup, nil)
	require.NoError(t, err)
	t.Logf("fitted %+v in %d evaluations, cost %.3g", fit.GPU, fit.Evaluations, fit.Cost)
	assert.InEpsilon(t, truth.MemoryEfficiency, fit.GPU.MemoryEfficiency, 0.02)
	assert.InEpsilon(t, truth.ComputeEfficiency, fit.GPU.ComputeEfficiency, 0.02)
	assert.InEpsilon(t, truth.IterationOverheadS, fit.GPU.IterationOverheadS, 0.02)
	for _, r := range fit.Runs {
		assert.InEpsilon(t, r.Measured.MeanTPOTS, r.Simulated.MeanTPOTS, 0.01, "%s (held out %v)", r.File, r.HeldOut)
	}
}

func TestFitLatencyIsStableUnderTheArrivals(t *testing.T) {
	t.Parallel()
	truth := testSetup(t).GPU
	truth.MemoryEfficiency, truth.ComputeEfficiency, truth.IterationOverheadS = 0.88, 0.5, 0.002
	// Runs at finite rates "measured" under one arrival draw and fitted
	// on others, as a real run is (its arrivals are not known): twice,
	// with other replay seeds. At these light loads the overhead and the
	// memory efficiency trade off along a ridge (a lone decode costs
	// both), so the parameters move within 10%; what they predict, a
	// closed loop of 16 held out, moves within 2% and stays within 3% of
	// the truth.
	var fits []*LatencyFit
	for _, seeds := range [][]uint64{{1, 2}, {3, 4}} {
		setup := testSetup(t)
		setup.Seeds = seeds
		var runs []*Run
		for i, rate := range []float64{0.5, 2, 4} {
			runs = append(runs, measuredRun(t, setup, truth, fmt.Sprintf("r%v.json", rate), 1000, rate, 0, uint64(10+i)))
		}
		heldOut := []*Run{measuredRun(t, setup, truth, "c16.json", 150, math.Inf(1), 16, 4)}
		fit, err := FitLatency(runs, heldOut, setup, nil)
		require.NoError(t, err)
		t.Logf("seeds %v: fitted %+v in %d evaluations, cost %.3g", seeds, fit.GPU, fit.Evaluations, fit.Cost)
		assert.InEpsilon(t, truth.MemoryEfficiency, fit.GPU.MemoryEfficiency, 0.1)
		assert.InEpsilon(t, truth.ComputeEfficiency, fit.GPU.ComputeEfficiency, 0.1)
		held := fit.Runs[len(fit.Runs)-1]
		require.True(t, held.HeldOut)
		assert.InEpsilon(t, held.Measured.MeanTPOTS, held.Simulated.MeanTPOTS, 0.03)
		assert.InEpsilon(t, held.Measured.OutputThroughput, held.Simulated.OutputThroughput, 0.03)
		fits = append(fits, fit)
	}
	a, b := fits[0].Runs[len(fits[0].Runs)-1].Simulated, fits[1].Runs[len(fits[1].Runs)-1].Simulated
	assert.InEpsilon(t, a.MeanTPOTS, b.MeanTPOTS, 0.02)
	assert.InEpsilon(t, a.OutputThroughput, b.OutputThroughput, 0.02)
}

func TestFitLatencyRefusesWhatItCannotFit(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	one := measuredRun(t, setup, setup.GPU, "c4.json", 20, math.Inf(1), 4, 1)
	_, err := FitLatency([]*Run{one}, nil, setup, nil)
	require.EqualError(t, err, "calibrate: the runs are at 1 load level: memory_efficiency and iteration_overhead_s need runs at two or more request rates or concurrencies (or free one of them only)")
	_, err = FitLatency(nil, nil, setup, nil)
	require.EqualError(t, err, "calibrate: no run to fit")
	_, err = FitLatency([]*Run{one}, nil, setup, []string{"clock"})
	require.EqualError(t, err, `calibrate: unknown parameter "clock": expected memory_efficiency, compute_efficiency, iteration_overhead_s`)
	// One load level fits the memory efficiency alone.
	fit, err := FitLatency([]*Run{one}, nil, setup, []string{ParamMemoryEfficiency})
	require.NoError(t, err)
	assert.InEpsilon(t, setup.GPU.MemoryEfficiency, fit.GPU.MemoryEfficiency, 0.02)
}

func TestLoadLevels(t *testing.T) {
	t.Parallel()
	run := func(rate float64, concurrency, n int) *Run {
		return &Run{RequestRate: rate, MaxConcurrency: concurrency, Requests: make([]Request, n)}
	}
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		runs []*Run
		want int
	}{
		{"bursts of 10 and 40 prompts", []*Run{run(inf, 0, 10), run(inf, 0, 40)}, 2},
		{"caps of 8 over 100 and 200 prompts", []*Run{run(inf, 8, 100), run(inf, 8, 200)}, 1},
		{"a cap above the prompts is the burst", []*Run{run(inf, 64, 10), run(inf, 0, 10)}, 1},
		{"two rates", []*Run{run(1, 0, 100), run(2, 0, 100)}, 2},
		{"one rate, two sizes", []*Run{run(1, 0, 100), run(1, 0, 300)}, 1},
	} {
		assert.Equal(t, tc.want, loadLevels(tc.runs), tc.name)
	}
}
