package numeric

import (
	"math"
	"math/bits"
	"slices"
)

// NearestRankIndex is the index NearestRank reads in n sorted values for a
// fraction q in [0, 1]: clamp(ceil(q*n)-1, 0, n-1).
func NearestRankIndex(n int, q float64) int {
	return min(n-1, max(0, int(math.Ceil(q*float64(n)))-1))
}

// NearestRankSelect returns what NearestRank would return for values once
// sorted, without sorting: it partially reorders values in place
// (introselect: quickselect, falling back to sorting the remaining range
// when the pivots are poor), in linear expected time. values must not hold
// NaN and must not be empty.
func NearestRankSelect(values []float64, q float64) float64 {
	k := NearestRankIndex(len(values), q)
	selectKth(values, k)
	return values[k]
}

// PercentileLinearSelect returns what PercentileLinear returns, without
// sorting: it partially reorders values in place (as NearestRankSelect
// does), in linear expected time, so that several percentiles of one
// series cost a few passes instead of a sort. NaN for no values; values
// must not hold NaN.
func PercentileLinearSelect(values []float64, q float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	i, t := linearIndex(n, q)
	if i >= n-1 {
		i = n - 1
	}
	selectKth(values, i)
	if i == n-1 {
		return values[i]
	}
	// Every value after index i is at least values[i]: the next order
	// statistic is their minimum.
	return lerp(values[i], slices.Min(values[i+1:]), t)
}

// selectKth reorders a so that a[k] is the value sorting would put there,
// with no larger value before it and no smaller value after it.
func selectKth(a []float64, k int) {
	lo, hi := 0, len(a)-1
	budget := 2 * bits.Len(uint(len(a)))
	for hi > lo {
		if budget == 0 {
			slices.Sort(a[lo : hi+1])
			return
		}
		budget--
		// The median of the first, middle and last values is the pivot; the
		// ordering puts sentinels at both ends.
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for i <= hi && a[i] < pivot {
				i++
			}
			for j >= lo && a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// Now a[lo..j] <= pivot, a[i..hi] >= pivot and a[j+1..i-1] == pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}
