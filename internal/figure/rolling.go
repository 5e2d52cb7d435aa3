package figure

import "math"

// indexRange is the range of indices [lo, hi] of a rolling window.
type indexRange struct{ lo, hi int }

// centred returns the window of w values centred on index i of n values,
// clipped to [0, n-1]: indices i-(w-1)/2 to i+w/2. Both ends only grow
// with i, which lets rolling slide over the values once.
func centred(i, w, n int) indexRange {
	return indexRange{lo: max(0, i-(w-1)/2), hi: min(n-1, i+w/2)}
}

// rolling returns, for every index i of ys, the mean, the minimum and the
// maximum of the window of w values centred on i (see centred; fewer at the
// ends). It costs O(len(ys)) whatever w: a running sum for the mean and a
// monotone deque of indices for each extreme.
func rolling(ys []float64, w int) (mean, lo, hi []float64) {
	n := len(ys)
	w = max(w, 1)
	mean, lo, hi = make([]float64, n), make([]float64, n), make([]float64, n)
	// mins keeps the indices of the window whose values increase from front
	// to back, maxs those whose values decrease: each front is the extreme.
	// A window gains its new last index before it drops its old first one,
	// so a deque holds at most w+1 indices.
	mins, maxs := newDeque(min(n, w)+1), newDeque(min(n, w)+1)
	sum := 0.0
	in := indexRange{lo: 0, hi: -1} // the values summed and queued so far
	for i := range n {
		want := centred(i, w, n)
		for in.hi < want.hi {
			in.hi++
			v := ys[in.hi]
			sum += v
			for mins.len > 0 && ys[mins.back()] >= v {
				mins.popBack()
			}
			mins.pushBack(in.hi)
			for maxs.len > 0 && ys[maxs.back()] <= v {
				maxs.popBack()
			}
			maxs.pushBack(in.hi)
		}
		for in.lo < want.lo {
			sum -= ys[in.lo]
			in.lo++
		}
		for mins.front() < in.lo {
			mins.popFront()
		}
		for maxs.front() < in.lo {
			maxs.popFront()
		}
		lo[i], hi[i] = ys[mins.front()], ys[maxs.front()]
		// the running sum carries rounding errors: keep the mean in its band
		mean[i] = min(max(sum/float64(in.hi-in.lo+1), lo[i]), hi[i])
	}
	return mean, lo, hi
}

// deque is a double-ended queue of indices in a ring of fixed capacity.
type deque struct {
	ring      []int
	head, len int
}

func newDeque(capacity int) *deque { return &deque{ring: make([]int, max(capacity, 1))} }

func (d *deque) front() int { return d.ring[d.head] }

func (d *deque) back() int { return d.ring[(d.head+d.len-1)%len(d.ring)] }

func (d *deque) pushBack(v int) {
	d.ring[(d.head+d.len)%len(d.ring)] = v
	d.len++
}

func (d *deque) popBack() { d.len-- }

func (d *deque) popFront() {
	d.head = (d.head + 1) % len(d.ring)
	d.len--
}

// windowsPerSpan is how many rolling windows at least fit across a series:
// with a figure's few hundred pixels of width, a window then spans about
// two pixels or more, so the rolling mean reads as a line.
const windowsPerSpan = 400

// SmoothingWindow returns the width of the rolling window (Series.Window)
// for a series over xSpan sampled every xStep: least, or xSpan/400 rounded
// up to 1, 2 or 5 times a power of ten when that is wider, and how many
// samples that width holds (at least 1, at most 2^31).
func SmoothingWindow(xSpan, xStep, least float64) (samples int, width float64) {
	width = niceWidth(xSpan/windowsPerSpan, least)
	if !(xStep > 0) {
		return 1, width
	}
	const most = 1 << 31 // more than any series holds
	return int(max(1, math.Min(math.Round(width/xStep), most))), width
}

// niceWidth returns least, or rough rounded up to 1, 2 or 5 times a power
// of ten when that is wider.
func niceWidth(rough, least float64) float64 {
	if rough > least && isFinite(rough) {
		mantissa, exp := niceStepAtLeast(rough)
		return float64(mantissa) * math.Pow10(exp)
	}
	return least
}

// levelsPerSpan is how many levels at most fit across a series drawn as
// levels (Series.Steps): fewer than rolling windows, since each level has
// risers at both ends.
const levelsPerSpan = 200

// LevelWidth returns the width of the bins of a series over xSpan drawn as
// levels (Series.Steps): least, or xSpan/200 rounded up to 1, 2 or 5 times
// a power of ten when that is wider, so that the levels read as a line of
// steps, not a comb.
func LevelWidth(xSpan, least float64) float64 {
	return niceWidth(xSpan/levelsPerSpan, least)
}
