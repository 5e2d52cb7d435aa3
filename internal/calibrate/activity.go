package calibrate

import (
	"fmt"
	"math"
	"sort"
	"time"

	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// benchDateLayout is how vLLM writes a result's date
// (datetime.now().strftime("%Y%m%d-%H%M%S"), local time), once the
// benchmark has ended.
const benchDateLayout = "20060102-150405"

// Window is when the run ran, by the local clock its power log keeps: it
// ended when vLLM dated its result file, to the second, and lasted its
// duration.
func (r *Run) Window() (start, end time.Time, err error) {
	end, err = time.ParseInLocation(benchDateLayout, r.Date, time.Local)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("bench file %s: key \"date\" %q: expected vLLM's YYYYMMDD-HHMMSS to align a power log", r.File, r.Date)
	}
	return end.Add(-time.Duration(r.DurationS * float64(time.Second))), end, nil
}

// AlignPower is the part of log that ran during run (Window), with its
// times in seconds since the run's start; an error names both files when
// they do not overlap.
func AlignPower(log *PowerLog, run *Run) (*PowerLog, error) {
	start, end, err := run.Window()
	if err != nil {
		return nil, err
	}
	// The date is rounded down to the second: allow it.
	end = end.Add(time.Second)
	offset := start.Sub(log.Start).Seconds()
	aligned := &PowerLog{File: log.File, Start: start}
	for _, s := range log.Samples {
		at := log.Start.Add(time.Duration(s.TimeS * float64(time.Second)))
		if at.Before(start) || at.After(end) {
			continue
		}
		s.TimeS -= offset
		aligned.Samples = append(aligned.Samples, s)
	}
	if len(aligned.Samples) < MinLevelSamples {
		first := log.Start
		last := log.Start
		if n := len(log.Samples); n > 0 {
			last = log.Start.Add(time.Duration(log.Samples[n-1].TimeS * float64(time.Second)))
		}
		return nil, fmt.Errorf("power log %s: %d samples during bench file %s (%s to %s); the log runs %s to %s: expected the log of the same run",
			log.File, len(aligned.Samples), run.File, start.Format(time.DateTime), end.Format(time.DateTime), first.Format(time.DateTime), last.Format(time.DateTime))
	}
	return aligned, nil
}

// ReplayActivity is what the GPU did during a replay of run on setup with
// gpu, as an Activity over seconds since the run's first request: the
// shares of each interval its iterations spent on compute-bound
// (prefill) and memory-bound (decode) work, as the batched model weighs
// an iteration's power. It replays the run twice on profiles of unit
// powers (idle 1 W, one phase 2 W), whose step power less 1 W is the
// phase's share of the step.
func ReplayActivity(run *Run, setup *Setup, gpu cards.GPU) (Activity, error) {
	prefill, err := shareSteps(run, setup, gpu, 2, 1)
	if err != nil {
		return nil, err
	}
	decode, err := shareSteps(run, setup, gpu, 1, 2)
	if err != nil {
		return nil, err
	}
	return func(fromS, toS float64) (float64, float64) {
		return prefill.mean(fromS, toS), decode.mean(fromS, toS)
	}, nil
}

// steps are a replay's per-step shares: step k ends at endS[k].
type steps struct {
	dt     float64
	endS   []float64
	shares []float64
}

// mean is the time-weighted mean share over [fromS, toS].
func (s *steps) mean(fromS, toS float64) float64 {
	if !(toS > fromS) {
		return 0
	}
	total := 0.0
	k := sort.SearchFloat64s(s.endS, fromS)
	for ; k < len(s.endS); k++ {
		lo, hi := max(fromS, s.endS[k]-s.dt), min(toS, s.endS[k])
		if hi > lo {
			total += s.shares[k] * (hi - lo)
		}
		if s.endS[k] >= toS {
			break
		}
	}
	return math.Min(1, math.Max(0, total/(toS-fromS)))
}

