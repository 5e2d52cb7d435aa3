package workload

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSyntheticTraceResemblesTheCodeTrace(t *testing.T) {
	gen := CodeTraceLike(2023, 3600).Requests() // the seed of plant.DefaultTraceConfig
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
	assert.Greater(t, gapsCV(gaps), 1.2, "arrivals are burstier than Poisson (code trace: much burstier)")
}

// gapsCV is the coefficient of variation of inter-arrival gaps (1 for
// Poisson arrivals).
func gapsCV(gaps []float64) float64 {
	mean, sq := 0.0, 0.0
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	return math.Sqrt(sq/float64(len(gaps))) / mean
}

func TestSyntheticTraceDependsOnlyOnItsSeed(t *testing.T) {
	a := CodeTraceLike(7, 600).Requests()
	b := CodeTraceLike(7, 600).Requests()
	c := CodeTraceLike(8, 600).Requests()
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}

// TestWriteCSV2024RoundTrips: the 2024 form reads back as the requests of
// the trace, with a UTC offset on every time.
func TestWriteCSV2024RoundTrips(t *testing.T) {
	c := WeekTraceLike(3)
	c.DurationS = 120
	var buf bytes.Buffer
	require.NoError(t, c.WriteCSV2024(&buf))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, "TIMESTAMP,ContextTokens,GeneratedTokens", lines[0])
	assert.Regexp(t, `^2024-05-10 00:0[0-9]:[0-9]{2}\.[0-9]{6}\+00:00,[0-9]+,[0-9]+$`, lines[1])
	w, err := LoadWorkload(&buf, "week", NoElapsedLimit)
	require.NoError(t, err)
	want := c.Requests()
	assert.InDelta(t, WeekRequests/(7*24*3600.0)*120, len(want), 1000, "about 45 requests a second")
	require.Len(t, w.Requests, len(want))
	assert.Equal(t, want, w.Requests)
}

func TestDiurnalShapesTheRate(t *testing.T) {
	c := CodeTraceLike(3, 14*86400)
	c.Start = time.Date(2024, 5, 10, 0, 0, 0, 0, time.UTC) // a Friday
	c.MeanRequestsPerS, c.BurstGapS = 1, 0.01
	c.Diurnal = &Diurnal{Amplitude: 0.5, PeakHour: 14, WeekendFactor: 0.7}
	var perHour [24]float64
	var weekday, weekend, total float64
	c.Each(func(us int64, _, _ int) bool {
		at := c.Start.Add(time.Duration(us) * time.Microsecond)
		perHour[at.Hour()]++
		if d := at.Weekday(); d == time.Saturday || d == time.Sunday {
			weekend++
		} else {
			weekday++
		}
		total++
		return true
	})
	// Two weeks at a mean of 1 request a second: 1,209,600 expected.
	assert.InDelta(t, 1.0, total/(14*86400), 0.02, "the mean rate is kept over whole weeks")
	assert.InDelta(t, 0.7, (weekend/4)/(weekday/10), 0.03, "a weekend day over a weekday")
	assert.InDelta(t, 3.0, perHour[14]/perHour[2], 0.15, "the peak hour over the trough's: (1+A)/(1-A)")
	assert.Greater(t, perHour[14], perHour[13])
	assert.Greater(t, perHour[14], perHour[15])
}

func TestDiurnalNilKeepsTheTrace(t *testing.T) {
	// Without a shape the generator draws as it always has: the synthetic
	// week the week-scale benchmarks read begins with these arrivals.
	flat := WeekTraceLike(1)
	flat.DurationS = 3600
	a := flat.Requests()
	require.Len(t, a, 162521)
	assert.InDelta(t, 3599.955929, a[len(a)-1].ArrivalTimeS, 1e-9)
	// A flat shape (no swing, weekends as weekdays) keeps the mean rate.
	shaped := flat
	shaped.Diurnal = &Diurnal{Amplitude: 0, PeakHour: 0, WeekendFactor: 1}
	assert.InDelta(t, float64(len(a)), float64(len(shaped.Requests())), 0.01*float64(len(a)))
}

func TestDiurnalCheck(t *testing.T) {
	tests := []struct {
		d    Diurnal
		want string
	}{
		{Diurnal{Amplitude: 0.5, PeakHour: 14, WeekendFactor: 0.7}, ""},
		{Diurnal{Amplitude: 1, PeakHour: 14, WeekendFactor: 0.7}, "diurnal amplitude 1: expected a number in [0, 1)"},
		{Diurnal{Amplitude: -0.1, PeakHour: 14, WeekendFactor: 1}, "diurnal amplitude -0.1"},
		{Diurnal{Amplitude: 0, PeakHour: 24, WeekendFactor: 1}, "peak hour 24: expected an hour in [0, 24)"},
		{Diurnal{Amplitude: 0, PeakHour: 0, WeekendFactor: 0}, "weekend factor 0: expected a number in (0, 1]"},
		{Diurnal{Amplitude: math.NaN(), PeakHour: 0, WeekendFactor: 1}, "diurnal amplitude NaN"},
	}
	for _, tt := range tests {
		err := tt.d.Check()
		if tt.want == "" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), tt.want)
	}
}
