package mpc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTPOTMetShared checks the closed form against the sum it stands for:
// the chance of meeting the objective with n others decoding, n geometric
// with mean mean and below maxActive, each getting capacity/(n+1) tokens
// per step (tpotMet).
func TestTPOTMetShared(t *testing.T) {
	const dt, maxActive = 0.1, 64
	for _, tpotS := range []float64{0.1, 0.15, 0.333} {
		for _, budgetS := range []float64{math.Inf(1), 4.4, 0.7} {
			for _, o := range []float64{1, 2, 7, 17, 100, 719} {
				for _, capacity := range []float64{0.3, 1.17, 6.43, 31.9} {
					for _, mean := range []float64{0, 0.37, 2.9, 11.3, 300} {
						q := mean / (1 + mean)
						met, total, weight := 0.0, 0.0, 1-q
						for n := range maxActive {
							if tpotMet(o, capacity/float64(n+1), dt, tpotS, budgetS) {
								met += weight
							}
							total += weight
							weight *= q
						}
						assert.InDelta(t, met/total, tpotMetShared(o, capacity, mean, dt, tpotS, budgetS, maxActive), 1e-9,
							"o %v capacity %v mean %v tpot %v budget %v", o, capacity, mean, tpotS, budgetS)
					}
				}
			}
		}
	}
}
