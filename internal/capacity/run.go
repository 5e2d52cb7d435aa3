package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"servesim/internal/fleet"
	"servesim/internal/numeric"
	"servesim/internal/plant"
)

// Capacity is a capacity study: how many replicas of a fleet serve a
// workload within its SLOs, and at that size which clock controller spends
// the least energy.
type Capacity struct {
	// Plant holds the plant parameters every replica shares; its Profile is
	// replaced by each group's.
	Plant plant.Plant
	// Unit is the fleet of size 1: size N runs every group with N times its
	// replicas. A group with an empty Controller takes each of Controllers
	// in turn.
	Unit       []fleet.Group
	Router     string // router name, as fleet.NewRouter takes it
	RouterSeed uint64 // seed of the random router
	// Controllers are the clock controllers compared at the answer; the
	// search runs the first. At least one.
	Controllers []string
	// SLO judges the requests; a zero TTFT or TPOT objective is that of
	// the profile of the replica serving the request.
	SLO plant.SLO
	// Engine turns on the plant's engine features in every replica.
	Engine plant.EngineOptions
	// Sessions are the requests' sessions, for the session router; nil
	// for none.
	Sessions fleet.SessionSource
	// Service is every replica's service model (the reference's when
	// zero).
	Service plant.ServiceModel
	// ControllerOptions are the settings of every replica's controller
	// (fleet.Config.ControllerOptions).
	ControllerOptions plant.ControllerOptions
	// Search sets the target, the largest size (capped so that the fleet
	// stays within fleet.MaxReplicas) and the parallelism; its Used is replaced.
	Search SearchSettings
	// Progress, when set, is called once per evaluation used (at most
	// MaxEvaluations), never concurrently.
	Progress func()
	// StopWhenLost stops a simulation once the requests it has lost (final
	// records that missed their objectives, and requests waiting longer
	// than their TTFT objective) put the target out of reach: such a
	// fleet fails, and its evaluation says it stopped early
	// (Evaluation.StoppedEarly). The search's decisions, and so its
	// answer, are the same; an undersized fleet costs a fraction of its
	// run, and its backlog no memory. The largest size always runs
	// whole, and only streamed fleets stop (see streamable). capacity
	// --over-time sets it. Evaluations of either kind decide alike, so
	// it is not part of the grid's digest: records of whole simulations
	// serve a study that stops, and the other way round.
	StopWhenLost bool
	// Simulated, when set, is called after each fleet simulation, with its
	// size and the controller it ran (maybe concurrently): evaluations
	// that Search.Known supplies are not simulated.
	Simulated func(size int, controller string)
}

// Report is the outcome of a capacity study.
type Report struct {
	SearchResult
	// replicas_per_size: the replicas of the unit fleet; a size of N runs
	// N times as many.
	ReplicasPerSize int    `json:"replicas_per_size"`
	Router          string `json:"router"`            // router: the router's name
	SearchedWith    string `json:"search_controller"` // search_controller: the controller the search ran
	// controllers: the answer simulated with each controller given, in
	// order (the first is the search's own evaluation); empty when the
	// target is unreachable.
	Controllers []ControllerEvaluation `json:"controllers"`
	// energy_minimal_controller: of the controllers meeting the target at
	// the answer, the one with the lowest energy per output token (the
	// first on a tie); nil (null) when none does.
	EnergyMinimalController *string `json:"energy_minimal_controller"`
}

// ControllerEvaluation is the answer's evaluation under one controller.
type ControllerEvaluation struct {
	Controller string `json:"controller"` // controller: the controller spec
	Evaluation
}

// MaxEvaluations bounds the evaluations a study uses: the search's and one
// per extra controller.
func (c *Capacity) MaxEvaluations() int {
	return MaxSearchSteps(c.maxSize()) + max(0, len(c.Controllers)-1)
}

// maxSize is the largest size searched: Search.MaxReplicas (or its
// default), capped so that the fleet stays within fleet.MaxReplicas.
func (c *Capacity) maxSize() int { return MaxSize(c.Search.MaxReplicas, c.perSize()) }

