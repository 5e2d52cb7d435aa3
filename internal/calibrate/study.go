package calibrate

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"servesim/internal/cards"
	"servesim/internal/profile"
)

// Study is a calibration: measured runs to fit and to hold out, the power
// logs kept while they ran, and the server they are replayed on.
type Study struct {
	Runs, HeldOut []*Run
	PowerLogs     []*PowerLog
	Setup         *Setup
	// Free names the GPU card parameters to fit (ParamNames when empty).
	Free []string
}

// Errors are a run's relative errors, simulated / measured - 1; nil where
// the measurement lacks the figure.
type Errors struct {
	MeanTTFT       *float64 `json:"mean_ttft"`
	P99TTFT        *float64 `json:"p99_ttft"`
	MeanTPOT       *float64 `json:"mean_tpot"`
	Throughput     *float64 `json:"output_throughput"`
	MeanPower      *float64 `json:"mean_power"`
	EnergyPerToken *float64 `json:"energy_per_output_token"`
}

// RunReport is one run's fit: measured, simulated and the errors.
type RunReport struct {
	RunFit
	Errors Errors `json:"errors"`
}

// PowerMatch is a power log matched to a run: how its times were moved
// (Synchronize) and how many samples it gave.
type PowerMatch struct {
	Log     string  `json:"power_log"`
	Run     string  `json:"bench_file"`
	ShiftS  float64 `json:"shift_s"`
	Samples int     `json:"samples"`
}

// Report is a calibration's result: the fitted card, the per-run fit, the
// median absolute errors of the fitted and held-out runs, and, with power
// logs, the fitted powers per clock level and the thermal constants.
type Report struct {
	GPU         cards.GPU   `json:"gpu"`
	Model       cards.Model `json:"model"`
	Fitted      []string    `json:"fitted"`
	Cost        float64     `json:"cost"`
	Evaluations int         `json:"evaluations"`
	Runs        []RunReport `json:"runs"`
	// MedianErrors are the median absolute errors over the fitted runs
	// and over the held-out ones (nil without held-out runs).
	MedianErrors struct {
		Fitted  Errors  `json:"fitted"`
		HeldOut *Errors `json:"held_out"`
	} `json:"median_absolute_errors"`
	PowerMatches []PowerMatch `json:"power_logs"`
	Power        []LevelPower `json:"power"`
	Thermal      *ThermalFit  `json:"thermal"`
}

// Calibrate runs the study: the latency fit, then, with power logs, the
// power fit on the fitted card's replays and the thermal fit, then every
// run replayed on the fitted card and profile.
func (s *Study) Calibrate() (*Report, error) {
	s.lockClocks()
	fit, err := FitLatency(s.Runs, s.HeldOut, s.Setup, s.Free)
	if err != nil {
		return nil, err
	}
	rep := &Report{GPU: fit.GPU, Model: s.Setup.Model, Fitted: fit.Fitted, Cost: fit.Cost, Evaluations: fit.Evaluations}
	measuredPower := map[string]float64{}
	if len(s.PowerLogs) > 0 {
		if err := s.fitPower(rep, measuredPower); err != nil {
			return nil, err
		}
	}
	setup := *s.Setup
	if rep.Power != nil {
		prof, err := rep.Profile(&setup)
		if err != nil {
			return nil, err
		}
		setup.Profile = prof
	}
	for _, r := range fit.Runs {
		run := s.run(r.File)
		sim, err := Replay(run, &setup, fit.GPU)
		if err != nil {
			return nil, err
		}
		r.Simulated = sim
		if w, ok := measuredPower[r.File]; ok {
			energy := w * run.DurationS / float64(outputTokens(run))
			r.Measured.MeanPowerW, r.Measured.EnergyPerTokenJ = &w, &energy
		} else {
			r.Simulated.MeanPowerW, r.Simulated.EnergyPerTokenJ = nil, nil
		}
		rep.Runs = append(rep.Runs, RunReport{RunFit: r, Errors: errorsOf(r.Measured, r.Simulated)})
	}
	rep.MedianErrors.Fitted = medianErrors(rep.Runs, false)
	if len(s.HeldOut) > 0 {
		held := medianErrors(rep.Runs, true)
		rep.MedianErrors.HeldOut = &held
	}
	return rep, nil
}

