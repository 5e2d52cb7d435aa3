package plant

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// stepUntilDone steps st until every request added has completed.
func stepUntilDone(t *testing.T, st *Stepper) {
	t.Helper()
	for range 10_000 {
		done, err := st.Step()
		require.NoError(t, err)
		if done {
			return
		}
	}
	t.Fatal("the stepper never finished")
}

// TestAddPrefilledReference: under the reference model (the default
// profile decodes 24 tokens a 0.1 s step at the maximum clock) a prefilled
// request arriving at 0.25 s holds its KV (prompt and first token) outside
// the running requests until the step of 0.3 s takes it, then decodes its
// other 10 tokens in that step: no prefill, its first token its arrival.
func TestAddPrefilledReference(t *testing.T) {
	st := newTestStepper(t, NewPlant(profile.Default()), "continuous", "max", Options{})
	require.NoError(t, st.AddPrefilled(Request{ID: 7, ArrivalTimeS: 0.25, PromptTokens: 100, OutputTokens: 11}))
	assert.Equal(t, 101.0, st.HeldKV())
	assert.Equal(t, DefaultKVCapacityTokens-101, st.FreeKV())
	for range 3 {
		_, err := st.Step()
		require.NoError(t, err)
	}
	assert.Equal(t, 101.0, st.HeldKV(), "not taken before its arrival")
	_, err := st.Step() // the step of 0.3 s
	require.NoError(t, err)
	assert.Zero(t, st.HeldKV())
	res, _ := st.Result()
	rec := res.Requests[0]
	assert.Equal(t, 0.25, rec.ArrivalTimeS)
	assert.Equal(t, 0.25, rec.FirstTokenTimeS)
	assert.InDelta(t, 0.3, rec.PrefillStartS, 1e-12)
	assert.InDelta(t, 0.4, rec.CompletionTimeS, 1e-12)
	assert.Zero(t, res.Trajectory.CumulativePrefillTokens[len(res.Trajectory.CumulativePrefillTokens)-1], "nothing prefilled")
	assert.Equal(t, 10.0, res.Trajectory.CumulativeDecodeTokens[len(res.Trajectory.CumulativeDecodeTokens)-1])
}

// TestAddPrefilledBatched: under the batched model a prefilled request
// joins the running ones at its arrival (the next iteration's start) and
// decodes its other tokens; its blocks are the prompt's.
func TestAddPrefilledBatched(t *testing.T) {
	svc := batchedService(t)
	st := newTestStepper(t, NewPlant(profile.Default()), "continuous", "max", Options{Service: svc})
	free := st.FreeKV()
	require.NoError(t, st.AddPrefilled(Request{ID: 0, ArrivalTimeS: 0.05, PromptTokens: 40, OutputTokens: 5}))
	assert.Equal(t, 40.0, st.HeldKV())
	assert.Equal(t, free-48, st.FreeKV(), "three blocks of 16")
	stepUntilDone(t, st)
	assert.Zero(t, st.HeldKV())
	res, _ := st.Result()
	rec := res.Requests[0]
	assert.Equal(t, 0.05, rec.PrefillStartS, "taken at its arrival")
	assert.Greater(t, rec.CompletionTimeS, 0.05)
	assert.Equal(t, 4.0, res.Trajectory.CumulativeDecodeTokens[len(res.Trajectory.CumulativeDecodeTokens)-1])
	assert.Zero(t, res.Trajectory.CumulativePrefillTokens[len(res.Trajectory.CumulativePrefillTokens)-1])
}

// TestHoldKVBlocksRoom: KV held outside the running requests leaves the
// whole prompt no room (reference model) until released: its first
// token comes five steps later than without.
func TestHoldKVBlocksRoom(t *testing.T) {
	p := NewPlant(profile.Default())
	p.KVCapacityTokens, p.DecodeKVReserveTokensPerActive = 200, 1
	r := Request{ID: 0, PromptTokens: 150, OutputTokens: 3}
	want := simulateWith(t, []Request{r}, p, "continuous", "max", Options{})
	st := newTestStepper(t, p, "continuous", "max", Options{})
	require.NoError(t, st.Add(r))
	st.HoldKV(100)
	for range 5 {
		_, err := st.Step()
		require.NoError(t, err)
	}
	assert.True(t, math.IsNaN(st.Records()[0].FirstTokenTimeS), "no room for the whole prompt while 100 tokens are held")
	st.ReleaseKV(100)
	stepUntilDone(t, st)
	res, _ := st.Result()
	assert.InDelta(t, want.Requests[0].FirstTokenTimeS+0.5, res.Requests[0].FirstTokenTimeS, 1e-12, "five steps later")
}

