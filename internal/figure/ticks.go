package figure

import (
	"math"
	"strconv"
)

// tick is one labelled position on an axis.
type tick struct {
	Value float64
	Label string
}

// niceTicks returns evenly spaced ticks inside [lo, hi] whose step is 1, 2
// or 5 times a power of ten: the smallest such step that gives at most
// most+1 ticks; then smaller steps while that leaves fewer than three
// ticks, keeping within most+1 unless there would be fewer than two. A range
// of zero width is first widened around its value.
func niceTicks(lo, hi float64, most int) []tick {
	lo, hi = widen(lo, hi)
	most = max(most, 2)
	rough := hi/float64(most) - lo/float64(most) // no overflow for huge ranges
	mantissa, exp := niceStepAtLeast(rough)
	ticks := stepTicks(lo, hi, mantissa, exp)
	for len(ticks) < 3 {
		mantissa, exp = smallerStep(mantissa, exp)
		finer := stepTicks(lo, hi, mantissa, exp)
		if len(finer) > most+1 && len(ticks) >= 2 {
			break
		}
		ticks = finer
	}
	return ticks
}

// niceStepAtLeast returns the smallest step mantissa x 10^exp not below
// rough, with mantissa 1, 2 or 5.
func niceStepAtLeast(rough float64) (mantissa int64, exp int) {
	exp = int(math.Floor(math.Log10(rough)))
	for _, m := range []int64{1, 2, 5} {
		if float64(m)*math.Pow10(exp) >= rough {
			return m, exp
		}
	}
	return 1, exp + 1
}

// smallerStep returns the nice step just below mantissa x 10^exp.
func smallerStep(mantissa int64, exp int) (int64, int) {
	switch mantissa {
	case 5:
		return 2, exp
	case 2:
		return 1, exp
	default:
		return 5, exp - 1
	}
}

// stepTicks returns the multiples of mantissa x 10^exp inside [lo, hi].
// Each value is parsed from its decimal spelling, so it is the float64
// nearest to that decimal and its label is that short decimal.
func stepTicks(lo, hi float64, mantissa int64, exp int) []tick {
	step := float64(mantissa) * math.Pow10(exp)
	const slack = 1e-9 // a tick a rounding error outside the range still counts
	first := int64(math.Ceil(lo/step - slack))
	last := int64(math.Floor(hi/step + slack))
	var ticks []tick
	for i := first; i <= last; i++ {
		v, err := strconv.ParseFloat(strconv.FormatInt(i*mantissa, 10)+"e"+strconv.Itoa(exp), 64)
		if err != nil {
			continue
		}
		ticks = append(ticks, tick{Value: v, Label: tickLabel(v)})
	}
	return ticks
}

// logTicks returns the ticks of a logarithmic axis over [lo, hi], lo > 0:
// the powers of ten inside it, every k-th one (at multiples of k) when
// there would be more than most+1; when fewer than four powers fall inside,
// 1, 2 and 5 times each power instead. A range too narrow for two such ticks
// gets niceTicks.
func logTicks(lo, hi float64, most int) []tick {
	most = max(most, 2)
	const slack = 1e-9 // a tick a rounding error outside the range still counts
	first := int(math.Ceil(math.Log10(lo) - slack))
	last := int(math.Floor(math.Log10(hi) + slack))
	mantissas, every := []int64{1}, 1
	for multiples(first, last, every) > most+1 {
		every++
	}
	if last-first+1 < 4 {
		mantissas, every, first = []int64{1, 2, 5}, 1, first-1
	}
	var ticks []tick
	for exp := first; exp <= last; exp++ {
		if exp%every != 0 {
			continue
		}
		for _, m := range mantissas {
			v, err := strconv.ParseFloat(strconv.FormatInt(m, 10)+"e"+strconv.Itoa(exp), 64)
			if err == nil && v >= lo*(1-slack) && v <= hi*(1+slack) {
				ticks = append(ticks, tick{Value: v, Label: tickLabel(v)})
			}
		}
	}
	if len(ticks) < 2 {
		return niceTicks(lo, hi, most)
	}
	return ticks
}

// multiples counts the multiples of k in [first, last].
func multiples(first, last, k int) int {
	floorDiv := func(a int) int {
		q := a / k
		if a%k != 0 && a < 0 {
			q--
		}
		return q
	}
	return floorDiv(last) - floorDiv(first-1)
}

// tickLabel spells a tick value compactly in plain decimals: 0, 2.5, 0.001,
// 1200000. Only magnitudes below 1e-4 or from 1e15 up use an exponent.
func tickLabel(v float64) string {
	v += 0 // turns -0 into 0
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e15) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// widen returns [lo, hi] unchanged unless it is too narrow to divide into
// ticks; then a range around its middle.
func widen(lo, hi float64) (float64, float64) {
	if hi-lo > 1e-9*max(math.Abs(lo), math.Abs(hi)) {
		return lo, hi
	}
	mid := lo/2 + hi/2
	half := math.Abs(mid) * 0.1
	if half == 0 {
		half = 1
	}
	return mid - half, mid + half
}
