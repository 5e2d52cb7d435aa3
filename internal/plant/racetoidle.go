package plant

// RaceToIdle finishes work as fast as it may and then idles as cheaply as
// it can: it requests a busy clock while any request is queued or decoding
// and the lowest level when nothing is. The busy clock is the highest level
// when MHz is zero, else MHz, which the plant quantizes down to a level as
// it does a FixedClock's request. The reference has no such controller;
// its names follow the reference's style: race_to_idle_clock_controller,
// and race_to_idle_<MHz as Python's :g>_mhz_clock_controller with a busy
// clock.
type RaceToIdle struct {
	MHz float64 // busy clock request, MHz; zero means the highest level
}

// Name implements ClockController.
func (r RaceToIdle) Name() string {
	if r.MHz == 0 {
		return "race_to_idle_clock_controller"
	}
	return "race_to_idle_" + formatG(r.MHz) + "_mhz_clock_controller"
}

// RequestClock implements ClockController.
func (r RaceToIdle) RequestClock(obs Observation) float64 {
	levels := obs.ClockLevelsMHz
	switch {
	case obs.PrefillQueue == 0 && obs.DecodeActive == 0:
		return levels[0]
	case r.MHz == 0:
		return levels[len(levels)-1]
	}
	return r.MHz
}
