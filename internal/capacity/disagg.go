package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// DisaggStudy is the disaggregated half of `capacity --disaggregated`:
// the fewest GPUs, prefill and decode replicas together, that serve the
// study's workload within its SLOs as a disaggregated fleet (disagg.go),
// and, among splits of that many, the one of least energy; then the
// answer under every pair of the study's controllers, one per pool.
//
// The search: for each prefill pool size P = 1, 2, ... it finds the fewest
// decode replicas D(P) meeting the target (Search over D: doubling,
// bisection, one verification), with D at most the best total found so far
// less P (a larger total can no longer win), before any at most
// DecodeCap; it stops once P + 1 exceeds the best total (or, before any,
// P exceeds DecodeCap). Every split of
// the winning total is thus tried whose decode size is the least for its
// P. Attainment need not grow with D (see Search): the answer is a
// D(P) that meets the target while D(P) - 1 does not.
type DisaggStudy struct {
	// Capacity is the study: its Plant, Router (both pools' kind; the
	// decode pool's seeded one past RouterSeed), SLO, Engine, Service,
	// Controllers (the search runs the first in both pools), Search
	// (target, MaxReplicas: the largest pool, Jobs) and Simulated hooks.
	// Its Unit is the two pools: one group of role prefill and one of role
	// decode; a group with a Controller keeps it. Its Progress, when set,
	// is called once per split the searches use and per pair of pool
	// controllers run at the answer (at most MaxEvaluations), from the
	// goroutine that called RunDisagg.
	Capacity
	Link fleet.Link
	// DecodeCap bounds each pool searched before any split has met the
	// target (0: the search's MaxReplicas).
	DecodeCap int
}

// DisaggReport is the outcome of a disaggregated capacity search
// (the disaggregated block of `capacity --disaggregated`).
type DisaggReport struct {
	KVTransferBandwidthGBps float64 `json:"kv_transfer_bandwidth_gbps"` // kv_transfer_bandwidth_gbps: the link of each prefill replica (null: instant)
	KVTransferLatencyS      float64 `json:"kv_transfer_latency_s"`      // kv_transfer_latency_s: the link's latency
	// prefill_replicas, decode_replicas and replicas (their sum): the
	// answer; null when no split searched meets the target.
	PrefillReplicas *int `json:"prefill_replicas"`
	DecodeReplicas  *int `json:"decode_replicas"`
	Replicas        *int `json:"replicas"`
	// search_controllers: the prefill and decode pools' controllers in the
	// search.
	SearchControllers PoolControllers `json:"search_controllers"`
	// evaluations: every split the search simulated, by prefill then
	// decode replicas; replicas is their sum.
	Evaluations []SplitEvaluation `json:"evaluations"`
	// pool_controllers: the answer under each pair of controllers, the
	// prefill pool's varying slowest; empty without an answer.
	PoolControllers []PoolControllerEvaluation `json:"pool_controllers"`
	// energy_minimal_pool_controllers: of the pairs meeting the target at
	// the answer, the one of least energy per output token (the first on a
	// tie); null when none does.
	EnergyMinimalPoolControllers *PoolControllers `json:"energy_minimal_pool_controllers"`
}

// Answer returns the evaluation of the answer's split, or false when no
// split searched meets the target.
func (r *DisaggReport) Answer() (SplitEvaluation, bool) {
	if r.Replicas == nil {
		return SplitEvaluation{}, false
	}
	for _, e := range r.Evaluations {
		if e.PrefillReplicas == *r.PrefillReplicas && e.DecodeReplicas == *r.DecodeReplicas {
			return e, true
		}
	}
	return SplitEvaluation{}, false
}

// PoolControllers are the controllers of the two pools.
type PoolControllers struct {
	Prefill string `json:"prefill"`
	Decode  string `json:"decode"`
}

// SplitEvaluation is one split's evaluation.
type SplitEvaluation struct {
	PrefillReplicas int `json:"prefill_replicas"`
	DecodeReplicas  int `json:"decode_replicas"`
	Evaluation
}

// PoolControllerEvaluation is the answer's evaluation under one pair of
// pool controllers.
type PoolControllerEvaluation struct {
	PoolControllers
	Evaluation
}

// DisaggUnreachableError is RunDisagg's error when no split
// searched meets the target.
type DisaggUnreachableError struct {
	Target float64
	Best   SplitEvaluation // the highest attainment reached
}

