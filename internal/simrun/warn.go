package simrun

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
)

// timeSolves asks ctrl to measure its solves when Verbose and it can.
func (c *Config) timeSolves(ctrl plant.ClockController) {
	if t, ok := ctrl.(plant.SolveTimer); ok && c.Verbose {
		t.TimeSolves()
	}
}

// reportSolveTimes writes one line on Stderr with the solve times ctrl
// measured (see timeSolves), after prefix ("replica 3: " in a fleet);
// nothing for a controller that does not solve.
func (c *Config) reportSolveTimes(prefix string, ctrl plant.ClockController) {
	t, ok := ctrl.(plant.SolveTimer)
	if !ok || !c.Verbose {
		return
	}
	times := t.SolveTimes()
	if times == nil || times.Count == 0 {
		fmt.Fprintf(c.Stderr, "servesim: %s%s made no solve\n", prefix, ctrl.Name())
		return
	}
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Nanosecond) }
	fellBack := ""
	if p, ok := ctrl.(plant.Planner); ok {
		if n := p.Diagnostics().FallbackCount; n > 0 {
			fellBack = fmt.Sprintf(" (%d fell back to race-to-idle)", n)
		}
	}
	fmt.Fprintf(c.Stderr, "servesim: %s%s: %d solves%s, wall clock on this machine: total %s, mean %s, p50 %s, p99 %s, max %s\n",
		prefix, ctrl.Name(), times.Count, fellBack, round(times.Total), round(times.Total/time.Duration(times.Count)),
		round(times.Percentile(50)), round(times.Percentile(99)), round(times.Max))
}

// warnFixedClock says on w which level a fixed:MHZ controller (or a
// race-to-idle:MHZ controller when busy) runs when the profile has no level
// at MHz (the provenance records a fixed:MHZ one as fixed_clock_level_mhz).
func warnFixedClock(w runparams.Warner, spec string, ctrl plant.ClockController, prof *profile.Profile) {
	var mhz float64
	switch c := ctrl.(type) {
	case plant.FixedClock:
		mhz = c.MHz
	case plant.RaceToIdle:
		mhz = c.MHz
	}
	if mhz == 0 {
		return
	}
	level := prof.QuantizeClock(mhz, true)
	if level == mhz {
		return
	}
	which := "the highest level below it"
	switch {
	case mhz < prof.MinClockMHz():
		which = "its lowest level"
	case mhz > prof.MaxClockMHz():
		which = "its highest level"
	}
	w.Warnf("servesim: %s %s: the profile has no %s MHz level; using %s MHz (%s)\n",
		runparams.Setting("controller"), spec, formatMHz(mhz), formatMHz(level), which)
}

// maxSimTimeMargin is the share of the last arrival time that the
// --max-sim-time suggested by PastMaxSimTime adds for the last requests to
// be served.
const maxSimTimeMargin = 0.10

// maxSimTime is the setting PastMaxSimTime names.
const maxSimTime = runparams.Setting("max-sim-time")

// warnArrivalsPastMaxSimTime says on w, in one line, how many of the
// requests could not complete when arrivals run past --max-sim-time, and
// why (PastMaxSimTime).
func warnArrivalsPastMaxSimTime(w runparams.Warner, last float64, requests int, maxSimTimeS, unfinished float64) {
	if why := PastMaxSimTime(w.Name, last, maxSimTimeS, unfinished); why != "" {
		w.Warnf("servesim: %.0f of %d requests could not complete: %s\n", unfinished, requests, why)
	}
}

// PastMaxSimTime says why requests of a run could not complete when its
// arrivals (after --normalize, which dilates them) run to last, past
// --max-sim-time maxSimTimeS, and which --max-sim-time covers them: the
// last arrival plus 10%, rounded up to a whole minute, the settings worded
// by name (runparams.Format). It is empty when the arrivals end within
// --max-sim-time or no request is unfinished.
// simulate's warning ends with it, and so do sweep's, one per trace and
// --normalize of its runs.
func PastMaxSimTime(name func(runparams.Setting) string, last, maxSimTimeS, unfinished float64) string {
	if !(last > maxSimTimeS) || unfinished == 0 {
		return ""
	}
	// Rounded to the microsecond first, so that 5400 s plus 10% is 5940 s,
	// not 5940.000000000001 s and a minute more.
	withMargin := last * (1 + maxSimTimeMargin)
	if rounded := math.Round(withMargin*1e6) / 1e6; !math.IsInf(rounded, 0) {
		withMargin = rounded
	}
	cover := math.Ceil(withMargin/60) * 60
	if math.IsInf(cover, 0) {
		return runparams.Format(name, "arrivals run to %s s, past %s %s and past any other",
			formatSeconds(last, 1), maxSimTime, strconv.FormatFloat(maxSimTimeS, 'g', -1, 64))
	}
	return runparams.Format(name, "arrivals run to %s s, past %s %s; %s %s covers them (the last arrival plus %.0f%%, rounded up to a minute)",
		formatSeconds(last, 1), maxSimTime, strconv.FormatFloat(maxSimTimeS, 'g', -1, 64), maxSimTime, formatSeconds(cover, 0), maxSimTimeMargin*100)
}

// longSeconds is where formatSeconds turns to an exponent: past it, fixed
// digits would spell out a time a --normalize close to 0 dilated (1e-300
// runs the arrivals to 1e+299 s and more) in hundreds of digits.
const longSeconds = 1e15

// formatSeconds formats a time in seconds with decimals digits after the
// point, or, from longSeconds on, as the shortest %g that reads back as it.
func formatSeconds(s float64, decimals int) string {
	if math.Abs(s) < longSeconds {
		return strconv.FormatFloat(s, 'f', decimals, 64)
	}
	return strconv.FormatFloat(s, 'g', -1, 64)
}

// formatMHz formats a clock in MHz as briefly as it is exact.
func formatMHz(mhz float64) string { return strconv.FormatFloat(mhz, 'f', -1, 64) }

// warnNormalizeUnchanged says on w, in one line, that --normalize left the
// arrivals as they were (dilation 1): the trace already offers less than
// the target, and normalization, as the reference's, only stretches a
// trace. Without it, a --normalize 0.6 on a trace at 0.2 looks like a run
// at 0.6.
func warnNormalizeUnchanged(w runparams.Warner, target float64, dilation *float64) {
	if target == 0 || dilation == nil || *dilation != 1 {
		return
	}
	w.Warnf("servesim: %s %s: the trace already offers less than that share of the maximum-clock capacity, so its arrivals are unchanged "+
		"(normalization only stretches a trace, as the reference's does; dilation 1)\n", runparams.Setting("normalize"), strconv.FormatFloat(target, 'g', -1, 64))
}
