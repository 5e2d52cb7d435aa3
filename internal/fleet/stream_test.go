package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// heldSource is a workload held whole, read as a stream.
type heldSource struct{ w plant.Workload }

func (s heldSource) Read(emit func(plant.Request) error) (plant.Workload, error) {
	for _, r := range s.w.Requests {
		if err := emit(r); err != nil {
			return plant.Workload{}, err
		}
	}
	identity := s.w
	identity.Requests = nil
	return identity, nil
}

func (s heldSource) Estimate() int { return len(s.w.Requests) }

// codeLike is a seeded code-like workload of about rate*durationS
// requests.
func codeLike(seed uint64, rate, durationS float64) plant.Workload {
	trace := plant.CodeTraceLike(seed, durationS)
	trace.MeanRequestsPerS = rate
	return plant.Workload{Source: "synthetic", SHA256: "0123", Requests: trace.Requests()}
}

// documents runs cfg on w held whole and streamed, and returns both
// reports as JSON documents.
func documents(t *testing.T, w plant.Workload, cfg RunConfig, router string) (held, streamed string) {
	t.Helper()
	run := func(stream bool) string {
		r, err := NewRouter(router, 7)
		require.NoError(t, err)
		cfg.Router = r
		var rep *Report
		if stream {
			rep, err = RunStreamContext(context.Background(), heldSource{w}, cfg)
		} else {
			rep, err = RunContext(context.Background(), w, cfg)
		}
		require.NoError(t, err)
		// As simulate writes it: a replica without a request has null
		// means, where encoding/json refuses the NaN.
		var doc strings.Builder
		require.NoError(t, jsonout.Stream(&doc, rep))
		return doc.String()
	}
	return run(false), run(true)
}

func TestStreamedRunWritesTheHeldRunsDocument(t *testing.T) {
	prof := profile.Default()
	twoGroups := []Group{
		{Name: "a", Replicas: 2, Profile: prof, Scheduler: "chunked", Controller: "reactive"},
		{Name: "b", Replicas: 1, Profile: prof, Scheduler: "continuous", Controller: "max"},
	}
	small := codeLike(3, 2.57, 1800)
	cut := plant.NewPlant(nil)
	cut.MaxSimulationTimeS = 900 // arrivals after the run: unfinished, read by Drain
	long := plant.NewPlant(nil)
	long.MaxSimulationTimeS = 1e5 // every request arrives within the run
	cases := []struct {
		name      string
		w         plant.Workload
		plant     plant.Plant
		groups    []Group
		normalize float64
		jobs      []int
	}{
		{"two groups", small, plant.NewPlant(nil), twoGroups, 0, []int{1, 2, 3}},
		{"two groups normalized", small, plant.NewPlant(nil), twoGroups, 0.7, []int{1, 2, 3}},
		{"cut at max-sim-time", small, cut, twoGroups, 0.9, []int{1, 3}},
		{"mpc (keeps every record)", codeLike(4, 2.57, 300), plant.NewPlant(nil),
			[]Group{{Replicas: 2, Profile: prof, Scheduler: "chunked", Controller: "mpc"}}, 0.7, []int{2}},
		// More than the 65536 records a replica holds at first: the
		// replicas drop the records of completed requests.
		{"records dropped", codeLike(5, 60, 2400), long,
			[]Group{{Replicas: 2, Profile: prof, Scheduler: "chunked", Controller: "reactive"}}, 0.7, []int{1, 2}},
		// More replicas than scannedReplicas: their samples are found
		// through the requests grouped by replica.
		{"many replicas", small, plant.NewPlant(nil),
			[]Group{{Replicas: scannedReplicas + 8, Profile: prof, Scheduler: "chunked", Controller: "reactive"}}, 0.05, []int{2}},
	}
	for _, c := range cases {
		for _, router := range RouterNames {
			if NeedsPrefixCache(router) {
				continue // TestPrefixAware*: it needs the prefix cache
			}
			for _, jobs := range c.jobs {
				t.Run(fmt.Sprintf("%s/%s/jobs=%d", c.name, router, jobs), func(t *testing.T) {
					cfg := RunConfig{
						Config: Config{
							Plant:   c.plant,
							Groups:  c.groups,
							Options: plant.Options{Summary: true},
							Jobs:    jobs,
						},
						Normalize: c.normalize,
						Version:   "test",
					}
					held, streamed := documents(t, c.w, cfg, router)
					require.Equal(t, held, streamed)
				})
			}
		}
	}
}

