package main

import (
	"fmt"
	"math"
	"strconv"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// warnFixedClock says on stderr which level a fixed:MHZ controller (or a
// race-to-idle:MHZ controller when busy) runs when the profile has no level
// at MHz (the provenance records a fixed:MHZ one as fixed_clock_level_mhz).
func warnFixedClock(s *streams, spec string, ctrl plant.ClockController, prof *profile.Profile) {
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
	fmt.Fprintf(s.Err, "servesim: --controller %s: the profile has no %s MHz level; using %s MHz (%s)\n",
		spec, formatMHz(mhz), formatMHz(level), which)
}

// maxSimTimeMargin is the share of the last arrival time that the
// --max-sim-time suggested by warnArrivalsPastMaxSimTime adds for the
// last requests to be served.
const maxSimTimeMargin = 0.10

// warnArrivalsPastMaxSimTime says on stderr, in one line, how many requests
// could not complete when arrivals (after --normalize, which dilates them)
// run past --max-sim-time, and a --max-sim-time that covers them: the last
// arrival plus 10%, rounded up to a whole minute.
func warnArrivalsPastMaxSimTime(s *streams, requests []plant.Request, maxSimTimeS, unfinished float64) {
	last := requests[len(requests)-1].ArrivalTimeS
	if !(last > maxSimTimeS) || unfinished == 0 {
		return
	}
	// Rounded to the microsecond first, so that 5400 s plus 10% is 5940 s,
	// not 5940.000000000001 s and a minute more.
	withMargin := math.Round(last*(1+maxSimTimeMargin)*1e6) / 1e6
	cover := math.Ceil(withMargin/60) * 60
	fmt.Fprintf(s.Err, "servesim: %.0f of %d requests could not complete: arrivals run to %.1f s, past --max-sim-time %s; "+
		"--max-sim-time %.0f covers them (the last arrival plus %.0f%%, rounded up to a minute)\n",
		unfinished, len(requests), last, strconv.FormatFloat(maxSimTimeS, 'g', -1, 64), cover, maxSimTimeMargin*100)
}

// formatMHz formats a clock in MHz as briefly as it is exact.
func formatMHz(mhz float64) string { return strconv.FormatFloat(mhz, 'f', -1, 64) }
