// Package numeric holds the few numerical routines whose exact semantics the
// reference implementation fixes (numpy's interp, percentile, mean and
// median, nearest-rank percentiles and Python's round), each defined once.
package numeric

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/interp"
)

// Interpolator evaluates piecewise-linear interpolation with np.interp
// semantics: values outside the knots are clamped to the end values.
type Interpolator struct {
	pl     interp.PiecewiseLinear
	xs, ys []float64
}

// NewInterpolator fits xs (strictly increasing, at least two) to ys.
func NewInterpolator(xs, ys []float64) (Interpolator, error) {
	var in Interpolator
	if err := in.pl.Fit(xs, ys); err != nil {
		return Interpolator{}, err
	}
	in.xs, in.ys = xs, ys
	return in, nil
}

// At returns the interpolated value at x, clamped like np.interp.
func (in Interpolator) At(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return math.NaN()
	case x <= in.xs[0]:
		return in.ys[0]
	case x >= in.xs[len(in.xs)-1]:
		return in.ys[len(in.ys)-1]
	}
	return in.pl.Predict(x)
}

// pairwiseBlock is numpy's PW_BLOCKSIZE; bufferSize is numpy's default
// ufunc buffer size, which bounds one pairwise reduction.
const (
	pairwiseBlock = 128
	bufferSize    = 8192
)

// Sum adds values the way np.sum does on a contiguous float64 array:
// pairwise summation within chunks of numpy's buffer size.
func Sum(values []float64) float64 {
	total := 0.0
	for start := 0; start < len(values); start += bufferSize {
		end := min(start+bufferSize, len(values))
		total += pairwiseSum(values[start:end])
	}
	return total
}

func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= pairwiseBlock:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range 8 {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// Mean is np.mean: Sum divided by the count; NaN for no values.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	return Sum(values) / float64(len(values))
}

// PercentileLinear is np.percentile with its default linear method, for q in
// [0, 100]. It sorts a copy of values; NaN for no values.
func PercentileLinear(values []float64, q float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return PercentileLinearSorted(sorted, q)
}

// PercentileLinearSorted is PercentileLinear for already sorted values.
func PercentileLinearSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	i, t := linearIndex(n, q)
	if i >= n-1 {
		return sorted[n-1]
	}
	return lerp(sorted[i], sorted[i+1], t)
}

// linearIndex is numpy's virtual index (n-1)*q/100 of the linear method,
// split into its integer part and fraction.
func linearIndex(n int, q float64) (int, float64) {
	index := float64(n-1) * (q / 100)
	lo := math.Floor(index)
	return int(lo), index - lo
}

// lerp is numpy's interpolation between neighbours a <= b: a + t*(b-a), or
// b - (b-a)*(1-t) when t >= 0.5.
func lerp(a, b, t float64) float64 {
	diff := b - a
	if t >= 0.5 {
		return b - diff*(1-t)
	}
	return a + diff*t
}

// Median is np.median: the middle value, or the mean of the two middle
// values; NaN for no values. It sorts a copy of values.
func Median(values []float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// NearestRank returns the nearest-rank percentile of sorted values for a
// fraction q in [0, 1]: sorted[clamp(ceil(q*n)-1, 0, n-1)]. The caller
// decides what no values mean.
func NearestRank(sorted []float64, q float64) float64 {
	return sorted[NearestRankIndex(len(sorted), q)]
}

// Round is Python's round(x, ndigits): the exact binary value rounded half
// to even at ndigits decimal places. NaN and infinities are returned as is.
func Round(x float64, ndigits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', ndigits, 64), 64)
	if err != nil {
		return x
	}
	return r
}