// MaxSize is the largest size a capacity search of the given
// --max-replicas (0: DefaultMaxReplicas) simulates with a unit
// fleet of perSize replicas: within fleet.MaxReplicas replicas in all.
func MaxSize(maxReplicas, perSize int) int {
	if maxReplicas == 0 {
		maxReplicas = DefaultMaxReplicas
	}
	return max(1, min(maxReplicas, fleet.MaxReplicas/max(1, perSize)))
}

// perSize is the number of replicas of the unit fleet.
func (c *Capacity) perSize() int {
	n := 0
	for _, g := range c.Unit {
		n += g.Replicas
	}
	return n
}

// capacityRun is a study checked and ready to simulate fleet sizes.
type capacityRun struct {
	c        *Capacity
	requests []plant.Request
	router   string // the router's name
	// sizeJobs sizes are simulated at once, each on fleetJobs goroutines.
	// A state-free router simulates a fleet's replicas in parallel: the
	// jobs go there, and sizes are simulated one at a time (nothing is
	// simulated in vain). Otherwise sizes run in parallel.
	sizeJobs, fleetJobs int
	// streamed: the fleets run as fleet.SimulateStream runs them, on the
	// requests read from memory, keeping 26 bytes a request where
	// fleet.SimulateContext keeps a record and an assignment (80 bytes) and a
	// copy of the request (32 bytes) for its replica; the evaluation is
	// the same, bit for bit (streamable).
	streamed bool
}

// prepare checks the study and the requests (sorted by arrival, unique
// IDs) and shares out the jobs.
func (c *Capacity) prepare(requests []plant.Request) (*capacityRun, error) {
	if len(c.Controllers) == 0 {
		return nil, errors.New("capacity: no controller given")
	}
	if _, err := fleet.Size(c.Unit); err != nil {
		return nil, err
	}
	if err := plant.ValidateWorkload(requests); err != nil {
		return nil, err
	}
	router, err := fleet.NewRouter(c.Router, c.RouterSeed)
	if err != nil {
		return nil, err
	}
	r := &capacityRun{c: c, requests: requests, router: router.Name(), sizeJobs: max(1, c.Search.Jobs), fleetJobs: 1}
	if fleet.IsStateFree(router) {
		r.sizeJobs, r.fleetJobs = 1, max(1, c.Search.Jobs)
	}
	// Fleets simulated at once hold their prefix caches together: no more
	// of the largest at once than plant.MaxLiveKVBlocks holds.
	largest := c.maxSize() * c.perSize()
	atOnce := plant.PlantsAtOnce(c.Plant, c.Engine)
	if largest > atOnce {
		return nil, fmt.Errorf("capacity: %d replicas hold more than %d prefix-cache KV blocks at once", largest, plant.MaxLiveKVBlocks)
	}
	r.sizeJobs = max(1, min(r.sizeJobs, atOnce/largest))
	r.streamed = c.streamable()
	return r, nil
}

// streamable reports whether the study's fleets can run streamed
// (capacityRun.streamed) with the evaluation Judge would give them: no
// controller needs the whole workload ahead (plant.Clairvoyant), and the
// objectives each replica's requests are judged by in the fleet's slo
// block are those Judge takes (they differ only for a batched service
// model given a zero objective).
func (c *Capacity) streamable() bool {
	specs := slices.Clone(c.Controllers)
	for _, g := range c.Unit {
		if g.Controller != "" {
			specs = append(specs, g.Controller)
		}
		if c.SLO.ObjectivesFor(g.Profile, c.Service) != c.SLO.OrProfile(g.Profile) {
			return false
		}
	}
	for _, spec := range specs {
		controller, err := plant.NewController(spec)
		if err != nil {
			return false
		}
		if _, clairvoyant := controller.(plant.Clairvoyant); clairvoyant {
			return false
		}
	}
	return true
}

// simulate runs the fleet cfg on the study's requests: streamed (from
// memory) when it can, else with fleet.SimulateContext.
func (r *capacityRun) simulate(ctx context.Context, cfg fleet.Config) (*fleet.Result, error) {
	if !r.streamed {
		return fleet.SimulateContext(ctx, r.requests, cfg)
	}
	// Checked by prepare; the search reports no checksum.
	ws, err := plant.OpenWorkloadStream(ctx, plant.CheckedWorkload{Requests: r.requests}, 0, nil, 0)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	return fleet.SimulateStream(ctx, ws, cfg)
}

