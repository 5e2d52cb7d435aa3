package plant

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/sharedtest"
)

// BenchmarkSimulateMPC runs the mpc controller and, for comparison, max on
// the whole code trace normalized to 0.8 and the first 900 s of the
// conversation trace normalized to 0.4 (the L4 rows; its costliest case
// relative to max, goal 4 of docs/mpc_goals.md) and on a synthetic
// code-like day (the embedded proxy), summary only.
func BenchmarkSimulateMPC(b *testing.B) {
	l4 := referenceProfile(b, "l4_proxy")
	code, _, err := NormalizeOfferedLoad(loadCodeTrace(b), l4, 0.8)
	require.NoError(b, err)
	f, err := os.Open(sharedtest.ConvTrace(b))
	require.NoError(b, err)
	defer f.Close()
	w, err := LoadWorkload(f, "conv", 900)
	require.NoError(b, err)
	conv, _, err := NormalizeOfferedLoad(w.Requests, l4, 0.4)
	require.NoError(b, err)
	convPlant := NewPlant(l4)
	convPlant.MaxSimulationTimeS = 100000 // until every request completes
	day := CodeTraceLike(1, oneDayS)
	day.MeanRequestsPerS = oneDayRequest / oneDayS
	dayPlant := NewPlant(profile.Default())
	dayPlant.MaxSimulationTimeS = oneDayS
	for _, run := range []struct {
		name     string
		requests []Request
		plant    Plant
	}{
		{"code", code, NewPlant(l4)},
		{"conv", conv, convPlant},
		{"day", day.Requests(), dayPlant},
	} {
		for _, spec := range []string{"max", "mpc"} {
			b.Run(run.name+"/"+spec, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := NewController(spec)
					require.NoError(b, err)
					res, err := Simulate(run.requests, run.plant, ChunkedPrefill{}, c, Options{Summary: true})
					require.NoError(b, err)
					b.ReportMetric(float64(res.Steps), "steps")
				}
			})
		}
	}
}