func (e *DisaggUnreachableError) Error() string {
	return fmt.Sprintf("no disaggregated fleet searched reaches attainment %v: the best is %v with %d prefill and %d decode replicas",
		e.Target, e.Best.Attainment, e.Best.PrefillReplicas, e.Best.DecodeReplicas)
}

// DisaggUnit returns the two pools of unit for a disaggregated study: its
// prefill and decode groups (one of each), or, for a unit of one group
// without a role, that group twice as a prefill and a decode pool.
func DisaggUnit(unit []fleet.Group) ([]fleet.Group, error) {
	if len(unit) == 1 && !fleet.Disaggregated(unit) {
		prefill, decode := unit[0], unit[0]
		prefill.Name, prefill.Role, prefill.Replicas = "prefill", fleet.RolePrefill, 1
		decode.Name, decode.Role, decode.Replicas = "decode", fleet.RoleDecode, 1
		return []fleet.Group{prefill, decode}, nil
	}
	if len(unit) != 2 || unit[0].Role != fleet.RolePrefill || unit[1].Role != fleet.RoleDecode {
		return nil, runparams.Errorf("capacity %s: expected one group (both pools alike) or a fleet file of a prefill group then a decode group", runparams.Setting("disaggregated"))
	}
	return unit, nil
}

// MaxEvaluations bounds the splits the study uses: each prefill pool size,
// up to twice the pool bound (a split of fewer GPUs than the best so far),
// searches its decode pools within the bound, and the answer is run once
// per pair of pool controllers.
func (c *DisaggStudy) MaxEvaluations() int {
	bound := MaxSize(c.Search.MaxReplicas, 1)
	if c.DecodeCap > 0 {
		bound = min(c.DecodeCap, bound)
	}
	pools, err := DisaggUnit(c.Unit)
	if err != nil {
		return 0
	}
	return 2*bound*MaxSearchSteps(bound) + len(c.choices(pools[0]))*len(c.choices(pools[1]))
}

// progress counts one evaluation used on Progress, when set.
func (c *DisaggStudy) progress() {
	if c.Progress != nil {
		c.Progress()
	}
}

// split is one fleet of a disaggregated search.
type split struct {
	prefill, decode int
	controllers     PoolControllers
}

// disaggSearch holds a disaggregated study's evaluations, each split
// simulated once.
type disaggSearch struct {
	c        *DisaggStudy
	requests []plant.Request
	pools    []fleet.Group
	mu       sync.Mutex
	cache    map[split]Evaluation
}

// evaluate simulates the split (once) and judges it.
func (s *disaggSearch) evaluate(ctx context.Context, sp split) (Evaluation, error) {
	s.mu.Lock()
	e, ok := s.cache[sp]
	s.mu.Unlock()
	if ok {
		return e, nil
	}
	c := s.c
	groups := slices.Clone(s.pools)
	groups[0].Replicas, groups[0].Controller = sp.prefill, sp.controllers.Prefill
	groups[1].Replicas, groups[1].Controller = sp.decode, sp.controllers.Decode
	router, err := fleet.NewRouter(c.Router, c.RouterSeed)
	if err != nil {
		return Evaluation{}, err
	}
	decode, err := fleet.NewRouter(c.Router, c.RouterSeed+1)
	if err != nil {
		return Evaluation{}, err
	}
	res, err := fleet.SimulateContext(ctx, s.requests, fleet.Config{Plant: c.Plant, Groups: groups, Router: router, Sessions: c.Sessions,
		Options:           plant.Options{Summary: true, SLO: c.SLO, Engine: c.Engine, Service: c.Service},
		ControllerOptions: c.ControllerOptions, Disaggregation: &fleet.Disaggregation{Link: c.Link, DecodeRouter: decode}})
	if c.Simulated != nil {
		c.Simulated(sp.prefill+sp.decode, sp.controllers.Prefill)
	}
	if err != nil {
		return Evaluation{}, err
	}
	e = Judge(res, groups, c.SLO)
	e.Replicas = sp.prefill + sp.decode
	e.MeetsTarget = e.Meets(c.Search.Target)
	s.mu.Lock()
	s.cache[sp] = e
	s.mu.Unlock()
	return e, nil
}

// choices are the controllers a pool's group runs: its own, or each of the
// study's.
func (c *DisaggStudy) choices(g fleet.Group) []string {
	if g.Controller != "" {
		return []string{g.Controller}
	}
	return c.Controllers
}

