package mpc

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The solve's shortcuts must give the model's numbers bit for bit: the
// goal table and the documents are compared byte for byte across changes.

// TestBinTablesDivideExactly: a bin's width is a power of two, so
// multiplying by its tabulated inverse is the division cdf and above did.
func TestBinTablesDivideExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for b := range histogramBins {
		lo, hi := binLow(b), binLow(b+1)
		require.Equal(t, lo, binLows[b])
		for range 50 {
			x := lo + rng.Float64()*(hi-lo)
			require.Equal(t, (x-lo+1)/(hi-lo), (x-binLows[b]+1)*binScales[b], "bin %d, x %v", b, x)
			require.Equal(t, (hi-1-x)/(hi-lo), (hi-1-x)*binScales[b], "bin %d, x %v", b, x)
		}
	}
}

// TestSumOfSquaresIsTheBinsSum: the squares kept as values are added
// equal the sum over bins of count times mean squared, in bin order.
func TestSumOfSquaresIsTheBinsSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h histogram
	for i := range 5000 {
		h.add(1 + int(rng.ExpFloat64()*700))
		if i%97 == 0 {
			want := 0.0
			h.bins(func(count, value float64) { want += count * value * value })
			require.Equal(t, want, h.sumOfSquares(), "after %d values", i+1)
		}
	}
}

// TestEmptyQueueTTFTIsCachedPerPromptDistribution: ttftMet with nothing
// ahead is remembered per level and cycle, and forgotten when a prompt is
// added.
func TestEmptyQueueTTFTIsCachedPerPromptDistribution(t *testing.T) {
	c, err := New(proxyPlant(), SLO{TTFTS: 0.5, TPOTS: 0.05}, Settings{PeriodS: 1, Horizon: 30, Budget: 1 << 20})
	require.NoError(t, err)
	pr := &c.pr
	pr.prompts = &c.learn.prompts
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 20 {
		for range 1 + rng.IntN(40) {
			c.learn.prompts.add(1 + rng.IntN(3000))
		}
		c.learn.prompts.prepare()
		pr.forgetEmptyTTFT()
		for _, levels := range [][]phaseLevel{c.levels.cool, c.levels.hot} {
			for i := range levels {
				pl := &levels[i]
				for _, cycle := range []float64{pr.dtS, 2 * pr.dtS} {
					want := pr.ttftMetBehind(pl, 0, cycle)
					require.Equal(t, want, pr.ttftMet(pl, 0, cycle), "round %d, level %d, cycle %v", round, i, cycle)
					require.Equal(t, want, pr.ttftMet(pl, 0, cycle), "cached, round %d", round)
					require.Equal(t, pr.ttftMetBehind(pl, 700, cycle), pr.ttftMet(pl, 700, cycle))
				}
			}
		}
	}
	// A value cached before a prompt was added is not served after it.
	pl := &c.levels.cool[3]
	before := pr.ttftMet(pl, 0, pr.dtS)
	for range 200 {
		c.learn.prompts.add(20000)
	}
	c.learn.prompts.prepare()
	pr.forgetEmptyTTFT()
	require.NotEqual(t, before, pr.ttftMet(pl, 0, pr.dtS))
	require.Equal(t, pr.ttftMetBehind(pl, 0, pr.dtS), pr.ttftMet(pl, 0, pr.dtS))
}
