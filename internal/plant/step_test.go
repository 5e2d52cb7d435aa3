package plant

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// sameResult requires two results to be equal bit for bit (NaN included).
func sameResult(t *testing.T, want, got *Result, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, describeResult(want), describeResult(got), msgAndArgs...)
}

// describeResult is r formatted with %+v, its records' preemption counts
// by value (not by their addresses).
func describeResult(r *Result) string {
	c := *r
	c.Requests = nil
	var b strings.Builder
	fmt.Fprintf(&b, "%+v", c)
	for _, q := range r.Requests {
		preemptions, recomputed := q.Preemptions, q.RecomputedTokens
		q.Preemptions, q.RecomputedTokens = nil, nil
		fmt.Fprintf(&b, "\n%+v", q)
		if preemptions != nil {
			fmt.Fprintf(&b, " preemptions %d recomputed %v", *preemptions, *recomputed)
		}
	}
	return b.String()
}

// stepperPolicies are the scheduler and controller combinations the
// stepper tests run.
var stepperPolicies = []struct{ sched, ctrl string }{
	{"chunked", "reactive"}, {"static", "max"}, {"continuous", "sampled-reactive:0.5"}, {"chunked", "fixed:900"},
}

func newTestStepper(t *testing.T, p Plant, sched, ctrl string, opt Options) *Stepper {
	t.Helper()
	s, err := NewScheduler(sched)
	require.NoError(t, err)
	c, err := NewController(ctrl)
	require.NoError(t, err)
	st, err := NewStepper(p, s, c, opt, 0)
	require.NoError(t, err)
	return st
}

func simulateWith(t *testing.T, requests []Request, p Plant, sched, ctrl string, opt Options) *Result {
	t.Helper()
	s, err := NewScheduler(sched)
	require.NoError(t, err)
	c, err := NewController(ctrl)
	require.NoError(t, err)
	res, err := Simulate(requests, p, s, c, opt)
	require.NoError(t, err)
	return res
}

// sparseWorkload spreads the small workload's first requests out so that
// the plant goes idle between them.
func sparseWorkload(t *testing.T) []Request {
	requests := smallWorkload(t)[:40]
	for i := range requests {
		requests[i].ArrivalTimeS = float64(i/4) * 30.5
	}
	return requests
}

func TestStepperWithEveryRequestUpFrontIsSimulate(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	for _, pol := range stepperPolicies {
		for _, opt := range []Options{{Stride: 7}, {Summary: true}} {
			want := simulateWith(t, requests, p, pol.sched, pol.ctrl, opt)
			st := newTestStepper(t, p, pol.sched, pol.ctrl, opt)
			for _, r := range requests {
				require.NoError(t, st.Add(r))
			}
			for {
				done, err := st.Step()
				require.NoError(t, err)
				if done {
					break
				}
			}
			got, totals := st.Result()
			sameResult(t, want, got, "%v %+v", pol, opt)
			assert.Equal(t, want.Steps, totals.Steps)
		}
	}
}

// TestStepperAddingAtArrivalIsSimulate adds each request just before the
// step it arrives in and keeps stepping an idle stepper until the last
// arrival, then some more: Result rolls the idle tail back.
func TestStepperAddingAtArrivalIsSimulate(t *testing.T) {
	p := NewPlant(profile.Default())
	for _, requests := range [][]Request{smallWorkload(t), sparseWorkload(t)} {
		for _, pol := range stepperPolicies {
			want := simulateWith(t, requests, p, pol.sched, pol.ctrl, Options{Stride: 3})
			st := newTestStepper(t, p, pol.sched, pol.ctrl, Options{Stride: 3})
			idleSteps := 0
			stepAddingAtArrival(t, st, requests, p.TimeStepS, func(done bool, added int) bool {
				if done && added == len(requests) {
					idleSteps++ // step on past the end: the tail is rolled back
				}
				return idleSteps > 25
			})
			got, _ := st.Result()
			sameResult(t, want, got, "%v", pol)
		}
	}
}

// stepAddingAtArrival adds each request to st just before the step it
// arrives in (steps of dtS from time 0) and steps st until stop, told
// whether the step was done and how many requests were added, says so; it
// returns how many were added.
func stepAddingAtArrival(t *testing.T, st *Stepper, requests []Request, dtS float64, stop func(done bool, added int) bool) int {
	t.Helper()
	next, timeS := 0, 0.0
	for {
		for next < len(requests) && requests[next].ArrivalTimeS <= timeS+TimeEpsilonS {
			require.NoError(t, st.Add(requests[next]))
			next++
		}
		done, err := st.Step()
		require.NoError(t, err)
		timeS += dtS
		if stop(done, next) {
			return next
		}
	}
}

