package numeric

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNearestRankIndexMatchesNearestRank(t *testing.T) {
	for n := 1; n <= 300; n++ {
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = float64(i)
		}
		for _, q := range []float64{0, 0.001, 0.1, 0.25, 0.5, 0.95, 0.99, 0.999, 1} {
			assert.Equal(t, NearestRank(sorted, q), sorted[NearestRankIndex(n, q)], "n=%d q=%v", n, q)
		}
	}
}

func TestNearestRankSelectMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i, n int) float64{
		"random":     func(int, int) float64 { return rng.NormFloat64() * 100 },
		"few values": func(int, int) float64 { return float64(rng.IntN(4)) },
		"ascending":  func(i, _ int) float64 { return float64(i) },
		"descending": func(i, n int) float64 { return float64(n - i) },
		"constant":   func(int, int) float64 { return 7 },
		"organ pipe": func(i, n int) float64 { return float64(min(i, n-i)) },
		"halves":     func(int, int) float64 { return float64(rng.IntN(5)-2) / 2 },
	}
	for name, shape := range shapes {
		for _, n := range []int{1, 2, 3, 7, 64, 1000, 4097} {
			values := make([]float64, n)
			for i := range values {
				values[i] = shape(i, n)
			}
			sorted := slices.Clone(values)
			slices.Sort(sorted)
			for _, q := range []float64{0, 0.5, 0.95, 0.99, 1, rng.Float64()} {
				work := slices.Clone(values)
				assert.Equal(t, NearestRank(sorted, q), NearestRankSelect(work, q), "%s n=%d q=%v", name, n, q)
				slices.Sort(work)
				assert.Equal(t, sorted, work, "%s n=%d: select only reorders", name, n)
			}
		}
	}
}

func TestPercentileLinearSelectMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := map[string]func(i, n int) float64{
		"random":     func(int, int) float64 { return rng.NormFloat64() * 100 },
		"few values": func(int, int) float64 { return float64(rng.IntN(4)) },
		"ascending":  func(i, _ int) float64 { return float64(i) },
		"descending": func(i, n int) float64 { return float64(n - i) },
		"constant":   func(int, int) float64 { return 7 },
		"organ pipe": func(i, n int) float64 { return float64(min(i, n-i)) },
	}
	for name, shape := range shapes {
		for _, n := range []int{1, 2, 3, 7, 64, 1000, 4097} {
			values := make([]float64, n)
			for i := range values {
				values[i] = shape(i, n)
			}
			sorted := slices.Clone(values)
			slices.Sort(sorted)
			// One buffer serves several percentiles in turn, in any order.
			work := slices.Clone(values)
			for _, q := range []float64{99, 90, 50, 0, 100, 95, 12.5, 100 * rng.Float64()} {
				assert.Equal(t, PercentileLinearSorted(sorted, q), PercentileLinearSelect(work, q), "%s n=%d q=%v", name, n, q)
			}
			slices.Sort(work)
			assert.Equal(t, sorted, work, "%s n=%d: select only reorders", name, n)
		}
	}
	assert.True(t, math.IsNaN(PercentileLinearSelect(nil, 50)))
}

func BenchmarkNearestRankSelect(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(3, 4))
	values := make([]float64, n)
	for i := range values {
		values[i] = rng.ExpFloat64()
	}
	work := make([]float64, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(work, values)
		NearestRankSelect(work, 0.99)
		NearestRankSelect(work, 0.95)
		NearestRankSelect(work, 0.5)
	}
}
