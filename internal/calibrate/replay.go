package calibrate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"servesim/internal/benchload"
	"servesim/internal/cards"
	"servesim/internal/numeric"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// Setup is the simulated server a run is replayed on: a profile (its
// clock levels and powers), a plant (its limits; its KV capacity is the
// cards' unless KVCapacityGiven), the cards and the engine limits.
type Setup struct {
	Profile *profile.Profile
	Plant   plant.Plant
	// KVCapacityGiven keeps Plant.KVCapacityTokens instead of sizing the
	// KV cache from the cards.
	KVCapacityGiven bool
	GPU             cards.GPU
	Model           cards.Model
	// MaxNumSeqs and MaxNumBatchedTokens are the engine's limits; 0 takes
	// vLLM's defaults for the GPU.
	MaxNumSeqs, MaxNumBatchedTokens int
	// GPUMemoryUtilization sizes the KV cache; 0 takes vLLM's 0.9.
	GPUMemoryUtilization float64
	// Seeds are the seeds of the arrival processes a run at a finite
	// rate is replayed with (its metrics are the mean over them); none
	// means one, seed 0.
	Seeds []uint64
}

// service is the batched model of the setup on gpu.
func (s *Setup) service(gpu cards.GPU) plant.ServiceModel {
	svc := plant.NewBatchedService(gpu, s.Model)
	if s.MaxNumSeqs > 0 {
		svc.MaxNumSeqs = s.MaxNumSeqs
	}
	if s.MaxNumBatchedTokens > 0 {
		svc.MaxNumBatchedTokens = s.MaxNumBatchedTokens
	}
	if s.GPUMemoryUtilization > 0 {
		svc.GPUMemoryUtilization = s.GPUMemoryUtilization
	}
	return svc
}

// plantFor is the setup's plant under svc: its profile and KV capacity.
func (s *Setup) plantFor(svc plant.ServiceModel) (plant.Plant, error) {
	p := s.Plant
	p.Profile = s.Profile
	if !s.KVCapacityGiven {
		kv, err := svc.KVCapacityTokens()
		if err != nil {
			return p, err
		}
		p.KVCapacityTokens = kv
	}
	return p, nil
}

// workload is the run's completed requests as the client sent them with
// the arrival process of seed: every request at 0 at an infinite rate,
// else vLLM's get_request delays (benchload.Arrivals). Failed requests are
// left out: their output lengths are unknown.
func (r *Run) workload(seed uint64) []plant.Request {
	var requests []plant.Request
	for _, q := range r.Requests {
		if !q.Failed && q.OutputTokens > 0 {
			requests = append(requests, plant.Request{ID: len(requests), PromptTokens: q.InputTokens, OutputTokens: q.OutputTokens})
		}
	}
	at := benchload.Arrivals(len(requests), r.RequestRate, r.burstiness(), rand.New(rand.NewPCG(seed, seed^0x5EED)))
	for i := range requests {
		requests[i].ArrivalTimeS = at[i]
	}
	return requests
}

// controller is the clock the run is replayed at: its locked level, else
// the top one.
func (r *Run) controller() plant.ClockController {
	if r.ClockMHz > 0 {
		return plant.FixedClock{MHz: r.ClockMHz}
	}
	return plant.MaxClock{}
}

// burstiness is the run's, 1 (Poisson) when not known.
func (r *Run) burstiness() float64 {
	if r.Burstiness > 0 {
		return r.Burstiness
	}
	return 1
}

// Replay simulates run on setup with gpu (the setup's card, or a
// candidate of a fit) at the run's clock (its locked level, else the
// profile's top one): a closed loop exactly
// when the run had a concurrency cap, an open one with the run's arrival
// process otherwise (metrics averaged over setup.Seeds at a finite rate).
func Replay(run *Run, setup *Setup, gpu cards.GPU) (Metrics, error) {
	svc := setup.service(gpu)
	p, err := setup.plantFor(svc)
	if err != nil {
		return Metrics{}, err
	}
	seeds := setup.Seeds
	if len(seeds) == 0 || math.IsInf(run.RequestRate, 1) {
		seeds = []uint64{0}
	}
	var sum Metrics
	power, energy := 0.0, 0.0
	for _, seed := range seeds {
		requests := run.workload(seed)
		if len(requests) == 0 {
			return Metrics{}, fmt.Errorf("bench file %s: no completed request to replay", run.File)
		}
		// A replay runs until its requests complete, however long.
		p.MaxSimulationTimeS = max(p.MaxSimulationTimeS, 10*run.DurationS+requests[len(requests)-1].ArrivalTimeS+3600)
		opt := plant.Options{Summary: true, RequestLog: true, Service: svc, Engine: plant.EngineOptions{Preemption: plant.PreemptionRecompute}, MaxConcurrency: run.MaxConcurrency}
		res, err := plant.Simulate(requests, p, plant.ChunkedPrefill{}, run.controller(), opt)
		if err != nil {
			return Metrics{}, err
		}
		m, err := recordMetrics(res.Log.Records)
		if err != nil {
			return Metrics{}, fmt.Errorf("bench file %s: %w", run.File, err)
		}
		sum.MeanTTFTS += m.MeanTTFTS / float64(len(seeds))
		sum.P99TTFTS += m.P99TTFTS / float64(len(seeds))
		sum.MeanTPOTS += m.MeanTPOTS / float64(len(seeds))
		sum.OutputThroughput += m.OutputThroughput / float64(len(seeds))
		if res.Steps > 0 {
			power += res.Metrics.EnergyJ / (float64(res.Steps) * p.TimeStepS) / float64(len(seeds))
		}
		energy += res.Metrics.EnergyPerOutputTokenJ / float64(len(seeds))
	}
	// The board's power and energy under the profile's powers.
	sum.MeanPowerW, sum.EnergyPerTokenJ = &power, &energy
	return sum, nil
}

// recordMetrics are the metrics of simulated records, as vLLM computes
// them from its requests: the duration from the first send to the last
// completion.
func recordMetrics(records []plant.RequestRecord) (Metrics, error) {
	var ttfts, tpots []float64
	first, last, tokens := math.Inf(1), math.Inf(-1), 0
	for i := range records {
		r := &records[i]
		if !r.Completed() {
			return Metrics{}, errors.New("the replay left requests unfinished")
		}
		ttfts = append(ttfts, r.TTFTS())
		if r.OutputTokens > 1 {
			tpots = append(tpots, (r.LatencyS()-r.TTFTS())/float64(r.OutputTokens-1))
		}
		first, last = min(first, r.ArrivalTimeS), max(last, r.CompletionTimeS)
		tokens += r.OutputTokens
	}
	m := Metrics{MeanTTFTS: numeric.Mean(ttfts), P99TTFTS: numeric.PercentileLinear(ttfts, 99)}
	if len(tpots) > 0 {
		m.MeanTPOTS = numeric.Mean(tpots)
	}
	if last > first {
		m.OutputThroughput = float64(tokens) / (last - first)
	}
	return m, nil
}
