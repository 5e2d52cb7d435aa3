package fleet

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/sharedtest"
)

// defaultFleet is n replicas of the embedded profile under sched and ctrl.
func defaultFleet(n int, sched, ctrl string) Config {
	return Config{
		Plant:  plant.NewPlant(nil),
		Groups: []Group{{Replicas: n, Profile: profile.Default(), Scheduler: sched, Controller: ctrl}},
	}
}

// embeddedTrace is the embedded synthetic trace.
func embeddedTrace(t testing.TB) []plant.Request {
	w, err := plant.DefaultTrace(plant.NoElapsedLimit)
	require.NoError(t, err)
	return w.Requests
}

// lockStepped hides a router's StateFree, forcing lock-step stepping.
type lockStepped struct{ Router }

// bits renders v so that two values render alike exactly when they are
// equal bit for bit, NaN included.
func bits(v any) string { return fmt.Sprintf("%+v", v) }

// requireSameFleet requires two fleet results to be equal bit for bit.
func requireSameFleet(t *testing.T, want, got *Result) {
	t.Helper()
	require.Equal(t, len(want.Replicas), len(got.Replicas))
	for k := range want.Replicas {
		w, g := want.Replicas[k], got.Replicas[k]
		require.Equal(t, bits(*w.Result), bits(*g.Result), "replica %d", k)
		require.Equal(t, w.Totals, g.Totals, "replica %d", k)
		require.Equal(t, w.RequestsRouted, g.RequestsRouted, "replica %d", k)
	}
	require.Equal(t, want.Assignment, got.Assignment)
	require.Equal(t, bits(want.Requests), bits(got.Requests))
	require.Equal(t, want.Steps, got.Steps)
	require.Equal(t, want.PowerW, got.PowerW)
	require.Equal(t, want.Queued, got.Queued)
	require.Equal(t, bits(want.Metrics), bits(got.Metrics))
}

func TestRoundRobinReplicaIsSimulateOnItsSubList(t *testing.T) {
	requests := embeddedTrace(t)
	for _, n := range []int{1, 2, 3, 7} {
		cfg := defaultFleet(n, "chunked", "reactive")
		cfg.Options = plant.Options{Stride: 5}
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		for k := range n {
			var sub []plant.Request
			for i := k; i < len(requests); i += n {
				sub = append(sub, requests[i])
			}
			p := plant.NewPlant(profile.Default())
			want, err := plant.Simulate(sub, p, plant.ChunkedPrefill{}, plant.Reactive{}, cfg.Options)
			require.NoError(t, err)
			require.Equal(t, bits(want.Requests), bits(replicaRecords(res, k)))
			want.Requests = nil
			require.Equal(t, bits(*want), bits(*res.Replicas[k].Result), "replica %d of %d", k, n)
			require.Equal(t, len(sub), res.Replicas[k].RequestsRouted)
		}
	}
}

// TestLockStepEqualsParallel proves the lock-step engine: round-robin run
// in lock-step (the router's StateFree hidden) gives the parallel path's
// result bit for bit, replicas and fleet, on the whole code trace.
func TestLockStepEqualsParallel(t *testing.T) {
	requests := loadCodeTrace(t, sharedtest.CodeTrace(t), 0)
	prof, err := profile.Load(sharedtest.Reference(t, "data", "l4_proxy", "l4_profile.csv"))
	require.NoError(t, err)
	for _, tt := range []struct {
		n           int
		sched, ctrl string
		opt         plant.Options
	}{
		{2, "chunked", "max", plant.Options{Summary: true}},
		{5, "static", "reactive", plant.Options{Stride: 50}},
		{16, "continuous", "sampled-reactive:1.0", plant.Options{Summary: true}},
		{16, "chunked", "reactive", plant.Options{Stride: 1}},
		{64, "chunked", "fixed:660", plant.Options{Summary: true}},
		{200, "static", "max", plant.Options{Stride: 10}},
	} {
		t.Run(fmt.Sprintf("%d_%s_%s", tt.n, tt.sched, tt.ctrl), func(t *testing.T) {
			cfg := Config{
				Plant:   plant.NewPlant(nil),
				Groups:  []Group{{Replicas: tt.n, Profile: prof, Scheduler: tt.sched, Controller: tt.ctrl}},
				Options: tt.opt,
				Jobs:    3,
			}
			parallel, err := Simulate(requests, cfg)
			require.NoError(t, err)
			cfg.Router = lockStepped{&RoundRobin{}}
			lockStep, err := Simulate(requests, cfg)
			require.NoError(t, err)
			requireSameFleet(t, parallel, lockStep)
		})
	}
}

