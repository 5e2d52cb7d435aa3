package figure

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
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
