package numeric

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStdIsThePopulationStandardDeviation(t *testing.T) {
	// np.std([2, 4, 4, 4, 5, 5, 7, 9]) == 2.0; np.std([1, 2]) == 0.5.
	assert.Equal(t, 2.0, Std([]float64{2, 4, 4, 4, 5, 5, 7, 9}))
	assert.Equal(t, 0.5, Std([]float64{1, 2}))
	assert.Equal(t, 0.0, Std([]float64{3}))
	assert.True(t, math.IsNaN(Std(nil)))
}

// expand is the sample Repeated stands for.
func expand(values []float64, counts []int) []float64 {
	var out []float64
	for i, v := range values {
		for range counts[i] {
			out = append(out, v)
		}
	}
	return out
}

func TestRepeatedIsTheExpandedSample(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		counts []int
	}{
		{[]float64{3, 1, 2}, []int{1, 1, 1}},
		{[]float64{0.25, 0.5, 0.125}, []int{3, 0, 2}},
		{[]float64{9, 1, 5, 5, 2}, []int{1, 4, 2, 1, 7}},
		{[]float64{7}, []int{10}},
		{[]float64{2, 1}, []int{1, 1}},
	} {
		x := expand(tc.values, tc.counts)
		r := NewRepeated(tc.values, tc.counts)
		assert.EqualValues(t, len(x), r.Len())
		assert.InDelta(t, Mean(x), r.Mean(), 1e-12, "%v", tc)
		assert.InDelta(t, Std(x), r.Std(), 1e-12, "%v", tc)
		assert.Equal(t, Median(x), r.Median(), "%v", tc)
		for _, q := range []float64{0, 1, 25, 50, 90, 99, 99.9, 100} {
			assert.Equal(t, PercentileLinear(x, q), r.PercentileLinear(q), "%v q=%v", tc, q)
		}
	}
}

func TestRepeatedByHand(t *testing.T) {
	// 1 x3, 4 x1: [1, 1, 1, 4]. Mean 7/4, deviations -0.75 x3 and 2.25:
	// variance (3*0.5625 + 5.0625)/4 = 1.6875; median (1+1)/2 = 1; p99
	// at index 2.97: 1 + 0.97*3 = 3.91; p50 at 1.5: 1.
	r := NewRepeated([]float64{4, 1}, []int{1, 3})
	assert.Equal(t, 1.75, r.Mean())
	assert.Equal(t, math.Sqrt(1.6875), r.Std())
	assert.Equal(t, 1.0, r.Median())
	assert.InDelta(t, 3.91, r.PercentileLinear(99), 1e-12)
	assert.Equal(t, 1.0, r.PercentileLinear(50))
	empty := NewRepeated([]float64{1}, []int{0})
	assert.Zero(t, empty.Len())
	for _, v := range []float64{empty.Mean(), empty.Std(), empty.Median(), empty.PercentileLinear(50)} {
		assert.True(t, math.IsNaN(v))
	}
}
