package capacity

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// DefaultMaxReplicas is the largest fleet a capacity search tries
// unless told otherwise.
const DefaultMaxReplicas = 1024

// Evaluation is what simulating one fleet size tells the capacity search.
type Evaluation struct {
	Replicas int `json:"replicas"` // replicas: the fleet size
	// attainment: share of all requests (unfinished ones count as misses)
	// meeting every SLO.
	Attainment  float64 `json:"attainment"`
	MeetsTarget bool    `json:"meets_target"` // meets_target: attainment at least the target (Meets)
	// completed_fraction: share of the requests completed.
	CompletedFraction     float64 `json:"completed_fraction"`
	P95TTFTS              float64 `json:"p95_ttft_s"`                // p95_ttft_s: 95th percentile TTFT of the completed requests, s
	P99TTFTS              float64 `json:"p99_ttft_s"`                // p99_ttft_s: 99th percentile TTFT of the completed requests, s
	EnergyPerOutputTokenJ float64 `json:"energy_per_output_token_j"` // energy_per_output_token_j: fleet energy / completed output tokens, J
	PeakPowerW            float64 `json:"peak_power_w"`              // peak_power_w: fleet peak power (maximum over steps of the summed replica power), W
	// energy_per_request_j: fleet energy / completed requests, J; NaN
	// (null) when no request completed. Every replica's energy over the
	// whole run counts, the work on unfinished requests included.
	EnergyPerRequestJ float64 `json:"energy_per_request_j"`
	// energy_per_1k_requests_kj: the energy of 1000 completed requests,
	// kJ: 1000 x energy_per_request_j / 1000, so the same number.
	EnergyPer1kRequestsKJ float64 `json:"energy_per_1k_requests_kj"`
	EnergyKWh             float64 `json:"energy_kwh"` // energy_kwh: fleet energy (summed over replicas) / 3.6e6, kWh
	// mean_power_w: fleet energy / the run's duration, W: the duration is
	// the fleet's steps times the time step (the span its energy sums
	// over), so this is the mean over steps of the summed replica power.
	MeanPowerW float64 `json:"mean_power_w"`
	// stopped_early: the simulation stopped once the requests it had lost
	// left the target out of reach (Capacity.StopWhenLost): it fails the
	// target, and its attainment and other numbers are null. Left out
	// otherwise.
	StoppedEarly bool `json:"stopped_early,omitempty"`
}

// Meets reports whether e reaches the target attainment.
func (e Evaluation) Meets(target float64) bool { return e.Attainment >= target }

// Evaluator simulates a fleet of the given size and evaluates it. The
// search calls it concurrently for different sizes (at most Jobs at once)
// and at most once per size; it must give the same answer for the same
// size every time and return ctx's error once ctx is done.
type Evaluator func(ctx context.Context, replicas int) (Evaluation, error)

// SearchSettings configures Search.
type SearchSettings struct {
	Target      float64 // attainment to reach, in (0, 1]
	MaxReplicas int     // largest size tried; 0 means DefaultMaxReplicas
	Jobs        int     // evaluations run at once; 0 means 1
	// Used, when set, is called with each evaluation the search's decisions
	// use, in order, from the goroutine that called Search (for a
	// progress display). There are at most MaxSearchSteps(MaxReplicas).
	Used func(Evaluation)
	// Known are evaluations made beforehand (a capacity shard's, read
	// back), at most one per size: the search takes them as the
	// Evaluator's answers for their sizes and evaluates only the sizes it
	// needs that are not among them. Their MeetsTarget is recomputed.
	Known []Evaluation
}

// SearchResult is the outcome of a capacity search.
type SearchResult struct {
	TargetAttainment float64 `json:"target_attainment"` // target_attainment: the target
	MaxReplicas      int     `json:"max_replicas"`      // max_replicas: the largest size the search could try
	// replicas: the answer, a size that meets the target one fewer does
	// not; nil (null) when no size up to max_replicas meets it.
	Replicas *int `json:"replicas"`
	// evaluations: every size the search's decisions used, by size.
	Evaluations []Evaluation `json:"evaluations"`
	// non_monotone: evaluated sizes contradicting an attainment that never
	// falls as the fleet grows: above the answer and failing the target,
	// or below it and meeting it. Empty when none was found.
	NonMonotone []Evaluation `json:"non_monotone"`
	// best: the evaluation with the highest attainment (the smallest on a
	// tie): for an unreachable target, the best reached.
	Best Evaluation `json:"best"`
}

// Answer returns the evaluation of the answer, or false when the target is
// unreachable.
func (r *SearchResult) Answer() (Evaluation, bool) {
	if r.Replicas == nil {
		return Evaluation{}, false
	}
	for _, e := range r.Evaluations {
		if e.Replicas == *r.Replicas {
			return e, true
		}
	}
	return Evaluation{}, false
}

