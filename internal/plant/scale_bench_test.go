package plant

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"

	"servesim/internal/workload"
)

// stepCostRequests are the workloads of BenchmarkStepCost, each a few
// requests whose run is long: idle, two requests a day apart (almost every
// step idle); decode, one request decoding for a long time (every step
// serves one active request).
var stepCostRequests = map[string][]Request{
	"idle":   {{ID: 0, ArrivalTimeS: 0, PromptTokens: 10, OutputTokens: 2}, {ID: 1, ArrivalTimeS: oneDayS, PromptTokens: 10, OutputTokens: 2}},
	"decode": {{ID: 0, ArrivalTimeS: 0, PromptTokens: 10, OutputTokens: 120_000}},
}

// BenchmarkStepCost is the cost of one step when a step does (almost)
// nothing: the fixed cost of the step loop, in ns/step, under the
// built-in policies and under policies the plant knows nothing about.
func BenchmarkStepCost(b *testing.B) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 2 * oneDayS
	for _, workload := range []string{"idle", "decode"} {
		for _, policy := range []string{"chunked-max", "chunked-reactive", "user"} {
			b.Run(workload+"/"+policy, func(b *testing.B) {
				var s Scheduler = ChunkedPrefill{}
				newController := func() ClockController { return MaxClock{} }
				switch policy {
				case "chunked-reactive":
					newController = func() ClockController { return Reactive{} }
				case "user":
					s = userScheduler{ChunkedPrefill{}}
					newController = func() ClockController { return userController{MaxClock{}} }
				}
				b.ReportAllocs()
				steps := 0
				cpu := processCPUTime()
				for b.Loop() {
					res, err := Simulate(stepCostRequests[workload], p, s, newController(), Options{Summary: true})
					require.NoError(b, err)
					steps += res.Steps
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
				b.ReportMetric(float64((processCPUTime()-cpu).Nanoseconds())/float64(steps), "cpu-ns/step")
			})
		}
	}
}

// userScheduler and userController hide a built-in policy's type from the
// plant, as a policy of a user of the package would.
type (
	userScheduler  struct{ Scheduler }
	userController struct{ ClockController }
)

// Sizes of BenchmarkSimulateScale, in requests: about a day, ten days and
// fifty days of the synthetic week's rate (WeekTraceLike).
var scaleRequests = []int{1_000_000, 10_000_000, 50_000_000}

// syntheticSource streams the first n requests of a synthetic trace, as
// LoadWorkload would read them from its CSV form.
type syntheticSource struct {
	trace workload.SyntheticTrace
	n     int
}

func (s syntheticSource) Read(emit func(Request) error) (Workload, error) {
	var err error
	i, first := 0, int64(-1)
	s.trace.Each(func(at int64, prompt, output int) bool {
		if first < 0 {
			first = at
		}
		err = emit(Request{ID: i, ArrivalTimeS: float64(at-first) / 1e6, PromptTokens: prompt, OutputTokens: output})
		i++
		return err == nil && i < s.n
	})
	return Workload{Source: "synthetic"}, err
}

func (s syntheticSource) Estimate() int { return s.n }

// BenchmarkSimulateScale streams the first n requests of the synthetic
// weeks (RunStream), stretched to 70% load (--normalize 0.7, two passes),
// through one replica with the embedded profile, chunked prefill and the
// maximum clock, summary only: ns/request, ns/step, CPU ns/step and
// B/request (bytes allocated per request, all goroutines). The largest size
// is skipped with -short.
func BenchmarkSimulateScale(b *testing.B) {
	for _, n := range scaleRequests {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			if testing.Short() && n > 10_000_000 {
				b.Skip("skipped with -short: 50 million requests")
			}
			p := NewPlant(profile.Default())
			p.MaxSimulationTimeS = math.MaxFloat64
			cfg := Config{Plant: p, Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: 0.7,
				Options: Options{Summary: true, MaxSteps: math.Inf(1)}}
			week := workload.WeekTraceLike(1)
			week.DurationS = math.Inf(1) // as many weeks as n needs
			src := syntheticSource{trace: week, n: n}
			b.ReportAllocs()
			steps := 0
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := processCPUTime()
			for b.Loop() {
				rep, err := RunStream(src, cfg)
				require.NoError(b, err)
				require.Equal(b, n, rep.Provenance.RequestsLoaded)
				require.Equal(b, 0.0, rep.Metrics.UnfinishedRequestsAtEnd)
				steps += rep.Steps
			}
			cpuNs := float64((processCPUTime() - cpu).Nanoseconds())
			runtime.ReadMemStats(&after)
			perRun := float64(b.N)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/perRun/float64(n), "B/request")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perRun/float64(n), "ns/request")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(cpuNs/float64(steps), "cpu-ns/step")
			b.ReportMetric(float64(steps)/perRun, "steps")
		})
	}
}