// evaluate simulates the fleet of the given size, controller driving the
// groups without a controller of their own, and judges it.
func (r *capacityRun) evaluate(ctx context.Context, size int, controller string) (Evaluation, error) {
	c := r.c
	groups := slices.Clone(c.Unit)
	for i := range groups {
		groups[i].Replicas *= size
		if groups[i].Controller == "" {
			groups[i].Controller = controller
		}
	}
	router, err := fleet.NewRouter(c.Router, c.RouterSeed)
	if err != nil {
		return Evaluation{}, err
	}
	cfg := fleet.Config{Plant: c.Plant, Groups: groups, Router: router, Sessions: c.Sessions,
		Options: plant.Options{Summary: true, SLO: c.SLO, Engine: c.Engine, Service: c.Service}, Jobs: r.fleetJobs, ControllerOptions: c.ControllerOptions,
		SkipReplicaChecksums: true, TTFTOnly: true}
	if c.StopWhenLost && size < c.maxSize() {
		// The largest size runs whole: an unreachable target's best is
		// then a whole simulation's.
		cfg.StopBelowAttainment = c.Search.Target
	}
	res, err := r.simulate(ctx, cfg)
	if c.Simulated != nil {
		c.Simulated(size, controller)
	}
	if lost := (*fleet.LostError)(nil); errors.As(err, &lost) {
		return stoppedEvaluation(size), nil
	}
	if err != nil {
		return Evaluation{}, err
	}
	e := Judge(res, groups, c.SLO)
	e.Replicas = size
	return e, nil
}

// Run runs the study on requests (sorted by arrival, unique IDs):
// Search over fleet sizes with the first controller, then the
// answer with every other controller. With an unreachable target the
// report (no answer, the best attainment) comes with an *UnreachableError.
func Run(ctx context.Context, requests []plant.Request, c Capacity) (*Report, error) {
	run, err := c.prepare(requests)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	progress := func() {
		if c.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			c.Progress()
		}
	}
	search := c.Search
	search.MaxReplicas, search.Jobs = c.maxSize(), run.sizeJobs
	search.Used = func(Evaluation) { progress() }
	found, err := Search(ctx, func(ctx context.Context, size int) (Evaluation, error) {
		return run.evaluate(ctx, size, c.Controllers[0])
	}, search)
	var unreachable *UnreachableError
	if err != nil && !errors.As(err, &unreachable) {
		return nil, err
	}
	report := &Report{SearchResult: *found, ReplicasPerSize: c.perSize(), Router: run.router,
		SearchedWith: c.Controllers[0], Controllers: []ControllerEvaluation{}}
	answer, ok := found.Answer()
	if !ok {
		return report, err
	}
	others, err := EvaluateEach(ctx, len(c.Controllers)-1, run.sizeJobs, search.Target, func(ctx context.Context, i int) (Evaluation, error) {
		e, err := run.evaluate(ctx, answer.Replicas, c.Controllers[i+1])
		progress()
		return e, err
	})
	if err != nil {
		return nil, err
	}
	evals := append([]Evaluation{answer}, others...)
	for i, e := range evals {
		report.Controllers = append(report.Controllers, ControllerEvaluation{Controller: c.Controllers[i], Evaluation: e})
	}
	if best, ok := Cheapest(evals); ok {
		report.EnergyMinimalController = &c.Controllers[best]
	}
	return report, nil
}