func TestStepperWithoutRequestsHasNoStep(t *testing.T) {
	p := NewPlant(profile.Default())
	st := newTestStepper(t, p, "chunked", "max", Options{})
	for range 10 {
		done, err := st.Step()
		require.NoError(t, err)
		assert.True(t, done)
	}
	res, totals := st.Result()
	assert.Equal(t, Totals{}, totals)
	assert.Zero(t, res.Steps)
	assert.Zero(t, res.Len())
	assert.Empty(t, res.Requests)
	m := res.Metrics
	assert.Zero(t, m.CompletedFraction)
	assert.True(t, math.IsNaN(m.MeanTTFTS) && math.IsNaN(m.P95TPOTS) && math.IsNaN(m.TTFTViolationRate))
	assert.Zero(t, m.EnergyJ)
	assert.Zero(t, m.OutputThroughputTokensPerS)
	assert.Zero(t, m.PeakPowerW)
	assert.Equal(t, p.AmbientTemperatureC, m.PeakTemperatureC)
	assert.Equal(t, WorkloadChecksum(nil), res.WorkloadChecksum)
}

func TestStepperAddRejectsLateOrUnsortedRequests(t *testing.T) {
	p := NewPlant(profile.Default())
	st := newTestStepper(t, p, "chunked", "max", Options{})
	require.NoError(t, st.Add(Request{ID: 0, ArrivalTimeS: 0, PromptTokens: 10, OutputTokens: 5}))
	require.EqualError(t, st.Add(Request{ID: 1, ArrivalTimeS: 0, PromptTokens: 0, OutputTokens: 5}), "request 1: token counts must be positive")
	for range 3 {
		_, err := st.Step()
		require.NoError(t, err)
	}
	// The last step started at 0.2 s: a request arriving by then is late.
	require.ErrorContains(t, st.Add(Request{ID: 2, ArrivalTimeS: 0.2, PromptTokens: 1, OutputTokens: 1}), "request 2 arrives at 0.2 s, before the next step")
	require.NoError(t, st.Add(Request{ID: 3, ArrivalTimeS: 0.25, PromptTokens: 1, OutputTokens: 1}))
	require.EqualError(t, st.Add(Request{ID: 4, ArrivalTimeS: 0.24, PromptTokens: 1, OutputTokens: 1}), "workload must be sorted by arrival_time_s")
	assert.Equal(t, 2, st.Requests())
}

func TestStepperLoadIsTheObservedState(t *testing.T) {
	p := NewPlant(profile.Default())
	st := newTestStepper(t, p, "chunked", "max", Options{})
	initial := st.Load()
	assert.Equal(t, Load{TemperatureC: p.AmbientTemperatureC, ClockMHz: p.Profile.MinRealizedClockMHz()}, initial)
	requests := smallWorkload(t)
	added := 0
	for step := 0; step < 300; step++ {
		timeS := float64(step) * p.TimeStepS
		for added < len(requests) && requests[added].ArrivalTimeS <= timeS+TimeEpsilonS {
			require.NoError(t, st.Add(requests[added]))
			added++
		}
		// Before the step: every added request has arrived; the load is
		// what the step's observation will hold.
		load := st.Load()
		sim := st.sim
		for sim.pending < len(sim.records) {
			sim.queuedPrompt += sim.records[sim.pending].PromptTokens
			sim.pending++
		}
		var obs Observation
		sim.observe(&obs)
		assert.Equal(t, obs.PrefillQueue, load.QueuedRequests)
		assert.Equal(t, obs.DecodeActive, load.ActiveDecodes)
		assert.Equal(t, obs.KVTokens, load.KVTokens)
		assert.Equal(t, obs.PrefillRemainingTokens, load.QueuedPromptTokens)
		assert.Equal(t, obs.TemperatureC, load.TemperatureC)
		assert.Equal(t, obs.PreviousClockMHz, load.ClockMHz)
		_, err := st.Step()
		require.NoError(t, err)
	}
}

// queuedPromptAfresh is Load's QueuedPromptTokens computed without the
// sum remembered from the last call.
func queuedPromptAfresh(st *Stepper) float64 {
	st.routed.valid = false
	return st.Load().QueuedPromptTokens
}