func TestJobsDoNotChangeTheResult(t *testing.T) {
	requests := embeddedTrace(t)
	cfg := defaultFleet(6, "chunked", "reactive")
	var first *Result
	for _, jobs := range []int{1, 2, 6} {
		cfg.Jobs = jobs
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		if first == nil {
			first = res
			continue
		}
		requireSameFleet(t, first, res)
	}
}

// TestOneReplicaFleetIsSimulate: the fleet metrics of one replica are the
// replica's own, whichever engine runs it.
func TestOneReplicaFleetIsSimulate(t *testing.T) {
	requests := embeddedTrace(t)
	p := plant.NewPlant(profile.Default())
	want, err := plant.Simulate(requests, p, plant.ContinuousBatch{}, plant.Reactive{}, plant.Options{Summary: true})
	require.NoError(t, err)
	for _, router := range []Router{&RoundRobin{}, LeastTokens{}} {
		cfg := defaultFleet(1, "continuous", "reactive")
		cfg.Router = router
		cfg.Summary = true
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		assert.Equal(t, bits(want.Metrics), bits(res.Metrics), router.Name())
		assert.Equal(t, want.Steps, res.Steps)
		assert.Len(t, res.PowerW, res.Steps)
		assert.Equal(t, want.WorkloadChecksum, res.WorkloadChecksum)
	}
}

// TestFleetMetricsDefinitions checks the fleet metrics against their
// definitions, recomputed from the replicas and the per-step series.
func TestFleetMetricsDefinitions(t *testing.T) {
	requests := embeddedTrace(t)
	cfg := defaultFleet(4, "chunked", "reactive")
	cfg.Router = LeastOutstanding{}
	cfg.Stride = 1
	res, err := Simulate(requests, cfg)
	require.NoError(t, err)
	energy, tokens, duration := 0.0, 0, 0.0
	peakTemp, peakKV := 0.0, 0.0
	active, stalled := 0, 0
	power := make([]float64, res.Steps)
	queued := make([]int, res.Steps)
	for _, r := range res.Replicas {
		energy += r.Result.Metrics.EnergyJ
		duration = math.Max(duration, r.Totals.DurationS)
		peakTemp = math.Max(peakTemp, r.Result.Metrics.PeakTemperatureC)
		peakKV = math.Max(peakKV, r.Result.Metrics.PeakKVTokens)
		active += r.Totals.ActiveSteps
		stalled += r.Totals.StalledSteps
		for i, w := range r.Result.PowerW {
			power[i] += w
			queued[i] += r.Result.PrefillQueue[i] + r.Result.DecodeActive[i]
		}
	}
	for _, rec := range res.Requests {
		if !math.IsNaN(rec.CompletionTimeS) {
			tokens += rec.OutputTokens
		}
	}
	m := res.Metrics
	assert.Equal(t, energy, m.EnergyJ)
	assert.Equal(t, energy/float64(tokens), m.EnergyPerOutputTokenJ)
	assert.Equal(t, float64(tokens)/duration, m.OutputThroughputTokensPerS)
	assert.Equal(t, peakTemp, m.PeakTemperatureC)
	assert.Equal(t, peakKV, m.PeakKVTokens)
	assert.Equal(t, float64(stalled)/float64(active), m.DecodeStallFraction)
	assert.Equal(t, queued, res.Queued)
	peakPower, peakQueued := 0.0, 0
	for i := range power {
		assert.InDelta(t, power[i], res.PowerW[i], 1e-9*power[i], "step %d", i)
		peakPower = math.Max(peakPower, res.PowerW[i])
		peakQueued = max(peakQueued, queued[i])
	}
	assert.Equal(t, peakPower, m.PeakPowerW)
	assert.Equal(t, float64(peakQueued), m.PeakQueuedRequests)
	// The request metrics are the reference's over every record.
	judge := plant.SLO{}.OrProfile(profile.Default())
	single, slo := plant.RecordMetrics(res.Requests, cfg.Plant.ReportingHorizonS, func(int) plant.SLO { return judge }, judge, 1)
	met := 0
	for i := range res.Requests {
		if judge.Met(&res.Requests[i]) {
			met++
		}
	}
	assert.Equal(t, met, slo.RequestsMeetingSLO)
	assert.Equal(t, met, res.SLO.RequestsMeetingSLO)
	assert.Equal(t, slo.Attainment, res.SLO.Attainment)
	assert.Equal(t, slo.TTFTS, res.SLO.TTFTS)
	assert.Equal(t, single.P95TTFTS, m.P95TTFTS)
	assert.Equal(t, single.MeanLatencyS, m.MeanLatencyS)
	assert.Equal(t, single.TTFTViolationRate, m.TTFTViolationRate)
	assert.Equal(t, single.UnfinishedRequestsAtEnd, m.UnfinishedRequestsAtEnd)
}