// lockClocks sets the clock of every run a power log covers at a level
// below the top (nvidia-smi -lgc): the level whose realized clock is
// nearest the median SM clock logged while it ran.
func (s *Study) lockClocks() {
	prof := s.Setup.Profile
	realized := prof.RealizedClockLevelsMHz()
	for _, run := range s.allRuns() {
		for _, log := range s.PowerLogs {
			aligned, err := AlignPower(log, run)
			if err != nil {
				continue
			}
			clocks := make([]float64, len(aligned.Samples))
			for k, smp := range aligned.Samples {
				clocks[k] = smp.SMClockMHz
			}
			sort.Float64s(clocks)
			if k := nearest(realized, clocks[len(clocks)/2]); k < len(realized)-1 {
				run.ClockMHz = prof.ClockMHz[k]
			}
			break
		}
	}
}

// allRuns are the runs to fit, then the held-out ones.
func (s *Study) allRuns() []*Run { return append(slices.Clone(s.Runs), s.HeldOut...) }

// run is the study's run read from file.
func (s *Study) run(file string) *Run {
	for _, r := range s.allRuns() {
		if r.File == file {
			return r
		}
	}
	return nil
}

// fitPower matches every power log to the runs it covers, synchronizes
// each match to its replay on the fitted card, fits the powers per level
// over all of them and the thermal constants on the log that fits best,
// and notes each matched run's measured mean power.
func (s *Study) fitPower(rep *Report, measured map[string]float64) error {
	var combined PowerLog
	var parts []activityPart
	offset := 0.0
	for _, log := range s.PowerLogs {
		matched := 0
		for _, run := range s.allRuns() {
			aligned, err := AlignPower(log, run)
			if err != nil {
				continue
			}
			activity, err := ReplayActivity(run, s.Setup, rep.GPU)
			if err != nil {
				return err
			}
			aligned, shift := Synchronize(aligned, activity)
			rep.PowerMatches = append(rep.PowerMatches, PowerMatch{Log: log.File, Run: run.File, ShiftS: shift, Samples: len(aligned.Samples)})
			sum := 0.0
			for _, smp := range aligned.Samples {
				sum += smp.PowerW
			}
			measured[run.File] = sum / float64(len(aligned.Samples))
			// Each match goes after the last on one time line, a second
			// apart, so that one fit sees them all.
			start := offset - aligned.Samples[0].TimeS + 1
			parts = append(parts, activityPart{fromS: start + aligned.Samples[0].TimeS, shift: start, activity: activity})
			for k, smp := range aligned.Samples {
				smp.TimeS += start
				if k == 0 && len(combined.Samples) > 0 {
					// The first sample stands for no interval of this run.
					continue
				}
				combined.Samples = append(combined.Samples, smp)
			}
			offset = combined.Samples[len(combined.Samples)-1].TimeS
			matched++
		}
		if matched == 0 {
			return fmt.Errorf("power log %s: covers none of the bench files' runs (their dates and durations): expected a log kept while they ran", log.File)
		}
	}
	combined.File = s.PowerLogs[0].File
	if len(s.PowerLogs) > 1 {
		combined.File += fmt.Sprintf(" and %d more", len(s.PowerLogs)-1)
	}
	power, err := FitPower(&combined, func(fromS, toS float64) (float64, float64) {
		i := sort.Search(len(parts), func(i int) bool { return parts[i].fromS > fromS }) - 1
		if i < 0 {
			return 0, 0
		}
		return parts[i].activity(fromS-parts[i].shift, toS-parts[i].shift)
	}, s.Setup.Profile.RealizedClockLevelsMHz())
	if err != nil {
		return err
	}
	for _, lp := range power {
		for _, w := range []struct {
			name  string
			value float64
		}{{"idle", lp.IdleW}, {"prefill", lp.PrefillW}, {"decode", lp.DecodeW}} {
			if !(w.value > 0) {
				return fmt.Errorf("power fit %s: %s power at %g MHz comes out %.3g W: the logs hold too little %s time at that clock to fit it",
					combined.File, w.name, lp.ClockMHz, w.value, w.name)
			}
		}
	}
	rep.Power = power
	// The thermal constants of the log whose power varied the most: a log
	// of steady power tells ambient and resistance apart poorly, whatever
	// its fit's R squared; an unphysical fit (no positive resistance) is
	// left out.
	bestSpread := 0.0
	for _, log := range s.PowerLogs {
		thermal, err := FitThermal(log)
		if spread := powerSpread(log); err == nil && thermal.ResistanceCPerW > 0 && spread > bestSpread {
			rep.Thermal, bestSpread = &thermal, spread
		}
	}
	return nil
}

// powerSpread is the standard deviation of the log's power, W.
func powerSpread(log *PowerLog) float64 {
	var sum, sq float64
	for _, s := range log.Samples {
		sum += s.PowerW
		sq += s.PowerW * s.PowerW
	}
	n := float64(len(log.Samples))
	return math.Sqrt(max(0, sq/n-(sum/n)*(sum/n)))
}