// UnreachableError is Search's error when no fleet of at most
// MaxReplicas replicas meets the target.
type UnreachableError struct {
	Target      float64
	MaxReplicas int
	Best        Evaluation // the highest attainment reached
	// Plateau is the largest fleet evaluated when it reaches exactly the
	// best attainment with more replicas than Best: the requests still
	// missing do not miss for lack of replicas. Zero otherwise.
	Plateau int
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("no fleet of at most %d replicas reaches attainment %v: the best is %v with %d replicas",
		e.MaxReplicas, e.Target, e.Best.Attainment, e.Best.Replicas)
	if e.Plateau > 0 {
		msg += fmt.Sprintf(", the same as with %d: the requests still missing do not miss for lack of replicas "+
			"(looser SLOs or a faster profile would help, more replicas do not)", e.Plateau)
	}
	return msg
}

// MaxSearchSteps bounds the number of evaluations a search's decisions use
// with sizes up to maxReplicas: doubling, bisection and one verification.
func MaxSearchSteps(maxReplicas int) int {
	n := 0 // the bit length of maxReplicas
	for m := max(1, maxReplicas); m > 0; m >>= 1 {
		n++
	}
	return 2*n + 2
}

// Search finds the smallest fleet size meeting the target
// attainment: it doubles the size from 1 until one meets the target (or
// MaxReplicas fails), bisects between the last failing and the first
// meeting size until they are adjacent (so the answer's predecessor has
// been simulated and fails), and then simulates the answer + 1, which must
// meet the target too. Attainment need not grow with the fleet (a router can
// make it dip), so the result lists every evaluated size that contradicts
// monotonicity; the answer is then a size that meets the target while one
// fewer does not, not necessarily the smallest such size.
//
// The sizes the search decides on, and so the whole result, depend on the
// evaluations alone, never on Jobs. With Jobs > 1 the search evaluates, in
// parallel with the size it needs next, the sizes its next decisions may
// need (the decision tree breadth-first, the smaller size first); those it
// then does not use are left out of the result.
//
// When no size up to MaxReplicas meets the target, the result (answer nil,
// Best the highest attainment) comes with an *UnreachableError. An
// evaluation error the search needs ends it with that error; so does ctx.
func Search(ctx context.Context, evaluate Evaluator, cfg SearchSettings) (*SearchResult, error) {
	if !(cfg.Target > 0 && cfg.Target <= 1) {
		return nil, fmt.Errorf("target attainment %v: expected a number in (0, 1]", cfg.Target)
	}
	if cfg.MaxReplicas == 0 {
		cfg.MaxReplicas = DefaultMaxReplicas
	}
	if cfg.MaxReplicas < 1 {
		return nil, fmt.Errorf("max replicas %d: expected at least 1", cfg.MaxReplicas)
	}
	if cfg.Jobs < 0 {
		return nil, fmt.Errorf("jobs %d: expected at least 1", cfg.Jobs)
	}
	s := &searcher{cfg: cfg, jobs: max(1, cfg.Jobs), evaluate: evaluate, cache: map[int]outcome{}}
	for _, e := range cfg.Known {
		e.MeetsTarget = e.Meets(cfg.Target)
		s.cache[e.Replicas] = outcome{eval: e}
	}
	var used []int
	var b bracket
	for {
		size, ok := s.next(b)
		if !ok {
			break
		}
		if _, cached := s.cache[size]; !cached {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.run(ctx, s.speculate(b))
		}
		o := s.cache[size]
		if o.err != nil {
			return nil, o.err
		}
		if !slices.Contains(used, size) {
			used = append(used, size)
			if cfg.Used != nil {
				cfg.Used(o.eval)
			}
		}
		b = b.after(size, o.eval.MeetsTarget)
	}
	return s.result(b, used)
}

// bracket is the state of the search: the largest size known to fail and
// the smallest known to meet the target (0 for none yet), and whether the
// size above the answer was simulated.
type bracket struct {
	fail, meet int
	verified   bool
}

// converged reports whether the answer is known: adjacent sizes, the
// smaller failing (or none) and the larger meeting.
func (b bracket) converged() bool { return b.meet != 0 && b.meet-b.fail <= 1 }

// after returns the bracket once size was found to meet the target or not.
func (b bracket) after(size int, meets bool) bracket {
	switch {
	case b.converged():
		b.verified = true // the verification: the answer stays
	case meets:
		b.meet = size
	default:
		b.fail = size
	}
	return b
}

// outcome is one size's evaluation or error.
type outcome struct {
	eval Evaluation
	err  error
}

type searcher struct {
	cfg      SearchSettings
	jobs     int
	evaluate Evaluator
	cache    map[int]outcome
}