// RunDisagg runs the disaggregated study on requests (sorted by
// arrival, unique IDs). With no split meeting the target the report (no
// answer) comes with a *DisaggUnreachableError.
func RunDisagg(ctx context.Context, requests []plant.Request, c DisaggStudy) (*DisaggReport, error) {
	pools, err := DisaggUnit(c.Unit)
	if err != nil {
		return nil, err
	}
	if len(c.Controllers) == 0 {
		return nil, errors.New("capacity: no controller given")
	}
	if err := c.Link.Validate(); err != nil {
		return nil, err
	}
	if err := plant.ValidateWorkload(requests); err != nil {
		return nil, err
	}
	s := &disaggSearch{c: &c, requests: requests, pools: pools, cache: map[split]Evaluation{}}
	prefillChoices, decodeChoices := c.choices(pools[0]), c.choices(pools[1])
	searched := PoolControllers{Prefill: prefillChoices[0], Decode: decodeChoices[0]}
	maxPool := MaxSize(c.Search.MaxReplicas, 1)
	decodeCap := maxPool
	if c.DecodeCap > 0 {
		decodeCap = min(c.DecodeCap, maxPool)
	}
	var best SplitEvaluation
	found := false
	// used are the splits the searches' decisions used, by prefill then
	// decode pool: not those a search simulated ahead on spare jobs and
	// did not need, so that the report does not depend on Jobs.
	var used []SplitEvaluation
	for p := 1; p <= maxPool; p++ {
		limit := decodeCap
		if found {
			limit = best.PrefillReplicas + best.DecodeReplicas - p
		} else if p > decodeCap {
			break // no prefill pool up to the cap met the target
		}
		limit = min(limit, maxPool, fleet.MaxReplicas-p)
		if limit < 1 {
			break
		}
		res, err := Search(ctx, func(ctx context.Context, d int) (Evaluation, error) {
			return s.evaluate(ctx, split{p, d, searched})
		}, SearchSettings{Target: c.Search.Target, MaxReplicas: limit, Jobs: c.Search.Jobs, Used: func(Evaluation) { c.progress() }})
		var unreachable *UnreachableError
		if err != nil && !errors.As(err, &unreachable) {
			return nil, err
		}
		for _, e := range res.Evaluations {
			// The search's sizes are the decode pool's; the split's own
			// evaluation counts both pools (evaluate).
			d := e.Replicas
			used = append(used, SplitEvaluation{PrefillReplicas: p, DecodeReplicas: d, Evaluation: s.cache[split{p, d, searched}]})
		}
		if res.Replicas == nil {
			continue
		}
		d := *res.Replicas
		e := s.cache[split{p, d, searched}]
		total := best.PrefillReplicas + best.DecodeReplicas
		if !found || p+d < total || (p+d == total && e.EnergyPerOutputTokenJ < best.EnergyPerOutputTokenJ) {
			best, found = SplitEvaluation{PrefillReplicas: p, DecodeReplicas: d, Evaluation: e}, true
		}
	}
	report := &DisaggReport{
		KVTransferBandwidthGBps: c.Link.BandwidthGBps, KVTransferLatencyS: c.Link.LatencyS,
		SearchControllers: searched, Evaluations: append([]SplitEvaluation{}, used...), PoolControllers: []PoolControllerEvaluation{},
	}
	if !found {
		unreachable := &DisaggUnreachableError{Target: c.Search.Target}
		for i, e := range report.Evaluations {
			if i == 0 || e.Attainment > unreachable.Best.Attainment {
				unreachable.Best = e
			}
		}
		return report, unreachable
	}
	total := best.PrefillReplicas + best.DecodeReplicas
	report.PrefillReplicas, report.DecodeReplicas, report.Replicas = &best.PrefillReplicas, &best.DecodeReplicas, &total
	var pairs []PoolControllers
	for _, prefill := range prefillChoices {
		for _, decode := range decodeChoices {
			pairs = append(pairs, PoolControllers{Prefill: prefill, Decode: decode})
		}
	}
	evals, err := EvaluateEach(ctx, len(pairs), c.Search.Jobs, c.Search.Target, func(ctx context.Context, i int) (Evaluation, error) {
		return s.evaluate(ctx, split{best.PrefillReplicas, best.DecodeReplicas, pairs[i]})
	})
	if err != nil {
		return nil, err
	}
	for i, e := range evals {
		report.PoolControllers = append(report.PoolControllers, PoolControllerEvaluation{PoolControllers: pairs[i], Evaluation: e})
		c.progress()
	}
	if i, ok := Cheapest(evals); ok {
		report.EnergyMinimalPoolControllers = &pairs[i]
	}
	return report, nil
}