// TestEachRequestIsJudgedByItsReplicasSLOs: in a fleet of two profiles
// that differ only in their SLOs, the fleet's violation rates count each
// request against the SLO of the profile that served it.
func TestEachRequestIsJudgedByItsReplicasSLOs(t *testing.T) {
	requests := embeddedTrace(t)
	strict := *profile.Default()
	strict.BaselineTTFTS /= 4
	strict.BaselineTPOTS /= 4
	cfg := Config{Plant: plant.NewPlant(nil), Groups: []Group{
		{Name: "lenient", Replicas: 1, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"},
		{Name: "strict", Replicas: 2, Profile: &strict, Scheduler: "chunked", Controller: "max"},
	}}
	res, err := Simulate(requests, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"lenient", "strict", "strict"}, []string{res.Replicas[0].GroupName, res.Replicas[1].GroupName, res.Replicas[2].GroupName})
	completed, ttftLate, tpotLate, met := 0, 0, 0, 0
	for i, rec := range res.Requests {
		if math.IsNaN(rec.CompletionTimeS) {
			continue
		}
		prof := profile.Default()
		if res.Assignment[i] > 0 {
			prof = &strict
		}
		if judge := (plant.SLO{}).OrProfile(prof); judge.Met(&rec) {
			met++
		}
		completed++
		if rec.FirstTokenTimeS-rec.ArrivalTimeS > prof.TTFTSLOSeconds() {
			ttftLate++
		}
		if (rec.CompletionTimeS-rec.FirstTokenTimeS)/float64(max(1, rec.OutputTokens-1)) > prof.TPOTSLOSeconds() {
			tpotLate++
		}
	}
	assert.Equal(t, float64(ttftLate)/float64(completed), res.Metrics.TTFTViolationRate)
	assert.Equal(t, float64(tpotLate)/float64(completed), res.Metrics.TPOTViolationRate)
	assert.NotEqual(t, res.Replicas[0].Result.Metrics.TTFTViolationRate, res.Metrics.TTFTViolationRate)
	// The slo block too: each request met or missed its replica's
	// objectives, which differ, so the block names none.
	replicasMet := 0
	for _, r := range res.Replicas {
		replicasMet += r.Result.SLO.RequestsMeetingSLO
	}
	assert.Equal(t, met, res.SLO.RequestsMeetingSLO)
	assert.Equal(t, replicasMet, res.SLO.RequestsMeetingSLO)
	assert.Equal(t, float64(met)/float64(len(requests)), res.SLO.Attainment)
	assert.True(t, math.IsNaN(res.SLO.TTFTSLOSeconds) && math.IsNaN(res.SLO.TPOTSLOSeconds), "objectives differ: none named")
}

