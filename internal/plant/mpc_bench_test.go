package plant

import (
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// BenchmarkSimulateMPC runs the mpc controller and, for comparison, max on
// the whole code trace normalized to 0.8 (the L4 rows) and on a synthetic
// code-like day (the embedded proxy), summary only.
func BenchmarkSimulateMPC(b *testing.B) {
	l4 := referenceProfile(b, "l4_proxy")
	code, _, err := NormalizeOfferedLoad(loadCodeTrace(b), l4, 0.8)
	require.NoError(b, err)
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
