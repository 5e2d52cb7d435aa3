package capacity

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthetic is an evaluator over an attainment function that records every
// size it was asked for and the most evaluations running at once.
type synthetic struct {
	attainment func(n int) float64
	fail       map[int]error    // sizes whose evaluation fails
	hold       func(*synthetic) // called while the evaluation counts as running

	mu      sync.Mutex
	calls   []int
	running atomic.Int32
	peak    atomic.Int32
}

func (s *synthetic) evaluate(ctx context.Context, n int) (Evaluation, error) {
	now := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		peak := s.peak.Load()
		if now <= peak || s.peak.CompareAndSwap(peak, now) {
			break
		}
	}
	if s.hold != nil {
		s.hold(s)
	}
	s.mu.Lock()
	s.calls = append(s.calls, n)
	s.mu.Unlock()
	if err := s.fail[n]; err != nil {
		return Evaluation{}, err
	}
	a := s.attainment(n)
	// The other fields are functions of the size, so results can be
	// compared whole.
	return Evaluation{Replicas: -1, Attainment: a, CompletedFraction: a, P95TTFTS: 100 / float64(n), P99TTFTS: 200 / float64(n),
		EnergyPerOutputTokenJ: 1 + float64(n)/100, PeakPowerW: 70 * float64(n)}, ctx.Err()
}

// threshold is a monotone attainment reaching 1 at t replicas.
func threshold(t int) func(int) float64 {
	return func(n int) float64 {
		if n >= t {
			return 1
		}
		return 0.9 * float64(n) / float64(t)
	}
}

// meetsAt is an attainment meeting any target at the sizes listed and at
// every size from `from` on, and 0.5 elsewhere.
func meetsAt(from int, sizes ...int) func(int) float64 {
	return func(n int) float64 {
		if n >= from || slices.Contains(sizes, n) {
			return 1
		}
		return 0.5
	}
}

func sizesOf(evals []Evaluation) []int {
	out := make([]int, len(evals))
	for i, e := range evals {
		out[i] = e.Replicas
	}
	return out
}

func search(t *testing.T, s *synthetic, cfg SearchSettings) (*SearchResult, error) {
	t.Helper()
	return Search(context.Background(), s.evaluate, cfg)
}

func TestSearchDoublesBisectsAndVerifies(t *testing.T) {
	tests := []struct {
		name        string
		attainment  func(int) float64
		max         int
		answer      int
		sizes       []int
		nonMonotone []int
	}{
		// 1, 2, 4 fail, 8 meets; bisect 6 (meets), 5 (meets): 4 fails
		// below 5; the verification, 6, was simulated already.
		{"threshold 5", threshold(5), 1024, 5, []int{1, 2, 4, 5, 6, 8}, nil},
		{"one replica", threshold(1), 1024, 1, []int{1, 2}, nil},
		{"two replicas", threshold(2), 1024, 2, []int{1, 2, 3}, nil},
		{"power of two", threshold(64), 1024, 64, []int{1, 2, 4, 8, 16, 32, 48, 56, 60, 62, 63, 64, 65}, nil},
		// Doubling stops at the cap, which is not a power of two; bisection
		// between 64 and 100 fails all the way up.
		{"at the cap", threshold(100), 100, 100, []int{1, 2, 4, 8, 16, 32, 64, 82, 91, 95, 97, 98, 99, 100}, nil},
		{"cap of one", threshold(1), 1, 1, []int{1}, nil},
		// 6 meets, 7 does not, 8 on meet: the verification finds 7.
		{"dip above the answer", meetsAt(8, 6), 1024, 6, []int{1, 2, 4, 5, 6, 7, 8}, []int{7}},
		// 3 meets but the search never simulates it: not reported.
		{"unseen dip", meetsAt(10, 3), 1024, 10, []int{1, 2, 4, 8, 9, 10, 11, 12, 16}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reference *SearchResult
			for _, jobs := range []int{0, 1, 2, 3, 4, 8} {
				s := &synthetic{attainment: tt.attainment}
				var used []int
				res, err := search(t, s, SearchSettings{Target: 0.99, MaxReplicas: tt.max, Jobs: jobs,
					Used: func(e Evaluation) { used = append(used, e.Replicas) }})
				require.NoError(t, err)
				require.NotNil(t, res.Replicas)
				assert.Equal(t, tt.answer, *res.Replicas, "jobs %d", jobs)
				assert.Equal(t, tt.sizes, sizesOf(res.Evaluations), "jobs %d", jobs)
				assert.Equal(t, append([]int{}, tt.nonMonotone...), sizesOf(res.NonMonotone), "jobs %d", jobs)
				assert.ElementsMatch(t, tt.sizes, used, "Used sees each size the search used once")
				assert.LessOrEqual(t, len(used), MaxSearchSteps(tt.max))
				answer, ok := res.Answer()
				require.True(t, ok)
				assert.True(t, answer.MeetsTarget)
				assert.Equal(t, tt.answer, answer.Replicas)
				for _, e := range res.Evaluations {
					if e.Replicas == tt.answer-1 {
						assert.False(t, e.MeetsTarget, "the answer's predecessor was simulated and fails")
					}
				}
				if tt.answer > 1 {
					assert.Contains(t, tt.sizes, tt.answer-1)
				}
				// No size is simulated twice; with one job nothing is wasted.
				calls := slices.Clone(s.calls)
				slices.Sort(calls)
				assert.Equal(t, slices.Compact(slices.Clone(calls)), calls, "a size is simulated once")
				if jobs <= 1 {
					assert.Equal(t, tt.sizes, calls)
				}
				assert.LessOrEqual(t, int(s.peak.Load()), max(1, jobs))
				if reference == nil {
					reference = res
				}
				assert.Equal(t, reference, res, "the result does not depend on --jobs (jobs %d)", jobs)
			}
		})
	}
}

