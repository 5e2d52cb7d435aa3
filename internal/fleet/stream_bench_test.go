package fleet

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/workload"
)

// streamRequests are the sizes of BenchmarkFleetStream: about a day and
// ten days of the synthetic week's rate (plant.WeekTraceLike).
var streamRequests = []int{1_000_000, 10_000_000}

// weekSource generates the first n requests of the synthetic weeks as a
// trace file of them would be read.
type weekSource struct{ n int }

func (s weekSource) Read(emit func(plant.Request) error) (plant.Workload, error) {
	week := workload.WeekTraceLike(1)
	week.DurationS = math.Inf(1) // as many weeks as n needs
	var err error
	i, first := 0, int64(-1)
	week.Each(func(at int64, prompt, output int) bool {
		if first < 0 {
			first = at
		}
		err = emit(plant.Request{ID: i, ArrivalTimeS: float64(at-first) / 1e6, PromptTokens: prompt, OutputTokens: output})
		i++
		return err == nil && i < s.n
	})
	return plant.Workload{Source: "synthetic"}, err
}

func (s weekSource) Estimate() int { return s.n }

// BenchmarkFleetStream streams the first n requests of the synthetic
// weeks (RunStreamContext), stretched to 70% of the capacity of 8 replicas
// of the embedded profile (chunked, maximum clock), summary only, with a
// state-free router (replicas in parallel) and a lock-step one:
// ns/request and B/request (bytes allocated per request, all goroutines).
// The ten-day size is skipped with -short.
func BenchmarkFleetStream(b *testing.B) {
	for _, n := range streamRequests {
		for _, router := range []string{RoundRobinName, LeastOutstandingName} {
			b.Run(fmt.Sprintf("requests=%d/%s", n, router), func(b *testing.B) {
				if testing.Short() && n > 1_000_000 {
					b.Skip("skipped with -short: 10 million requests")
				}
				p := plant.NewPlant(nil)
				p.MaxSimulationTimeS = math.MaxFloat64
				r, err := NewRouter(router, DefaultRouterSeed)
				require.NoError(b, err)
				cfg := RunConfig{Config: Config{
					Plant:   p,
					Groups:  []Group{{Replicas: 8, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"}},
					Router:  r,
					Options: plant.Options{Summary: true, MaxSteps: math.Inf(1)},
				}, Normalize: 0.7}
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					rep, err := RunStreamContext(context.Background(), weekSource{n}, cfg)
					require.NoError(b, err)
					require.Equal(b, n, rep.Provenance.RequestsLoaded)
					require.Zero(b, rep.Metrics.UnfinishedRequestsAtEnd)
				}
				runtime.ReadMemStats(&after)
				perRun := float64(b.N)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/perRun/float64(n), "B/request")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perRun/float64(n), "ns/request")
			})
		}
	}
}