// TestReplicaWithoutRequestsHasNoStep: more replicas than requests.
func TestReplicaWithoutRequestsHasNoStep(t *testing.T) {
	requests := embeddedTrace(t)[:3]
	for _, router := range []Router{&RoundRobin{}, lockStepped{&RoundRobin{}}} {
		cfg := defaultFleet(5, "chunked", "reactive")
		cfg.Router = router
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		for k, r := range res.Replicas {
			if k < 3 {
				assert.Equal(t, 1, r.RequestsRouted)
				assert.Positive(t, r.Totals.Steps)
				continue
			}
			assert.Zero(t, r.RequestsRouted)
			assert.Zero(t, r.Totals.Steps)
			assert.Zero(t, r.Result.Len())
			m := r.Result.Metrics
			assert.Zero(t, m.CompletedFraction)
			assert.True(t, math.IsNaN(m.MeanTTFTS))
			assert.Zero(t, m.EnergyJ)
			assert.Equal(t, cfg.Plant.AmbientTemperatureC, m.PeakTemperatureC)
		}
		assert.Equal(t, 1.0, res.Metrics.CompletedFraction)
	}
}

// recordingRouter routes like inner and keeps the states it was shown.
type recordingRouter struct {
	Router
	seen [][]ReplicaState
}

func (r *recordingRouter) Route(req Arrival, replicas []ReplicaState) int {
	r.seen = append(r.seen, append([]ReplicaState(nil), replicas...))
	return r.Router.Route(req, replicas)
}

// TestRoutersSeeTheStepStartStateWithEarlierRoutes: requests arriving in
// the same step see the ones routed before them.
func TestRoutersSeeTheStepStartStateWithEarlierRoutes(t *testing.T) {
	requests := []plant.Request{
		{ID: 0, ArrivalTimeS: 0, PromptTokens: 300, OutputTokens: 50},
		{ID: 1, ArrivalTimeS: 0, PromptTokens: 100, OutputTokens: 50},
		{ID: 2, ArrivalTimeS: 0, PromptTokens: 100, OutputTokens: 50},
		{ID: 3, ArrivalTimeS: 0.05, PromptTokens: 100, OutputTokens: 50},
		{ID: 4, ArrivalTimeS: 5, PromptTokens: 100, OutputTokens: 50},
	}
	tests := []struct {
		router Router
		want   []int
	}{
		// Requests 0-2 arrive in step 0, each seeing the ones before it
		// queued. Request 3 arrives in step 1: every replica has one
		// request (a tie), but replica 0 holds the most tokens.
		{LeastOutstanding{}, []int{0, 1, 2, 0, 0}},
		{LeastTokens{}, []int{0, 1, 2, 1, 0}},
	}
	for _, tt := range tests {
		rec := &recordingRouter{Router: tt.router}
		cfg := defaultFleet(3, "chunked", "max")
		cfg.Router = rec
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		assert.Equal(t, tt.want, res.Assignment, tt.router.Name())
		// Request 2 sees requests 0 and 1 queued on replicas 0 and 1.
		assert.Equal(t, 1, rec.seen[2][0].QueuedRequests)
		assert.Equal(t, 300.0, rec.seen[2][0].QueuedPromptTokens)
		assert.Equal(t, 1, rec.seen[2][1].QueuedRequests)
		assert.Equal(t, 0, rec.seen[2][2].QueuedRequests)
		// Request 4 sees every replica idle again.
		for k := range 3 {
			assert.Zero(t, rec.seen[4][k].QueuedRequests+rec.seen[4][k].ActiveDecodes)
		}
	}
}

