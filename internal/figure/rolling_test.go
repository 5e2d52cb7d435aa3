package figure

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveRolling computes what rolling does by visiting every window whole.
func naiveRolling(ys []float64, w int) (mean, lo, hi []float64) {
	mean, lo, hi = []float64{}, []float64{}, []float64{}
	for i := range ys {
		win := centred(i, max(w, 1), len(ys))
		sum, mn, mx := 0.0, math.Inf(1), math.Inf(-1)
		for _, v := range ys[win.lo : win.hi+1] {
			sum += v
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
		mean = append(mean, sum/float64(win.hi-win.lo+1))
		lo, hi = append(lo, mn), append(hi, mx)
	}
	return mean, lo, hi
}

func TestRollingMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]float64, 1000)
	for i := range random {
		random[i] = 1000 * rng.Float64()
	}
	// a clock that alternates every step between two levels, as a
	// controller's does, with a dip
	clock := make([]float64, 500)
	for i := range clock {
		clock[i] = []float64{1110, 2040}[i%2]
	}
	clock[250] = 420
	up, down := make([]float64, 300), make([]float64, 300)
	for i := range up {
		up[i], down[i] = float64(i), float64(-i)
	}
	tests := []struct {
		name string
		ys   []float64
		w    int
	}{
		{"empty", nil, 10},
		{"one value", []float64{3}, 10},
		{"window of one", random[:50], 1},
		{"window of zero counts as one", random[:50], 0},
		{"even window", random, 10},
		{"odd window", random, 101},
		{"window as long as the values", random[:40], 40},
		{"window longer than the values", random[:40], 1000},
		{"huge window", random[:40], math.MaxInt},
		{"alternating clock", clock, 100},
		{"increasing", up, 37},
		{"decreasing", down, 37},
		{"constant", []float64{63.7, 63.7, 63.7, 63.7, 63.7}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, lo, hi := rolling(tt.ys, tt.w)
			wantMean, wantLo, wantHi := naiveRolling(tt.ys, tt.w)
			require.Len(t, mean, len(tt.ys))
			assert.Equal(t, wantLo, lo, "minimum")
			assert.Equal(t, wantHi, hi, "maximum")
			for i := range mean {
				assert.InDelta(t, wantMean[i], mean[i], 1e-9*max(1, math.Abs(wantMean[i])), "mean at %d", i)
				assert.True(t, lo[i] <= mean[i] && mean[i] <= hi[i], "mean inside the band at %d", i)
			}
		})
	}
}

func TestCentredWindow(t *testing.T) {
	tests := []struct {
		i, w, n int
		want    indexRange
	}{
		{0, 10, 100, indexRange{0, 5}},
		{50, 10, 100, indexRange{46, 55}},
		{50, 11, 100, indexRange{45, 55}},
		{99, 10, 100, indexRange{95, 99}},
		{3, 1, 10, indexRange{3, 3}},
		{2, 100, 5, indexRange{0, 4}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, centred(tt.i, tt.w, tt.n), "%+v", tt)
	}
}

func BenchmarkRolling(b *testing.B) {
	ys := make([]float64, 36000) // an hour of 0.1 s steps
	for i := range ys {
		ys[i] = []float64{1110, 2040}[i%2] + float64(i%7)
	}
	for _, w := range []int{10, 100, 1000} {
		b.Run("window="+strconv.Itoa(w), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rolling(ys, w)
			}
		})
	}
}

func TestSmoothingWindow(t *testing.T) {
	tests := []struct {
		name              string
		span, step, least float64
		wantSamples       int
		wantWidth         float64
	}{
		{"15 minutes of 0.1 s steps", 900, 0.1, 10, 100, 10},
		{"an hour", 3600, 0.1, 10, 100, 10},
		{"three hours: 50 s", 3 * 3600, 0.1, 10, 500, 50},
		{"a day: 500 s", 86400, 0.1, 10, 5000, 500},
		{"1 s steps", 900, 1, 10, 10, 10},
		{"steps longer than the window", 900, 30, 10, 1, 10},
		{"a few steps", 0.3, 0.1, 10, 100, 10},
		{"no step", 900, 0, 10, 1, 10},
		{"NaN step", 900, math.NaN(), 10, 1, 10},
		{"tiny step: bounded", 900, 1e-300, 10, 1 << 31, 10},
	}
	for _, tt := range tests {
		samples, width := SmoothingWindow(tt.span, tt.step, tt.least)
		assert.Equal(t, tt.wantSamples, samples, tt.name)
		assert.InDelta(t, tt.wantWidth, width, 1e-9, tt.name)
	}
}

func TestLevelWidth(t *testing.T) {
	tests := []struct{ span, least, want float64 }{
		{40, 1, 1},       // 0.2 s is below the plan period
		{1800, 1, 10},    // 9 s rounded up
		{7200, 5, 50},    // 36 s rounded up
		{100, 0.5, 0.5},  // exactly 0.5 s
		{0, 1, 1},        // nothing simulated
		{1000, 20, 20},   // the least wins
		{3600, 0.25, 20}, // 18 s rounded up
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, LevelWidth(tt.span, tt.least), "span %v least %v", tt.span, tt.least)
	}
}
