package figure

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecimateKeepsExtremesAndOrder(t *testing.T) {
	n := 100000
	xys := make([]point, n)
	for i := range xys {
		xys[i] = point{X: float64(i), Y: math.Sin(float64(i) / 500)}
	}
	xys[54321].Y = 7  // a spike
	xys[77777].Y = -9 // a dip
	out := decimate(xys, 3000)
	assert.LessOrEqual(t, len(out), 3002)
	maxY, minY := math.Inf(-1), math.Inf(1)
	for i, p := range out {
		if i > 0 {
			assert.Greater(t, p.X, out[i-1].X, "x stays increasing")
		}
		maxY, minY = math.Max(maxY, p.Y), math.Min(minY, p.Y)
	}
	assert.Equal(t, 7.0, maxY)
	assert.Equal(t, -9.0, minY)
	assert.Equal(t, xys[0], out[0])
	assert.Equal(t, xys[n-1], out[len(out)-1])

	short := xys[:10]
	assert.Equal(t, short, decimate(short, 3000))
}

func TestEnvelopeHoldsEveryPointAndNeverCrosses(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		limit int
	}{
		{"thinned", 100000, 4000},
		{"uneven last bucket", 10007, 300},
		{"short: unchanged", 50, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lower, upper := make([]point, tt.n), make([]point, tt.n)
			for i := range lower {
				x := float64(i) / 10
				mid := 1500 + 400*math.Sin(x/30)
				half := 300 * math.Abs(math.Sin(float64(i)*1.7)) // a ragged band
				lower[i], upper[i] = point{x, mid - half}, point{x, mid + half}
			}
			lo, hi := envelope(lower, upper, tt.limit)
			require.Len(t, hi, len(lo))
			assert.LessOrEqual(t, len(lo), tt.limit+2)
			for i := range lo {
				assert.Equal(t, lo[i].X, hi[i].X, "edges share their x")
				assert.LessOrEqual(t, lo[i].Y, hi[i].Y, "edges do not cross at %d", i)
				if i > 0 {
					assert.GreaterOrEqual(t, lo[i].X, lo[i-1].X, "x does not decrease")
				}
			}
			assert.Equal(t, lower[0].X, lo[0].X)
			assert.Equal(t, lower[tt.n-1].X, lo[len(lo)-1].X)
			// every original point lies inside the thinned band at its x
			k := 0
			for i := range lower {
				for k+1 < len(lo) && lo[k+1].X <= lower[i].X {
					k++
				}
				assert.LessOrEqual(t, lo[k].Y, lower[i].Y, "point %d above the lower edge", i)
				assert.GreaterOrEqual(t, hi[k].Y, upper[i].Y, "point %d below the upper edge", i)
			}
		})
	}
}