func TestRandomRouterIsSeeded(t *testing.T) {
	requests := embeddedTrace(t)
	route := func(seed uint64) []int {
		cfg := defaultFleet(4, "chunked", "max")
		cfg.Router = NewRandom(seed)
		cfg.Summary = true
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		return res.Assignment
	}
	first := route(1)
	assert.Equal(t, first, route(1))
	assert.NotEqual(t, first, route(2))
	counts := make([]int, 4)
	for _, k := range first {
		counts[k]++
	}
	for _, c := range counts {
		assert.InDelta(t, len(requests)/4, c, float64(len(requests))/10, "roughly uniform: %v", counts)
	}
}

func TestNewRouter(t *testing.T) {
	for _, name := range RouterNames {
		r, err := NewRouter(name, 1)
		require.NoError(t, err)
		assert.Equal(t, name, r.Name())
	}
	_, err := NewRouter("fastest", 1)
	assert.EqualError(t, err, `unknown router "fastest": expected round-robin, random, least-outstanding, least-tokens, prefix-aware, session`)
	assert.True(t, IsStateFree(&RoundRobin{}))
	assert.True(t, IsStateFree(NewRandom(1)))
	assert.False(t, IsStateFree(LeastOutstanding{}))
	assert.False(t, IsStateFree(lockStepped{&RoundRobin{}}))
}

// badRouter sends every request to replica n.
type badRouter struct{ n int }

func (badRouter) Name() string                        { return "bad" }
func (b badRouter) Route(Arrival, []ReplicaState) int { return b.n }
func (badRouter) StateFree() bool                     { return false }

func TestSimulateRejects(t *testing.T) {
	requests := embeddedTrace(t)[:10]
	cfg := defaultFleet(2, "chunked", "max")
	cfg.Router = badRouter{2}
	_, err := Simulate(requests, cfg)
	assert.EqualError(t, err, "router bad sent request 0 to replica 2 of 2")

	cfg = defaultFleet(0, "chunked", "max")
	_, err = Simulate(requests, cfg)
	assert.EqualError(t, err, "group 0: replicas 0: expected 1 to 4096")
	cfg = defaultFleet(MaxReplicas+1, "chunked", "max")
	_, err = Simulate(requests, cfg)
	assert.EqualError(t, err, "group 0: replicas 4097: expected 1 to 4096")
	_, err = Simulate(requests, Config{Plant: plant.NewPlant(nil)})
	assert.EqualError(t, err, "fleet has no group")
	cfg = defaultFleet(2, "fifo", "max")
	_, err = Simulate(requests, cfg)
	assert.ErrorContains(t, err, `group 0: unknown scheduler "fifo"`)
	_, err = Simulate(nil, defaultFleet(2, "chunked", "max"))
	assert.EqualError(t, err, "workload must contain at least one request")
}

// TestLockStepAllocatesNothingPerStep guards the fleet step: routing,
// stepping every replica and adding the sums.
func TestLockStepAllocatesNothingPerStep(t *testing.T) {
	requests := embeddedTrace(t)
	for _, router := range []Router{LeastOutstanding{}, LeastTokens{}} {
		cfg := defaultFleet(8, "chunked", "reactive")
		cfg.Summary = true
		specs := []replicaSpec{}
		for range 8 {
			p := cfg.Plant
			p.Profile = cfg.Groups[0].Profile
			specs = append(specs, replicaSpec{plant: p})
		}
		e := newEngine(context.Background(), requests, cfg, specs, router)
		ls, err := e.newLockStep()
		require.NoError(t, err)
		for range 50 { // warm up: first arrivals
			_, err := ls.advance()
			require.NoError(t, err)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			done, err := ls.advance()
			require.NoError(t, err)
			require.False(t, done)
		})
		assert.Zerof(t, allocs, "%s: allocations per fleet step", router.Name())
	}
}