func TestStepperLoadBetweenStepsAddsOnlyTheNewRequests(t *testing.T) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 2
	requests := smallWorkload(t)
	for _, expire := range []bool{false, true} {
		st := newTestStepper(t, p, "chunked", "max", Options{})
		added := 0
		for step := 0; added < len(requests); step++ {
			// Between two steps, requests are added one at a time and the
			// load asked after each: the same sum, to the bit, as one
			// computed afresh. With expire, the run passes
			// MaxSimulationTimeS and every later request is added at once
			// (what a fleet's router does when the run ends early).
			timeS := float64(step) * p.TimeStepS
			for added < len(requests) && (requests[added].ArrivalTimeS <= timeS+TimeEpsilonS || expire && st.Expired()) {
				require.NoError(t, st.Add(requests[added]))
				added++
				got := st.Load().QueuedPromptTokens
				require.Equal(t, math.Float64bits(queuedPromptAfresh(st)), math.Float64bits(got), "step %d, %d added", step, added)
			}
			_, err := st.Step()
			require.NoError(t, err)
		}
		if expire {
			assert.True(t, st.Expired())
		}
	}
}

// BenchmarkStepperLoadAfterExpiry adds requests to a run that has passed
// MaxSimulationTimeS, asking its load after each, as a fleet's router does
// with the requests left when the run ends early: the cost per request is
// constant (it grew with the requests added before the sum was remembered).
func BenchmarkStepperLoadAfterExpiry(b *testing.B) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 1
	s, _ := NewScheduler("chunked")
	c, _ := NewController("max")
	st, err := NewStepper(p, s, c, Options{Summary: true}, 0)
	require.NoError(b, err)
	for !st.Expired() {
		_, err := st.Step()
		require.NoError(b, err)
	}
	b.ReportAllocs()
	for i := range b.N {
		require.NoError(b, st.Add(Request{ID: i, ArrivalTimeS: 10 + float64(i), PromptTokens: 100 + i%7, OutputTokens: 10}))
		_ = st.Load()
	}
}

func TestStepperStepAllocatesNothing(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	for _, pol := range stepperPolicies {
		st := newTestStepper(t, p, pol.sched, pol.ctrl, Options{Stride: 1})
		for _, r := range requests {
			require.NoError(t, st.Add(r))
		}
		allocs := testing.AllocsPerRun(2000, func() {
			done, err := st.Step()
			require.NoError(t, err)
			require.False(t, done)
			_ = st.Last()
			_ = st.Load()
		})
		assert.Zerof(t, allocs, "%v: allocations per step", pol)
	}
}

// TestWaitingLongerThan: on an overloaded GPU under both service models,
// at every step the count is that of the queued requests, the head
// excepted, whose arrival is more than waitS before the next step's start,
// and each such request's first token comes later than waitS after its
// arrival (so it misses a TTFT objective of waitS).
func TestWaitingLongerThan(t *testing.T) {
	for name, service := range map[string]ServiceModel{ServiceReference: {}, ServiceBatched: batchedService(t)} {
		t.Run(name, func(t *testing.T) {
			p := NewPlant(profile.Default())
			p.MaxSimulationTimeS = 600
			s, _ := NewScheduler("chunked")
			c, _ := NewController("max")
			st, err := NewStepper(p, s, c, Options{Service: service}, 0)
			require.NoError(t, err)
			for i := range 400 { // 2 a second of 3000-token prompts: far past one GPU
				require.NoError(t, st.Add(Request{ID: i, ArrivalTimeS: float64(i) / 2, PromptTokens: 3000, OutputTokens: 20}))
			}
			const waitS = 5.0
			doomed := map[int]bool{}
			seen := 0
			for !st.Expired() {
				n := st.WaitingLongerThan(waitS)
				sim := st.sim
				want := 0
				for i := sim.head + 1; i < sim.pending; i++ {
					if sim.records[i].ArrivalTimeS < sim.timeS-waitS {
						want++
						doomed[i] = true
					}
				}
				require.Equal(t, want, n, "step %d", sim.step)
				seen = max(seen, n)
				done, err := st.Step()
				require.NoError(t, err)
				if done {
					break
				}
			}
			require.Positive(t, seen, "the queue outgrew the objective")
			st.Result()
			for i := range doomed {
				r := st.Records()[i]
				require.False(t, r.FirstTokenTimeS-r.ArrivalTimeS <= waitS, "request %d", i)
			}
		})
	}
}
