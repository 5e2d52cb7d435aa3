package plant

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestNormalizeOfferedLoad(t *testing.T) {
	p := profile.Default()
	requests := []Request{{ID: 0, ArrivalTimeS: 5, PromptTokens: 9500, OutputTokens: 240}, {ID: 1, ArrivalTimeS: 6, PromptTokens: 9500, OutputTokens: 240}}
	out, dilation, err := NormalizeOfferedLoad(requests, p, 0.5)
	require.NoError(t, err)
	// Isolated service 2 x (1 + 1) s over a 1 s span: rho 4, dilation 8.
	assert.Equal(t, 8.0, dilation)
	assert.Equal(t, []float64{0, 8}, []float64{out[0].ArrivalTimeS, out[1].ArrivalTimeS})
	assert.Equal(t, 5.0, requests[0].ArrivalTimeS, "input unchanged")

	light := []Request{{ID: 0, PromptTokens: 1, OutputTokens: 1}, {ID: 1, ArrivalTimeS: 1000, PromptTokens: 1, OutputTokens: 1}}
	_, dilation, err = NormalizeOfferedLoad(light, p, 0.8)
	require.NoError(t, err)
	assert.Equal(t, 1.0, dilation, "only dilates")

	for _, u := range []float64{0, 1, -0.5, math.NaN()} {
		_, _, err := NormalizeOfferedLoad(requests, p, u)
		assert.ErrorContains(t, err, "strictly between zero and one")
	}
	_, _, err = NormalizeOfferedLoad(nil, p, 0.5)
	assert.ErrorContains(t, err, "at least one request")
}