func TestSearchUsesTheJobs(t *testing.T) {
	// Each evaluation waits (up to 100 ms) for the others of its round.
	s := &synthetic{attainment: threshold(300), hold: func(s *synthetic) {
		for i := 0; i < 100 && s.peak.Load() < 4; i++ {
			time.Sleep(time.Millisecond)
		}
	}}
	res, err := search(t, s, SearchSettings{Target: 0.99, Jobs: 4})
	require.NoError(t, err)
	assert.Equal(t, int32(4), s.peak.Load(), "four sizes simulated at once")
	assert.Equal(t, 300, *res.Replicas)
}

func TestSearchBestAndTie(t *testing.T) {
	// Attainment 0.5 everywhere but 0.8 at 16 and 32: the first best wins.
	s := &synthetic{attainment: func(n int) float64 {
		if n == 16 || n == 32 {
			return 0.8
		}
		return 0.5
	}}
	res, err := search(t, s, SearchSettings{Target: 0.9, MaxReplicas: 40})
	var unreachable *UnreachableError
	require.ErrorAs(t, err, &unreachable)
	assert.Equal(t, 16, res.Best.Replicas)
	assert.Equal(t, 16, unreachable.Best.Replicas)
	assert.Zero(t, unreachable.Plateau, "40 replicas reach less than 16")
}

// TestSearchPlateau: when the largest fleet evaluated reaches no
// more than a smaller one, the error says that more replicas do not help.
func TestSearchPlateau(t *testing.T) {
	s := &synthetic{attainment: func(n int) float64 { return 0.5 + 0.1*float64(min(n, 8))/8 }}
	_, err := search(t, s, SearchSettings{Target: 0.9, MaxReplicas: 64})
	var unreachable *UnreachableError
	require.ErrorAs(t, err, &unreachable)
	assert.Equal(t, 8, unreachable.Best.Replicas)
	assert.Equal(t, 64, unreachable.Plateau)
	assert.EqualError(t, err, "no fleet of at most 64 replicas reaches attainment 0.9: the best is 0.6 with 8 replicas, "+
		"the same as with 64: the requests still missing do not miss for lack of replicas "+
		"(looser SLOs or a faster profile would help, more replicas do not)")
}

func TestSearchUnreachable(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		s := &synthetic{attainment: func(n int) float64 { return 0.9 - 0.5/float64(n) }}
		res, err := search(t, s, SearchSettings{Target: 0.95, MaxReplicas: 100, Jobs: jobs})
		var unreachable *UnreachableError
		require.ErrorAs(t, err, &unreachable)
		assert.EqualError(t, err, "no fleet of at most 100 replicas reaches attainment 0.95: the best is 0.895 with 100 replicas")
		require.NotNil(t, res)
		assert.Nil(t, res.Replicas)
		_, ok := res.Answer()
		assert.False(t, ok)
		assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 100}, sizesOf(res.Evaluations))
		assert.Equal(t, 100, res.Best.Replicas)
		assert.Equal(t, res.Best, unreachable.Best)
		assert.Equal(t, 0.95, unreachable.Target)
		assert.Equal(t, 100, unreachable.MaxReplicas)
		assert.Zero(t, unreachable.Plateau, "the largest fleet is the best")
		assert.Empty(t, res.NonMonotone)
		assert.NotNil(t, res.NonMonotone, "an empty list, [] in JSON")
	}
}