// TestReleasedRoomIsNotInThePast: under the batched model a GPU that
// stalled for want of KV room held outside its requests starts again when
// the room is given back (the next step's start), not at the stall: the
// prompt's first token comes after the release, and no step draws more
// than the GPU's peak power (an iteration started in the past would cram
// its energy into one step).
func TestReleasedRoomIsNotInThePast(t *testing.T) {
	p := NewPlant(profile.Default())
	p.KVCapacityTokens = 200
	st := newTestStepper(t, p, "continuous", "max", Options{Service: batchedService(t)})
	require.NoError(t, st.Add(Request{ID: 0, ArrivalTimeS: 0.05, PromptTokens: 150, OutputTokens: 3}))
	st.HoldKV(100)
	for range 10 {
		_, err := st.Step()
		require.NoError(t, err)
	}
	require.True(t, math.IsNaN(st.Records()[0].FirstTokenTimeS), "no room while 100 tokens are held")
	st.ReleaseKV(100)
	stepUntilDone(t, st)
	res, _ := st.Result()
	assert.Greater(t, res.Requests[0].FirstTokenTimeS, 1.0, "served after the release at 1 s")
	prof := profile.Default()
	assert.LessOrEqual(t, res.Metrics.PeakPowerW, prof.Power(profile.PhasePrefill, prof.MaxClockMHz())+1e-9)
}

// TestAddPrefilledRejects: what a stepper refuses, each named.
func TestAddPrefilledRejects(t *testing.T) {
	p := NewPlant(profile.Default())
	st := newTestStepper(t, p, "continuous", "max", Options{})
	require.ErrorContains(t, st.AddPrefilled(Request{ID: 0, ArrivalTimeS: 1, PromptTokens: 10, OutputTokens: 1}), "expected at least 2 output tokens")
	require.NoError(t, st.AddPrefilled(Request{ID: 1, ArrivalTimeS: 1, PromptTokens: 10, OutputTokens: 2}))
	require.ErrorContains(t, st.Add(Request{ID: 2, ArrivalTimeS: 2, PromptTokens: 10, OutputTokens: 2}), "either requests to prefill or prefilled ones")
	require.ErrorContains(t, st.AddPrefilled(Request{ID: 3, ArrivalTimeS: 0.5, PromptTokens: 10, OutputTokens: 2}), "sorted by arrival_time_s")

	mixed := newTestStepper(t, p, "continuous", "max", Options{})
	require.NoError(t, mixed.Add(Request{ID: 0, PromptTokens: 10, OutputTokens: 2}))
	require.ErrorContains(t, mixed.AddPrefilled(Request{ID: 1, ArrivalTimeS: 1, PromptTokens: 10, OutputTokens: 2}), "either requests to prefill or prefilled ones")

	cached := newTestStepper(t, p, "continuous", "max", Options{Engine: EngineOptions{PrefixCache: true}})
	require.ErrorContains(t, cached.AddPrefilled(Request{ID: 0, ArrivalTimeS: 1, PromptTokens: 10, OutputTokens: 2}), "prefix cache")

	late := newTestStepper(t, p, "continuous", "max", Options{})
	_, err := late.Step()
	require.NoError(t, err)
	require.ErrorContains(t, late.AddPrefilled(Request{ID: 0, ArrivalTimeS: 0, PromptTokens: 10, OutputTokens: 2}), "before the next step")
}

