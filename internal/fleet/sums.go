package fleet

import (
	"math"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// stepSums accumulates, per fleet step, the replicas' power and queued plus
// decoding requests. Power is added in fixed point, as whole multiples of
// a quantum 2^-shift W chosen so that the fleet's largest possible total
// fits in an int64: the sums are then exact, so they do not depend on the
// order replicas are added in (the parallel and lock-step paths agree bit
// for bit, at any --jobs) and a replica's steps can be added late. The
// quantum is below 1e-12 W for any fleet of up to MaxReplicas GPUs drawing
// under 1 kW, and L4-sized powers (multiples of 2^-46 W) are held exactly
// in fleets of up to a few hundred replicas.
type stepSums struct {
	scale  float64 // 2^shift
	power  []int64
	queued []int
}

// powerScale returns 2^shift for a fleet whose step powers are bounded by
// the peak powers of its replicas' profiles.
func powerScale(specs []replicaSpec) float64 {
	bound := 0.0
	for _, s := range specs {
		bound += 2 * peakProfilePower(s.plant.Profile) // a step's power is a mix of the profile's powers
	}
	_, exp := math.Frexp(math.Max(bound, 1)) // bound < 2^exp
	return math.Ldexp(1, 62-exp)
}

// peakProfilePower is the largest power of any phase at any level.
func peakProfilePower(p *profile.Profile) float64 {
	peak := 0.0
	for _, mhz := range p.ClockMHz {
		for _, phase := range []profile.Phase{profile.PhasePrefill, profile.PhaseDecode, profile.PhaseIdle} {
			peak = math.Max(peak, p.Power(phase, mhz))
		}
	}
	return peak
}

// fixed is power in the sums' fixed point.
func (s *stepSums) fixed(powerW float64) int64 { return int64(math.Round(powerW * s.scale)) }

// reserve makes room for steps steps.
func (s *stepSums) reserve(steps int) {
	s.power = make([]int64, 0, steps)
	s.queued = make([]int, 0, steps)
}

// add adds one replica's step.
func (s *stepSums) add(step int, l plant.StepLoad) {
	s.addFixed(step, s.fixed(l.PowerW), l.Queued)
}

// addFixed adds a power already in fixed point and a queue.
func (s *stepSums) addFixed(step int, power int64, queued int) {
	for len(s.power) <= step {
		s.power = append(s.power, 0)
		s.queued = append(s.queued, 0)
	}
	s.power[step] += power
	s.queued[step] += queued
}

// merge adds other's sums into s.
func (s *stepSums) merge(other *stepSums) {
	for t := range other.power {
		s.addFixed(t, other.power[t], other.queued[t])
	}
}

// series returns the power sums in W and the queue sums of the first steps
// steps.
func (s *stepSums) series(steps int) ([]float64, []int) {
	power := make([]float64, steps)
	queued := make([]int, steps)
	for t := range min(steps, len(s.power)) {
		power[t] = float64(s.power[t]) / s.scale
		queued[t] = s.queued[t]
	}
	return power, queued
}

// deferredPower holds, run-length encoded, the powers of the idle steps a
// replica took after its checkpoint: they count only if a request is routed
// to it later (its queue is zero on those steps).
type deferredPower struct {
	first int // step of the first held power
	runs  []powerRun
}

// powerRun is a run of steps with the same power.
type powerRun struct {
	power int64
	steps int
}

// hold appends step's power (steps are held in order without gaps).
func (d *deferredPower) hold(step int, power int64) {
	if len(d.runs) == 0 {
		d.first = step
	}
	if n := len(d.runs); n > 0 && d.runs[n-1].power == power {
		d.runs[n-1].steps++
		return
	}
	d.runs = append(d.runs, powerRun{power: power, steps: 1})
}

// flush adds the held powers to sums and forgets them.
func (d *deferredPower) flush(sums *stepSums) {
	step := d.first
	for _, r := range d.runs {
		for range r.steps {
			sums.addFixed(step, r.power, 0)
			step++
		}
	}
	d.runs = d.runs[:0]
}

// drop forgets the held powers: the replica rolls back past them.
func (d *deferredPower) drop() { d.runs = d.runs[:0] }