func TestStreamedRunDropsRecords(t *testing.T) {
	w := codeLike(5, 60, 2400)
	src := heldSource{w}
	ws, err := plant.OpenWorkloadStream(context.Background(), src, 0.8, profile.Default(), 2)
	require.NoError(t, err)
	defer ws.Close()
	cfg := defaultFleet(2, "chunked", "reactive")
	cfg.Plant.MaxSimulationTimeS = 1e5
	cfg.Options = plant.Options{Summary: true}
	res, err := SimulateStream(context.Background(), ws, cfg)
	require.NoError(t, err)
	require.Nil(t, res.Requests)
	require.Nil(t, res.Assignment)
	require.Equal(t, len(w.Requests), res.Replicas[0].RequestsRouted+res.Replicas[1].RequestsRouted)
	require.Greater(t, res.Replicas[0].RequestsRouted, 1<<16)
}

func TestStreamedRunFailsAsTheHeldRun(t *testing.T) {
	unsorted := codeLike(6, 2.57, 600)
	unsorted.Requests[40].ArrivalTimeS = unsorted.Requests[41].ArrivalTimeS + 1
	repeated := codeLike(6, 2.57, 600)
	repeated.Requests[50].ID = repeated.Requests[49].ID
	for _, w := range []plant.Workload{unsorted, repeated} {
		for _, router := range []string{RoundRobinName, LeastTokensName} {
			for _, jobs := range []int{1, 2} {
				r, err := NewRouter(router, 1)
				require.NoError(t, err)
				cfg := RunConfig{Config: Config{Plant: plant.NewPlant(nil), Router: r, Jobs: jobs,
					Groups:  []Group{{Replicas: 3, Profile: profile.Default(), Scheduler: "chunked", Controller: "reactive"}},
					Options: plant.Options{Summary: true}}}
				_, heldErr := RunContext(context.Background(), w, cfg)
				require.Error(t, heldErr)
				_, err = RunStreamContext(context.Background(), heldSource{w}, cfg)
				require.EqualError(t, err, heldErr.Error(), "%s jobs=%d", router, jobs)
			}
		}
	}
}

func TestStreamedRunNeedsSummary(t *testing.T) {
	cfg := RunConfig{Config: defaultFleet(2, "chunked", "reactive")}
	_, err := RunStreamContext(context.Background(), heldSource{codeLike(1, 2.57, 60)}, cfg)
	require.ErrorContains(t, err, "Summary")
}

func TestStreamedRunStops(t *testing.T) {
	for _, router := range []string{RoundRobinName, LeastOutstandingName} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := NewRouter(router, 1)
		require.NoError(t, err)
		cfg := RunConfig{Config: defaultFleet(3, "chunked", "reactive")}
		cfg.Router, cfg.Options = r, plant.Options{Summary: true}
		_, err = RunStreamContext(ctx, heldSource{codeLike(2, 60, 2400)}, cfg)
		require.ErrorIs(t, err, context.Canceled, router)
	}
}

func TestRequestsOfAReplicaEitherWay(t *testing.T) {
	replica := []uint16{3, 0, 3, 1, 1, 0, 3, 2, 0}
	var s samples
	s.replica = replica
	for k := range 5 {
		scanned := slices.Collect(s.requestsOf(k, len(replica), scannedReplicas))
		grouped := slices.Collect(s.requestsOf(k, len(replica), scannedReplicas+1))
		require.Equal(t, scanned, grouped, "replica %d", k)
		for _, i := range scanned {
			require.Equal(t, uint16(k), replica[i])
		}
	}
	require.Equal(t, []int{0, 2, 6}, slices.Collect(s.requestsOf(3, len(replica), scannedReplicas+1)))
}