// next returns the size the search needs after bracket b, or false when it
// is done.
func (s *searcher) next(b bracket) (int, bool) {
	maxSize := s.cfg.MaxReplicas
	switch {
	case b.meet == 0 && b.fail >= maxSize:
		return 0, false // unreachable
	case b.meet == 0 && b.fail == 0:
		return 1, true
	case b.meet == 0:
		return min(2*b.fail, maxSize), true
	case !b.converged():
		return b.fail + (b.meet-b.fail)/2, true
	case !b.verified && b.meet < maxSize:
		return b.meet + 1, true
	}
	return 0, false
}

// speculate lists up to jobs sizes not evaluated yet: the one the search
// needs after bracket b first, then those its following decisions may
// need, breadth-first through both outcomes of each, the meeting outcome
// (a smaller size next) first.
func (s *searcher) speculate(b bracket) []int {
	var sizes []int
	level := []bracket{b}
	for depth := 0; len(level) > 0 && len(sizes) < s.jobs && depth <= MaxSearchSteps(s.cfg.MaxReplicas); depth++ {
		var next []bracket
		for _, lb := range level {
			size, ok := s.next(lb)
			if !ok {
				continue
			}
			if o, cached := s.cache[size]; cached {
				if o.err == nil {
					next = append(next, lb.after(size, o.eval.MeetsTarget))
				}
				continue
			}
			if !slices.Contains(sizes, size) {
				if len(sizes) == s.jobs {
					break
				}
				sizes = append(sizes, size)
			}
			next = append(next, lb.after(size, true), lb.after(size, false))
		}
		level = next
	}
	return sizes
}

// run evaluates sizes concurrently and caches their outcomes.
func (s *searcher) run(ctx context.Context, sizes []int) {
	outcomes := make([]outcome, len(sizes))
	forEach(len(sizes), len(sizes), func(i int) {
		e, err := s.evaluate(ctx, sizes[i])
		e.Replicas = sizes[i]
		e.MeetsTarget = e.Meets(s.cfg.Target)
		outcomes[i] = outcome{e, err}
	})
	for i, size := range sizes {
		s.cache[size] = outcomes[i]
	}
}

// result assembles the outcome of a search that ended at bracket b after
// using the sizes used.
func (s *searcher) result(b bracket, used []int) (*SearchResult, error) {
	res := &SearchResult{TargetAttainment: s.cfg.Target, MaxReplicas: s.cfg.MaxReplicas, NonMonotone: []Evaluation{}}
	slices.Sort(used)
	for _, size := range used {
		res.Evaluations = append(res.Evaluations, s.cache[size].eval)
	}
	res.Best = res.Evaluations[0]
	for _, e := range res.Evaluations[1:] {
		// A whole simulation beats one stopped early, whose attainment
		// is only a bound.
		if e.StoppedEarly == res.Best.StoppedEarly && e.Attainment > res.Best.Attainment || res.Best.StoppedEarly && !e.StoppedEarly {
			res.Best = e
		}
	}
	if b.meet == 0 {
		err := &UnreachableError{Target: s.cfg.Target, MaxReplicas: s.cfg.MaxReplicas, Best: res.Best}
		if largest := res.Evaluations[len(res.Evaluations)-1]; largest.Replicas > res.Best.Replicas && largest.Attainment == res.Best.Attainment {
			err.Plateau = largest.Replicas
		}
		return res, err
	}
	answer := b.meet
	res.Replicas = &answer
	for _, e := range res.Evaluations {
		if e.Replicas > answer && !e.MeetsTarget || e.Replicas < answer && e.MeetsTarget {
			res.NonMonotone = append(res.NonMonotone, e)
		}
	}
	return res, nil
}

// EvaluateEach calls evaluate(ctx, i) for i in [0, n), at most jobs at once
// (0 means 1), and returns the evaluations in index order, each marked
// against target; the error is that of the smallest failing index.
func EvaluateEach(ctx context.Context, n, jobs int, target float64, evaluate func(ctx context.Context, i int) (Evaluation, error)) ([]Evaluation, error) {
	evals := make([]Evaluation, n)
	errs := make([]error, n)
	forEach(n, max(1, jobs), func(i int) {
		if errs[i] = ctx.Err(); errs[i] == nil {
			evals[i], errs[i] = evaluate(ctx, i)
			evals[i].MeetsTarget = evals[i].Meets(target)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return evals, nil
}

// Cheapest returns the index of the evaluation with the lowest energy per
// output token among those meeting the target (the first on a tie), or
// false when none meets it.
func Cheapest(evals []Evaluation) (int, bool) {
	best := -1
	for i, e := range evals {
		if e.MeetsTarget && (best < 0 || e.EnergyPerOutputTokenJ < evals[best].EnergyPerOutputTokenJ) {
			best = i
		}
	}
	return best, best >= 0
}

// forEach calls fn(i) for i in [0, n) on at most jobs goroutines and
// returns when every call has.
func forEach(n, jobs int, fn func(i int)) {
	if n == 1 || jobs <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, jobs) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
