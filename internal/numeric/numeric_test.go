package numeric

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numpyCases holds values computed by numpy 1.24 and Python 3.11 (the
// reference's versions) for the inputs caseValues(n): np.sum, np.mean,
// np.median and np.percentile of each, Python's round and np.interp.
type numpyCases struct {
	Stats []struct {
		N           int          `json:"n"`
		Mean        float64      `json:"mean"`
		Sum         float64      `json:"sum"`
		Median      float64      `json:"median"`
		Percentiles [][2]float64 `json:"percentiles"`
	} `json:"stats"`
	Round  [][3]float64 `json:"round"`
	Interp struct {
		Xs    []float64    `json:"xs"`
		Ys    []float64    `json:"ys"`
		Cases [][2]float64 `json:"cases"`
	} `json:"interp"`
}

func loadCases(t *testing.T) numpyCases {
	data, err := os.ReadFile("testdata/numpy_cases.json")
	require.NoError(t, err)
	var c numpyCases
	require.NoError(t, json.Unmarshal(data, &c))
	return c
}

func caseValues(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((i*7919)%10007)/97.0*math.Pow(10, float64(i%9-4)) - 3.0
	}
	return v
}

func TestStatsMatchNumpy(t *testing.T) {
	for _, c := range loadCases(t).Stats {
		v := caseValues(c.N)
		assert.Equal(t, c.Sum, Sum(v), "sum n=%d", c.N)
		assert.Equal(t, c.Mean, Mean(v), "mean n=%d", c.N)
		assert.Equal(t, c.Median, Median(v), "median n=%d", c.N)
		for _, p := range c.Percentiles {
			assert.Equal(t, p[1], PercentileLinear(v, p[0]), "percentile n=%d q=%g", c.N, p[0])
			assert.Equal(t, p[1], PercentileLinearSelect(slices.Clone(v), p[0]), "percentile by selection n=%d q=%g", c.N, p[0])
		}
	}
}

func TestRoundMatchesPython(t *testing.T) {
	for _, c := range loadCases(t).Round {
		assert.Equal(t, c[2], Round(c[0], int(c[1])), "round(%v, %v)", c[0], c[1])
	}
	assert.True(t, math.IsNaN(Round(math.NaN(), 2)))
}

func TestInterpolatorMatchesNumpy(t *testing.T) {
	c := loadCases(t).Interp
	in, err := NewInterpolator(c.Xs, c.Ys)
	require.NoError(t, err)
	for _, tc := range c.Cases {
		assert.Equal(t, tc[1], in.At(tc[0]), "interp(%v)", tc[0])
	}
}

func TestEmptyAndNearestRank(t *testing.T) {
	assert.True(t, math.IsNaN(Mean(nil)))
	assert.True(t, math.IsNaN(Median(nil)))
	assert.True(t, math.IsNaN(PercentileLinear(nil, 50)))
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		q    float64
		want float64
	}{{0, 1}, {0.5, 5}, {0.95, 10}, {0.99, 10}, {0.1, 1}, {0.11, 2}, {1, 10}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, NearestRank(sorted, tt.q), "q=%v", tt.q)
	}
}
