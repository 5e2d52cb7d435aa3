package figure

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDurationUnit(t *testing.T) {
	tests := []struct {
		name    string
		seconds [][]float64
		want    Unit
	}{
		{"all below a second", [][]float64{{0.012, 0.2, 0.999}, {0.035}}, Milliseconds},
		{"one second", [][]float64{{0.2, 1}}, Seconds},
		{"an hour of waiting", [][]float64{{0.5, 3524.9}}, Seconds},
		{"the reference line decides too", [][]float64{{0.01, 0.02}, {1.5}}, Seconds},
		{"negative values by magnitude", [][]float64{{-2, 0.1}}, Seconds},
		{"non-finite values do not count", [][]float64{{0.1, math.NaN(), math.Inf(1)}}, Milliseconds},
		{"nothing finite", [][]float64{{math.NaN()}, nil}, Seconds},
		{"nothing at all", nil, Seconds},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DurationUnit(tt.seconds...), tt.name)
	}
}

func TestUnitOf(t *testing.T) {
	assert.Equal(t, []float64{12, 350}, Milliseconds.Of([]float64{0.012, 0.35}))
	assert.Equal(t, []float64{3.5}, Seconds.Of([]float64{3.5}))
	assert.Empty(t, Seconds.Of(nil))
}