// Judge evaluates a fleet run of groups for a capacity search. The
// attainment judges each request by slo, a zero TTFT or TPOT objective
// taken from the profile of the replica that served it (plant.SLO.Met;
// unfinished requests count as misses); p99_ttft_s is numpy's linear
// percentile of the completed requests' TTFT; the completed fraction, p95
// TTFT, energy per output token and peak power are the run's fleet
// metrics. The energy totals divide the fleet's energy_j (summed over the
// replicas): by the completed requests (energy_per_request_j, NaN when
// none completed), by 3.6e6 (energy_kwh), and by the run's duration, its
// steps times the time step (mean_power_w, computed as the mean over the
// steps of the fleet's power series, whose sum times the time step is
// that energy). Replicas is the run's replica count.
//
// A run without request records (fleet.SimulateStream) is judged by its slo
// block: its attainment and its TTFT's 99th percentile are those numbers
// (the same, bit for bit, when its replicas' objectives are slo's
// resolved by their profiles).
func Judge(res *fleet.Result, groups []fleet.Group, slo plant.SLO) Evaluation {
	if res.Requests == nil {
		m := &res.Metrics
		e := Evaluation{
			Replicas:              len(res.Replicas),
			Attainment:            res.SLO.Attainment,
			CompletedFraction:     m.CompletedFraction,
			P95TTFTS:              m.P95TTFTS,
			P99TTFTS:              res.SLO.TTFTS.P99,
			EnergyPerOutputTokenJ: m.EnergyPerOutputTokenJ,
			PeakPowerW:            m.PeakPowerW,
		}
		requests := 0
		for _, rep := range res.Replicas {
			requests += rep.RequestsRouted
		}
		completed := requests - int(m.UnfinishedRequestsAtEnd)
		e.setEnergyTotals(m.EnergyJ, completed, meanPowerW(res))
		return e
	}
	slos := make([]plant.SLO, len(groups))
	for g := range groups {
		slos[g] = slo.OrProfile(groups[g].Profile)
	}
	met := 0
	ttft := make([]float64, 0, len(res.Requests))
	for i := range res.Requests {
		r := &res.Requests[i]
		if slos[res.Replicas[res.Assignment[i]].Group].Met(r) {
			met++
		}
		if r.Completed() {
			ttft = append(ttft, r.TTFTS())
		}
	}
	m := &res.Metrics
	e := Evaluation{
		Replicas:              len(res.Replicas),
		Attainment:            float64(met) / float64(max(1, len(res.Requests))),
		CompletedFraction:     m.CompletedFraction,
		P95TTFTS:              m.P95TTFTS,
		P99TTFTS:              numeric.PercentileLinearSelect(ttft, 99),
		EnergyPerOutputTokenJ: m.EnergyPerOutputTokenJ,
		PeakPowerW:            m.PeakPowerW,
	}
	e.setEnergyTotals(m.EnergyJ, len(ttft), meanPowerW(res))
	return e
}

// JoulesPerKWh converts energy in J to kWh.
const JoulesPerKWh = 3.6e6

// setEnergyTotals sets the energy totals of a run that spent energyJ,
// completed completed requests and drew meanPowerW on average.
func (e *Evaluation) setEnergyTotals(energyJ float64, completed int, meanPowerW float64) {
	e.EnergyPerRequestJ = math.NaN()
	if completed > 0 {
		e.EnergyPerRequestJ = energyJ / float64(completed)
	}
	e.EnergyPer1kRequestsKJ = e.EnergyPerRequestJ // 1000 requests x J/request / (1000 J/kJ)
	e.EnergyKWh = energyJ / JoulesPerKWh
	e.MeanPowerW = meanPowerW
}

// stoppedEvaluation is the evaluation of a fleet of size whose simulation
// stopped: it fails the target, and its numbers are unknown (NaN). Not
// even the bound on its attainment is kept: when its replicas run in
// parallel, the step at which the run stops, and so the bound, depends
// on how the goroutines were scheduled, and a study's document must not.
func stoppedEvaluation(size int) Evaluation {
	nan := math.NaN()
	return Evaluation{Replicas: size, Attainment: nan, StoppedEarly: true,
		CompletedFraction: nan, P95TTFTS: nan, P99TTFTS: nan, EnergyPerOutputTokenJ: nan, PeakPowerW: nan,
		EnergyPerRequestJ: nan, EnergyPer1kRequestsKJ: nan, EnergyKWh: nan, MeanPowerW: nan}
}

// meanPowerW is the fleet's mean power over the run: the mean of its power
// series over the steps (0 without a step).
func meanPowerW(res *fleet.Result) float64 {
	if res.Steps == 0 {
		return 0
	}
	sum := 0.0
	for _, w := range res.PowerW[:res.Steps] {
		sum += w
	}
	return sum / float64(res.Steps)
}
