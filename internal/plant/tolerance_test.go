package plant

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant/mpc"
	"servesim/internal/profile"
)

// TestMPCToleranceIsThePlants keeps the tolerances that package mpc
// restates (it cannot import this package) equal to the plant's.
func TestMPCToleranceIsThePlants(t *testing.T) {
	assert.Equal(t, TimeEpsilonS, mpc.TimeEpsilonS)
	assert.Equal(t, PowerEpsilonW, mpc.PowerEpsilonW)
	for _, eps := range []float64{TimeEpsilonS, TokenEpsilon, RateFloorTokensPerS, PowerEpsilonW, profile.ClockEpsilonMHz} {
		assert.Equal(t, 1e-12, eps, "the reference's value")
	}
}

// TestTimeEpsilonSIsWhatItsDocSays checks the numbers TimeEpsilonS's doc
// comment gives about the summed 0.1 s grid.
func TestTimeEpsilonSIsWhatItsDocSays(t *testing.T) {
	const dt = 0.1
	timeS, firstOff := 0.0, 0
	for k := 1; k <= 10_000_000; k++ {
		timeS += dt
		off := math.Abs(timeS - float64(k)/10)
		switch {
		case k == 8:
			require.Less(t, timeS, 0.8, "the summed grid's step 8 starts just before 0.8 s")
			assert.LessOrEqual(t, 0.8, timeS+TimeEpsilonS, "an arrival at 0.8 s is admitted at step 8")
		case k == 36_000:
			assert.InDelta(t, 2.2e-9, off, 0.05e-9, "after an hour")
		case k == 10_000_000:
			assert.InDelta(t, 1.6e-4, off, 0.05e-4, "after 10^7 steps")
		}
		if firstOff == 0 && off > TimeEpsilonS {
			firstOff = k
		}
	}
	assert.Equal(t, 929, firstOff, "the first step more than TimeEpsilonS from k/10")
	assert.NotEqual(t, math.Nextafter(16384, 0), math.Nextafter(16384, 0)+TimeEpsilonS, "below 16,384 s the tolerance moves a time")
	start := 16384.0
	assert.Equal(t, start, start+TimeEpsilonS, "from 16,384 s on it rounds away")
}