// TestKeepKVHoldsTheBlocks: with the prefix cache, a completed request that
// keeps its KV holds its blocks (in the occupancy, against the room) until
// released: a second prompt as long finds no room for its whole prefill
// until then, its first token five steps later than when the first
// request's blocks are released at once, and the kept blocks count no
// more once released.
func TestKeepKVHoldsTheBlocks(t *testing.T) {
	for _, svc := range []ServiceModel{{}, batchedService(t)} {
		t.Run(svc.Name(), func(t *testing.T) {
			p := NewPlant(profile.Default())
			p.KVCapacityTokens, p.DecodeKVReserveTokensPerActive = 200, 1
			opt := Options{Service: svc, Engine: EngineOptions{PrefixCache: true}}
			first := Request{ID: 0, PromptTokens: 150, OutputTokens: 1}
			second := Request{ID: 1, ArrivalTimeS: 0.2, PromptTokens: 150, OutputTokens: 3}
			want := simulateWith(t, []Request{first, second}, p, "continuous", "max", opt)

			st := newTestStepper(t, p, "continuous", "max", opt)
			require.NoError(t, st.Add(first))
			require.NoError(t, st.KeepKV(0))
			require.NoError(t, st.Add(second))
			for !st.Records()[0].Completed() {
				_, err := st.Step()
				require.NoError(t, err)
			}
			kept := PrefilledKVTokens(svc, first.PromptTokens)
			assert.Equal(t, kept, st.KeptKV())
			assert.Zero(t, st.HeldKV(), "kept, not held")
			assert.Equal(t, 16.0*(12-10), st.FreeKV(), "10 of the 12 blocks of 16 kept")
			assert.GreaterOrEqual(t, st.Load().KVTokens, kept, "in the occupancy")
			completedS := st.Records()[0].CompletionTimeS
			for range 5 {
				_, err := st.Step()
				require.NoError(t, err)
			}
			assert.False(t, st.Records()[1].Completed(), "no room for the whole prompt while the first request's blocks are kept")
			st.ReleaseKeptKV(0)
			assert.Zero(t, st.KeptKV())
			stepUntilDone(t, st)
			res, _ := st.Result()
			assert.Equal(t, want.Requests[0].CompletionTimeS, completedS, "the first request served as without keeping")
			assert.Greater(t, res.Requests[1].FirstTokenTimeS, want.Requests[1].FirstTokenTimeS+0.3, "the second request waits for the kept blocks")
			assert.Equal(t, 192.0, st.FreeKV(), "every block back")
		})
	}
}

// TestKeptPrefixIsFound: a kept request's prefix blocks are live blocks
// of the cache: a later prompt sharing the prefix finds them, while they
// are kept and after they are released (then cached).
func TestKeptPrefixIsFound(t *testing.T) {
	for _, svc := range []ServiceModel{{}, batchedService(t)} {
		t.Run(svc.Name(), func(t *testing.T) {
			opt := Options{Service: svc, Engine: EngineOptions{PrefixCache: true, SharedPrefixTokens: 64}}
			st := newTestStepper(t, NewPlant(profile.Default()), "continuous", "max", opt)
			require.NoError(t, st.Add(Request{ID: 0, PromptTokens: 100, OutputTokens: 1}))
			require.NoError(t, st.KeepKV(0))
			require.NoError(t, st.Add(Request{ID: 1, ArrivalTimeS: 1, PromptTokens: 100, OutputTokens: 1}))
			require.NoError(t, st.Add(Request{ID: 2, ArrivalTimeS: 2, PromptTokens: 100, OutputTokens: 1}))
			for !st.Records()[1].Completed() {
				_, err := st.Step()
				require.NoError(t, err)
			}
			assert.NotZero(t, st.KeptKV(), "request 0 keeps its KV while request 1 runs")
			st.ReleaseKeptKV(0)
			stepUntilDone(t, st)
			res, _ := st.Result()
			for i, want := range []float64{0, 64, 64} {
				assert.Equal(t, want, res.Engine.Requests[i].PrefixCachedTokens, "request %d", i)
			}
		})
	}
}

// TestKeepKVRejects: KeepKV needs the prefix cache and a request not
// completed.
func TestKeepKVRejects(t *testing.T) {
	p := NewPlant(profile.Default())
	plain := newTestStepper(t, p, "continuous", "max", Options{})
	require.NoError(t, plain.Add(Request{ID: 0, PromptTokens: 10, OutputTokens: 2}))
	require.ErrorContains(t, plain.KeepKV(0), "only with the prefix cache")

	cached := newTestStepper(t, p, "continuous", "max", Options{Engine: EngineOptions{PrefixCache: true}})
	require.NoError(t, cached.Add(Request{ID: 0, PromptTokens: 10, OutputTokens: 1}))
	require.ErrorContains(t, cached.KeepKV(1), "no such request")
	stepUntilDone(t, cached)
	require.ErrorContains(t, cached.KeepKV(0), "completed already")
}
