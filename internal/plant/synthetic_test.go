package plant

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultTraceIsGenerated(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, CodeTraceLike(DefaultTraceSeed, DefaultTraceDurationS).WriteCSV(&buf))
	if *update {
		require.NoError(t, os.WriteFile(filepath.Join("default_trace.csv"), buf.Bytes(), 0o644))
	}
	require.Equal(t, buf.String(), string(defaultTraceCSV), "default_trace.csv is stale: go test -update")
}

func TestSyntheticTraceResemblesTheCodeTrace(t *testing.T) {
	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	gen := CodeTraceLike(DefaultTraceSeed, DefaultTraceDurationS).Requests()
	require.Len(t, w.Requests, len(gen))
	for i := range gen {
		gen[i].OriginalTimestamp = w.Requests[i].OriginalTimestamp
	}
	require.Equal(t, gen, w.Requests, "the CSV round trip keeps every request")

	n := len(gen)
	span := gen[n-1].ArrivalTimeS
	rate := float64(n) / span
	assert.InDelta(t, 2.57, rate, 0.2, "requests per second (code trace: 2.57)")
	prompts := make([]float64, n)
	outputs := make([]float64, n)
	gaps := make([]float64, 0, n)
	for i, r := range gen {
		prompts[i], outputs[i] = float64(r.PromptTokens), float64(r.OutputTokens)
		if i > 0 {
			gaps = append(gaps, r.ArrivalTimeS-gen[i-1].ArrivalTimeS)
		}
	}
	slices.Sort(prompts)
	slices.Sort(outputs)
	assert.InDelta(t, 1100, prompts[n/2], 250, "median prompt (code trace: 1469)")
	assert.InDelta(t, 16, outputs[n/2], 5, "median output (code trace: 13)")
	assert.LessOrEqual(t, prompts[n-1], 7437.0)
	assert.GreaterOrEqual(t, outputs[0], 1.0)
	mean, sq := 0.0, 0.0
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / mean
	assert.Greater(t, cv, 1.2, "arrivals are burstier than Poisson (code trace: much burstier)")
}

func TestSyntheticTraceDependsOnlyOnItsSeed(t *testing.T) {
	a := CodeTraceLike(7, 600).Requests()
	b := CodeTraceLike(7, 600).Requests()
	c := CodeTraceLike(8, 600).Requests()
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}