func TestSearchMatchesJobsOneOnRandomAttainments(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		maxSize := 1 + rng.IntN(300)
		// A noisy attainment that mostly grows with the size.
		noise := make([]float64, maxSize+1)
		for i := range noise {
			noise[i] = rng.Float64() * 0.2
		}
		scale := 1 + rng.IntN(maxSize)
		attainment := func(n int) float64 { return min(1, float64(n)/float64(scale)) - noise[n] }
		target := 0.5 + rng.Float64()*0.5
		reference, refErr := search(t, &synthetic{attainment: attainment}, SearchSettings{Target: target, MaxReplicas: maxSize, Jobs: 1})
		for _, jobs := range []int{2, 3, 5} {
			res, err := search(t, &synthetic{attainment: attainment}, SearchSettings{Target: target, MaxReplicas: maxSize, Jobs: jobs})
			require.Equal(t, refErr, err, "trial %d jobs %d", trial, jobs)
			require.Equal(t, reference, res, "trial %d jobs %d", trial, jobs)
		}
		if refErr != nil {
			continue
		}
		answer := *reference.Replicas
		assert.GreaterOrEqual(t, attainment(answer), target, "trial %d", trial)
		if answer > 1 {
			assert.Less(t, attainment(answer-1), target, "trial %d: the predecessor fails", trial)
		}
		for _, e := range reference.Evaluations {
			monotone := e.MeetsTarget == (e.Replicas >= answer)
			assert.Equal(t, !monotone, slices.Contains(reference.NonMonotone, e), "trial %d size %d", trial, e.Replicas)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	boom := errors.New("boom")
	// An error at a size the search needs ends it.
	s := &synthetic{attainment: threshold(5), fail: map[int]error{8: boom}}
	_, err := search(t, s, SearchSettings{Target: 0.99, Jobs: 2})
	assert.ErrorIs(t, err, boom)

	// An error at a size only speculation reached is never seen: the result
	// is that of one job.
	probe := &synthetic{attainment: threshold(37)}
	want, err := search(t, probe, SearchSettings{Target: 0.99, Jobs: 1})
	require.NoError(t, err)
	spec := &synthetic{attainment: threshold(37)}
	_, err = search(t, spec, SearchSettings{Target: 0.99, Jobs: 4})
	require.NoError(t, err)
	var unused []int
	for _, n := range spec.calls {
		if !slices.Contains(sizesOf(want.Evaluations), n) {
			unused = append(unused, n)
		}
	}
	require.NotEmpty(t, unused, "speculation simulated sizes the search did not use")
	failing := map[int]error{}
	for _, n := range unused {
		failing[n] = boom
	}
	got, err := search(t, &synthetic{attainment: threshold(37), fail: failing}, SearchSettings{Target: 0.99, Jobs: 4})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestSearchCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &synthetic{attainment: threshold(5)}
	_, err := Search(ctx, s.evaluate, SearchSettings{Target: 0.99})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, s.calls, "nothing is simulated after cancellation")

	// Cancelled while size 4 is being simulated.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	blocking := func(ctx context.Context, n int) (Evaluation, error) {
		if n >= 4 {
			cancel()
			<-ctx.Done()
			return Evaluation{}, ctx.Err()
		}
		return Evaluation{Attainment: 0}, nil
	}
	_, err = Search(ctx, blocking, SearchSettings{Target: 0.99, Jobs: 2})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSearchRejectsBadSettings(t *testing.T) {
	s := &synthetic{attainment: threshold(5)}
	for _, tt := range []struct {
		cfg  SearchSettings
		want string
	}{
		{SearchSettings{Target: 0}, "target attainment 0: expected a number in (0, 1]"},
		{SearchSettings{Target: 1.5}, "target attainment 1.5"},
		{SearchSettings{Target: -0.5}, "target attainment -0.5"},
		{SearchSettings{Target: 0.9, MaxReplicas: -1}, "max replicas -1: expected at least 1"},
		{SearchSettings{Target: 0.9, Jobs: -2}, "jobs -2: expected at least 1"},
	} {
		_, err := search(t, s, tt.cfg)
		assert.ErrorContains(t, err, tt.want)
	}
	assert.Empty(t, s.calls)
	res, err := search(t, s, SearchSettings{Target: 1})
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxReplicas, res.MaxReplicas)
}

func TestEvaluateEachAndCheapest(t *testing.T) {
	energies := []float64{3, 1, 2, 1, 0.5}
	attainments := []float64{0.99, 0.99, 0.99, 0.995, 0.5}
	for _, jobs := range []int{0, 1, 2, 8} {
		evals, err := EvaluateEach(context.Background(), len(energies), jobs, 0.99, func(_ context.Context, i int) (Evaluation, error) {
			return Evaluation{Replicas: 7, Attainment: attainments[i], EnergyPerOutputTokenJ: energies[i]}, nil
		})
		require.NoError(t, err)
		require.Len(t, evals, 5)
		for i, e := range evals {
			assert.Equal(t, energies[i], e.EnergyPerOutputTokenJ, "in index order")
			assert.Equal(t, attainments[i] >= 0.99, e.MeetsTarget)
		}
		best, ok := Cheapest(evals)
		require.True(t, ok)
		assert.Equal(t, 1, best, "the cheapest meeting the target, the first on a tie")
	}
	_, ok := Cheapest([]Evaluation{{Attainment: 0.1}, {Attainment: 0.2}})
	assert.False(t, ok)

	first, second := errors.New("first"), errors.New("second")
	_, err := EvaluateEach(context.Background(), 4, 4, 0.9, func(_ context.Context, i int) (Evaluation, error) {
		switch i {
		case 1:
			return Evaluation{}, first
		case 3:
			return Evaluation{}, second
		}
		return Evaluation{}, nil
	})
	assert.Same(t, first, err, "the error of the smallest index")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = EvaluateEach(ctx, 3, 1, 0.9, func(context.Context, int) (Evaluation, error) {
		t.Fatal("no call after cancellation")
		return Evaluation{}, nil
	})
	assert.ErrorIs(t, err, context.Canceled)
}
