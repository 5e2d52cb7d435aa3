package mpc

import "math/bits"

// subBins is the number of bins per power of two of a histogram: counts are
// kept to within 1/8 of their value (a log-linear histogram, as HDR
// histograms bin).
const subBins = 8

// histogramBins covers token counts up to 2^24.
const histogramBins = 25 * subBins

// histogram counts positive token counts in log-linear bins, with the sum of
// the values in each bin, and answers distribution queries (CDF, tail means)
// from prefix sums rebuilt lazily after an update.
type histogram struct {
	count [histogramBins]float64
	sum   [histogramBins]float64
	// square[i] is count[i] times the square of bin i's mean value.
	square [histogramBins]float64
	n      float64
	total  float64
	// cumCount[i] and cumSum[i] are the counts and sums of bins below i,
	// for i up to top+1.
	cumCount [histogramBins + 1]float64
	cumSum   [histogramBins + 1]float64
	// The prefix sums are valid up to bin dirtyFrom (all of them when it
	// is histogramBins), and top is the highest bin counted.
	dirtyFrom, top int
}

// binOf returns the bin of value v >= 1; bin i holds values in
// [binLow(i), binLow(i+1)).
func binOf(v int) int {
	if v < subBins {
		return max(v, 0)
	}
	e := bits.Len(uint(v)) - 1 // v in [2^e, 2^(e+1))
	sub := (v >> (e - 3)) & (subBins - 1)
	return min((e-2)*subBins+sub, histogramBins-1)
}

// binLow is the smallest value of bin i.
func binLow(i int) float64 {
	if i < subBins {
		return float64(i)
	}
	e := i/subBins + 2
	sub := i % subBins
	return float64((subBins + sub) << (e - 3))
}

// binLows[i] is binLow(i), and binScales[i] is 1 over the width of bin i
// (a power of two, so that multiplying by it divides exactly).
var binLows, binScales = func() (lows [histogramBins + 1]float64, scales [histogramBins]float64) {
	for i := range lows {
		lows[i] = binLow(i)
	}
	for i := range scales {
		scales[i] = 1 / (lows[i+1] - lows[i])
	}
	return lows, scales
}()

// add counts value v (at least 1).
func (h *histogram) add(v int) {
	b := binOf(max(v, 1))
	h.count[b]++
	h.sum[b] += float64(v)
	mean := h.sum[b] / h.count[b]
	h.square[b] = h.count[b] * mean * mean
	h.n++
	h.total += float64(v)
	h.dirtyFrom = min(h.dirtyFrom, b)
	h.top = max(h.top, b)
}

// prepare rebuilds the prefix sums after updates, from the lowest bin
// updated to the highest bin counted.
func (h *histogram) prepare() {
	if h.dirtyFrom > h.top {
		return
	}
	for i := h.dirtyFrom; i <= h.top; i++ {
		h.cumCount[i+1] = h.cumCount[i] + h.count[i]
		h.cumSum[i+1] = h.cumSum[i] + h.sum[i]
	}
	h.dirtyFrom = histogramBins
}

// mean is the mean value; 0 for an empty histogram.
func (h *histogram) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.total / h.n
}

// cdf is the share of values at most x, linear within a bin; h must be
// prepared.
func (h *histogram) cdf(x float64) float64 {
	if h.n == 0 || x < 1 {
		return 0
	}
	if x >= 1<<24 {
		return 1
	}
	b := binOf(int(x))
	if b > h.top {
		return 1
	}
	frac := (x - binLows[b] + 1) * binScales[b]
	return (h.cumCount[b] + min(frac, 1)*h.count[b]) / h.n
}

// above returns the count and the sum of the values above g (bins wholly
// above g, and the part of g's bin above it, spread linearly); h must be
// prepared.
func (h *histogram) above(g float64) (count, sum float64) {
	if g < 1 {
		return h.n, h.total
	}
	if g >= 1<<24 {
		return 0, 0
	}
	b := binOf(int(g))
	if b > h.top {
		return 0, 0
	}
	count = h.n - h.cumCount[b+1]
	sum = h.total - h.cumSum[b+1]
	hi := binLows[b+1]
	if share := (hi - 1 - g) * binScales[b]; share > 0 && h.count[b] > 0 {
		count += share * h.count[b]
		sum += share * h.count[b] * (g + hi) / 2
	}
	return count, sum
}

// bins calls f with the count and mean value of each nonempty bin.
func (h *histogram) bins(f func(count, value float64)) {
	for i := range h.top + 1 {
		if h.count[i] > 0 {
			f(h.count[i], h.sum[i]/h.count[i])
		}
	}
}

// sumOfSquares is the sum over the values of their bin's mean value
// squared, bin by bin as bins gives them.
func (h *histogram) sumOfSquares() float64 {
	s := 0.0
	for _, q := range h.square[:h.top+1] {
		s += q
	}
	return s
}

// nothingAbove is the probability mass above a value that counts as none:
// where the cdf reaches 1, 1 - cdf is a rounding error (about 1e-16).
const nothingAbove = 1e-12

// finishWithin is the probability that a value above g is at most g+more:
// P(V <= g+more | V > g); h must be prepared. With nothing above g, it is 0.
func (h *histogram) finishWithin(g, more float64) float64 {
	below := h.cdf(g)
	above := 1 - below
	if above <= nothingAbove {
		return 0
	}
	return clamp01((h.cdf(g+more) - below) / above)
}
