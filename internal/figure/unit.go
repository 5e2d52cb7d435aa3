package figure

import "math"

// Unit is a unit in which to show values given in seconds.
type Unit struct {
	Name      string  // spelled in axis labels: "s" or "ms"
	PerSecond float64 // how many of the unit make one second
}

// Seconds and Milliseconds are the units of durations on axes.
var (
	Seconds      = Unit{Name: "s", PerSecond: 1}
	Milliseconds = Unit{Name: "ms", PerSecond: 1000}
)

// DurationUnit returns the unit that shows durations given in seconds
// readably: milliseconds when every finite value is below one second,
// seconds otherwise (and when there is no value), so an axis never reads
// 3500000 ms. Pass every value the axis shows, reference lines included.
func DurationUnit(seconds ...[]float64) Unit {
	unit := Seconds
	for _, values := range seconds {
		for _, v := range values {
			if !isFinite(v) {
				continue
			}
			if math.Abs(v) >= 1 {
				return Seconds
			}
			unit = Milliseconds
		}
	}
	return unit
}

// Of returns durations given in seconds in the unit, as a new slice.
func (u Unit) Of(seconds []float64) []float64 {
	out := make([]float64, len(seconds))
	for i, v := range seconds {
		out[i] = v * u.PerSecond
	}
	return out
}
