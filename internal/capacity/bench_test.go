package capacity

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/sharedtest"
)

// BenchmarkCapacityCodeTrace is the README's worked example: the whole
// Azure 2023 code trace (8819 requests, one hour) on the reference's L4
// rows, round-robin, TTFT SLO 5 s, the profile's TPOT SLO, 99% attainment
// (the answer is 33 replicas, after 12 fleet simulations of 1 to 64
// replicas), comparing max and reactive at the answer, on every core.
func BenchmarkCapacityCodeTrace(b *testing.B) {
	f, err := os.Open(sharedtest.CodeTrace(b))
	require.NoError(b, err)
	w, err := plant.LoadWorkload(f, "code", plant.NoElapsedLimit)
	f.Close()
	require.NoError(b, err)
	prof, err := profile.Load(sharedtest.Reference(b, "data", "l4_proxy", "l4_profile.csv"))
	require.NoError(b, err)
	study := Capacity{
		Plant:       plant.NewPlant(nil),
		Unit:        []fleet.Group{{Replicas: 1, Profile: prof, Scheduler: "chunked"}},
		Router:      fleet.RoundRobinName,
		Controllers: []string{"max", "reactive"},
		SLO:         plant.SLO{TTFTSeconds: 5},
		Search:      SearchSettings{Target: 0.99, Jobs: runtime.GOMAXPROCS(0)},
	}
	b.ReportAllocs()
	for b.Loop() {
		report, err := Run(context.Background(), w.Requests, study)
		require.NoError(b, err)
		require.Equal(b, 33, *report.Replicas)
		b.ReportMetric(float64(len(report.Evaluations)+len(report.Controllers)-1), "simulations")
	}
}
