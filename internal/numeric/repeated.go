package numeric

import (
	"math"
	"slices"
	"sort"
)

// Std is np.std with its defaults (the population standard deviation,
// ddof 0): the square root of the mean squared deviation from Mean, both
// sums pairwise as numpy adds; NaN for no values.
func Std(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	mean := Mean(values)
	squares := make([]float64, len(values))
	for i, v := range values {
		d := v - mean
		squares[i] = d * d
	}
	return math.Sqrt(Sum(squares) / float64(len(values)))
}

// Repeated is a sample in which each of some values occurs a whole number
// of times, such as a per-token series whose tokens share their request's
// value: numpy's statistics of the expanded array, without expanding it.
// The sums are taken value by value in ascending order (not pairwise over
// the expanded array), so means may differ from numpy's in the last bits;
// order statistics are exact.
type Repeated struct {
	values []float64 // ascending
	upTo   []int     // upTo[i]: occurrences of values[0..i]
}

// NewRepeated returns the sample in which values[i] occurs counts[i] times
// (counts[i] >= 0). It takes both slices over: it sorts them together in
// place and turns counts into running totals.
func NewRepeated(values []float64, counts []int) Repeated {
	sort.Sort(byValue{values, counts})
	kept, total := 0, 0
	for i, v := range values {
		if counts[i] > 0 {
			total += counts[i]
			values[kept], counts[kept] = v, total
			kept++
		}
	}
	return Repeated{values: values[:kept], upTo: counts[:kept]}
}

// byValue sorts values and their counts together by value.
type byValue struct {
	values []float64
	counts []int
}

func (b byValue) Len() int           { return len(b.values) }
func (b byValue) Less(i, j int) bool { return b.values[i] < b.values[j] }
func (b byValue) Swap(i, j int) {
	b.values[i], b.values[j] = b.values[j], b.values[i]
	b.counts[i], b.counts[j] = b.counts[j], b.counts[i]
}

// Len is the size of the expanded sample.
func (r Repeated) Len() int {
	if len(r.upTo) == 0 {
		return 0
	}
	return r.upTo[len(r.upTo)-1]
}

// at is element k (0-based) of the sorted expanded sample.
func (r Repeated) at(k int) float64 {
	i, _ := slices.BinarySearch(r.upTo, k+1)
	return r.values[i]
}

// Mean is np.mean of the expanded sample; NaN when it is empty.
func (r Repeated) Mean() float64 {
	n := r.Len()
	if n == 0 {
		return math.NaN()
	}
	sum, previous := 0.0, 0
	for i, v := range r.values {
		sum += v * float64(r.upTo[i]-previous)
		previous = r.upTo[i]
	}
	return sum / float64(n)
}

// Std is np.std (population) of the expanded sample; NaN when it is empty.
func (r Repeated) Std() float64 {
	n := r.Len()
	if n == 0 {
		return math.NaN()
	}
	mean := r.Mean()
	sum, previous := 0.0, 0
	for i, v := range r.values {
		d := v - mean
		sum += d * d * float64(r.upTo[i]-previous)
		previous = r.upTo[i]
	}
	return math.Sqrt(sum / float64(n))
}

// Median is np.median of the expanded sample; NaN when it is empty.
func (r Repeated) Median() float64 {
	n := r.Len()
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return r.at(n / 2)
	}
	return (r.at(n/2-1) + r.at(n/2)) / 2
}

// PercentileLinear is np.percentile (linear method) of the expanded
// sample for q in [0, 100]; NaN when it is empty.
func (r Repeated) PercentileLinear(q float64) float64 {
	n := r.Len()
	if n == 0 {
		return math.NaN()
	}
	index := float64(n-1) * (q / 100)
	lo := math.Floor(index)
	k := int(lo)
	if k >= n-1 {
		return r.at(n - 1)
	}
	return lerp(r.at(k), r.at(k+1), index-lo)
}