// shareSteps replays run with every level's prefill and decode power set
// to prefillW and decodeW and its idle power to 1 W, and returns each
// step's power less 1 W.
func shareSteps(run *Run, setup *Setup, gpu cards.GPU, prefillW, decodeW float64) (*steps, error) {
	base := setup.Profile
	unit := profile.Profile{
		ClockMHz: base.ClockMHz, PrefillTokensPerS: base.PrefillTokensPerS, DecodeTokensPerS: base.DecodeTokensPerS,
		IdlePowerW: constant(len(base.ClockMHz), 1), PrefillPowerW: constant(len(base.ClockMHz), prefillW),
		DecodePowerW: constant(len(base.ClockMHz), decodeW), BaselineTTFTS: base.BaselineTTFTS, BaselineTPOTS: base.BaselineTPOTS,
		Status: "calibration_activity", SourceLabel: "unit powers", RealizedClockMHz: base.RealizedClockMHz,
	}
	prof, err := profile.New(unit)
	if err != nil {
		return nil, err
	}
	s := *setup
	s.Profile = prof
	svc := s.service(gpu)
	p, err := s.plantFor(svc)
	if err != nil {
		return nil, err
	}
	requests := run.workload(0)
	p.MaxSimulationTimeS = max(p.MaxSimulationTimeS, 10*run.DurationS+3600)
	opt := plant.Options{Stride: 1, Service: svc, Engine: plant.EngineOptions{Preemption: plant.PreemptionRecompute}, MaxConcurrency: run.MaxConcurrency}
	res, err := plant.Simulate(requests, p, plant.ChunkedPrefill{}, run.controller(), opt)
	if err != nil {
		return nil, err
	}
	tr := &res.Trajectory
	out := &steps{dt: p.TimeStepS, endS: tr.TimeS, shares: make([]float64, len(tr.PowerW))}
	for k, w := range tr.PowerW {
		out.shares[k] = w - 1
	}
	return out, nil
}

// constant is n copies of v.
func constant(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// maxShiftS is how far Synchronize moves a log: a result's date is to the
// second, and the clocks of the client and the GPU's host may differ by
// a little more.
const maxShiftS = 2.0

// Synchronize moves the times of an aligned log by the shift, within
// maxShiftS, at which its power follows the activity best (the highest
// correlation of each sample's power with the busy share of the interval
// before it), and returns the moved log and the shift, s.
func Synchronize(log *PowerLog, activity Activity) (*PowerLog, float64) {
	best, bestShift := math.Inf(-1), 0.0
	power := make([]float64, 0, len(log.Samples))
	busy := make([]float64, 0, len(log.Samples))
	for step := -40; step <= 40; step++ {
		shift := float64(step) * maxShiftS / 40
		power, busy = power[:0], busy[:0]
		for k := 1; k < len(log.Samples); k++ {
			p, d := activity(log.Samples[k-1].TimeS+shift, log.Samples[k].TimeS+shift)
			power = append(power, log.Samples[k].PowerW)
			busy = append(busy, p+d)
		}
		if c := correlation(power, busy); c > best {
			best, bestShift = c, shift
		}
	}
	moved := &PowerLog{File: log.File, Start: log.Start.Add(time.Duration(-bestShift * float64(time.Second)))}
	moved.Samples = make([]PowerSample, len(log.Samples))
	for k, s := range log.Samples {
		s.TimeS += bestShift
		moved.Samples[k] = s
	}
	return moved, bestShift
}

// correlation is Pearson's correlation of x and y (-Inf when either does
// not vary).
func correlation(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var cov, vx, vy float64
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
		vx += (x[i] - mx) * (x[i] - mx)
		vy += (y[i] - my) * (y[i] - my)
	}
	if vx == 0 || vy == 0 {
		return math.Inf(-1)
	}
	return cov / math.Sqrt(vx*vy)
}