// activityPart is one matched run's activity on the combined time line.
type activityPart struct {
	fromS, shift float64
	activity     Activity
}

// Profile is the setup's profile with the fitted powers at the levels the
// power logs covered (a level's realized clock nearest each fit's), its
// baselines the fitted card's lone request on the setup's engine
// (plant.ServiceModel.Baseline).
func (r *Report) Profile(setup *Setup) (*profile.Profile, error) {
	base := setup.Profile
	p := profile.Profile{
		ClockMHz: base.ClockMHz, PrefillTokensPerS: base.PrefillTokensPerS, DecodeTokensPerS: base.DecodeTokensPerS,
		IdlePowerW: slices.Clone(base.IdlePowerW), PrefillPowerW: slices.Clone(base.PrefillPowerW), DecodePowerW: slices.Clone(base.DecodePowerW),
		BaselineTTFTS: base.BaselineTTFTS, BaselineTPOTS: base.BaselineTPOTS, RealizedClockMHz: base.RealizedClockMHz,
		Status:      "calibrated_not_validated",
		SourceLabel: fmt.Sprintf("servesim calibrate: %s + %s, powers fitted at %d of %d levels over %s", r.GPU.Name, r.Model.Name, len(r.Power), len(base.ClockMHz), base.SourceLabel),
	}
	p.BaselineTTFTS, p.BaselineTPOTS = setup.service(r.GPU).Baseline()
	realized := base.RealizedClockLevelsMHz()
	for _, lp := range r.Power {
		k := nearest(realized, lp.ClockMHz)
		p.IdlePowerW[k], p.PrefillPowerW[k], p.DecodePowerW[k] = lp.IdleW, lp.PrefillW, lp.DecodeW
	}
	return profile.New(p)
}

// nearest is the index of the value of levels nearest x.
func nearest(levels []float64, x float64) int {
	best := 0
	for i, l := range levels {
		if math.Abs(l-x) < math.Abs(levels[best]-x) {
			best = i
		}
	}
	return best
}

// outputTokens is the output tokens of run's completed requests.
func outputTokens(run *Run) int {
	n := 0
	for _, q := range run.Requests {
		if !q.Failed {
			n += q.OutputTokens
		}
	}
	return n
}

// errorsOf are the relative errors of sim against measured.
func errorsOf(measured, sim Metrics) Errors {
	rel := func(s, m float64) *float64 {
		if !(m > 0) || math.IsNaN(s) {
			return nil
		}
		e := s/m - 1
		return &e
	}
	relPtr := func(s, m *float64) *float64 {
		if s == nil || m == nil {
			return nil
		}
		return rel(*s, *m)
	}
	return Errors{
		MeanTTFT: rel(sim.MeanTTFTS, measured.MeanTTFTS), P99TTFT: rel(sim.P99TTFTS, measured.P99TTFTS),
		MeanTPOT: rel(sim.MeanTPOTS, measured.MeanTPOTS), Throughput: rel(sim.OutputThroughput, measured.OutputThroughput),
		MeanPower: relPtr(sim.MeanPowerW, measured.MeanPowerW), EnergyPerToken: relPtr(sim.EnergyPerTokenJ, measured.EnergyPerTokenJ),
	}
}

// medianErrors are the median absolute errors of the runs held out (or
// fitted).
func medianErrors(runs []RunReport, heldOut bool) Errors {
	median := func(get func(*Errors) *float64) *float64 {
		var values []float64
		for i := range runs {
			if runs[i].HeldOut == heldOut {
				if e := get(&runs[i].Errors); e != nil {
					values = append(values, math.Abs(*e))
				}
			}
		}
		if len(values) == 0 {
			return nil
		}
		sort.Float64s(values)
		m := values[len(values)/2]
		if len(values)%2 == 0 {
			m = (values[len(values)/2-1] + m) / 2
		}
		return &m
	}
	return Errors{
		MeanTTFT:       median(func(e *Errors) *float64 { return e.MeanTTFT }),
		P99TTFT:        median(func(e *Errors) *float64 { return e.P99TTFT }),
		MeanTPOT:       median(func(e *Errors) *float64 { return e.MeanTPOT }),
		Throughput:     median(func(e *Errors) *float64 { return e.Throughput }),
		MeanPower:      median(func(e *Errors) *float64 { return e.MeanPower }),
		EnergyPerToken: median(func(e *Errors) *float64 { return e.EnergyPerToken }),
	}
}
