package fleet

import (
	"math"

	"servesim/internal/plant"
)

// result assembles the Result once every replica has finished.
func (e *engine) result() *Result {
	steps := 0
	for _, r := range e.replicas {
		steps = max(steps, r.Totals.Steps)
	}
	power, queued := e.sums.series(steps)
	res := &Result{
		Router:           e.router.Name(),
		Groups:           e.cfg.Groups,
		Replicas:         e.replicas,
		Requests:         e.records,
		Assignment:       e.assignment,
		WorkloadChecksum: e.checksum(),
		Steps:            steps,
		PowerW:           power,
		Queued:           queued,
	}
	res.Metrics, res.SLO = e.fleetMetrics(res)
	return res
}

// runElasticResult runs an elastic fleet and returns its result.
func (e *engine) runElasticResult() (*Result, error) {
	_, res, err := e.elasticResult()
	return res, err
}

// elasticResult runs an elastic fleet and returns the run and its result:
// a disaggregated fleet's with its pools' block.
func (e *engine) elasticResult() (*elastic, *Result, error) {
	el, err := e.runElastic(e.cfg.Scaling)
	if err != nil {
		return nil, nil, err
	}
	e.elastic = true
	res := e.result()
	res.Scaling = el.scalingResult()
	if el.pools != nil {
		res.Disaggregation = el.pools.report(res)
	}
	return el, res, nil
}

// checksum is the workload checksum of the fleet's requests.
func (e *engine) checksum() string {
	if e.stream != nil {
		return e.stream.ws.Checksum()
	}
	if e.cfg.checksum != nil {
		return e.cfg.checksum(e.requests)
	}
	return plant.WorkloadChecksum(e.requests)
}

// fleetMetrics combines the replicas' runs into the fleet's metrics and
// slo block (its attainment over every request, each judged by its
// replica's objectives, its goodput over the fleet duration):
//   - the request metrics (completed_fraction, the TTFT, TPOT and latency
//     means and 95th percentiles, the two violation rates, the unfinished
//     counts) are the reference's formulas over every request, each judged
//     by the SLOs of the profile of the replica that served it;
//   - energy_j is the sum over replicas; energy_per_output_token_j is it
//     divided by max(1, the completed output tokens of the fleet), and
//     output_throughput_tokens_per_s is those tokens over the fleet
//     duration (the longest replica's, at least one time step);
//   - peak_power_w and peak_queued_requests are the maxima over steps of the
//     sums over the replicas running the step;
//   - peak_temperature_c, peak_kv_tokens, the three violation values and
//     peak_queued_requests_at_minimum_clock are maxima over replicas;
//   - decode_stall_fraction is the stalled steps over the steps with
//     decoding requests, both summed over replicas.
func (e *engine) fleetMetrics(res *Result) (plant.Metrics, plant.SLOReport) {
	p := e.cfg.Plant
	durationS := 0.0
	for _, r := range res.Replicas {
		durationS = math.Max(durationS, r.Totals.DurationS)
	}
	if e.elastic {
		// Its replicas start late: the grid's span, as a fixed fleet's
		// longest replica spans it.
		end := 0.0
		for range res.Steps {
			end += p.TimeStepS
		}
		durationS = end - p.TimeStepS
	}
	durationS = math.Max(durationS, p.TimeStepS)
	m, slo := e.requestMetrics(res, durationS)
	energyJ := 0.0
	activeSteps, stalledSteps := 0, 0
	m.PeakTemperatureC = p.AmbientTemperatureC
	for _, r := range res.Replicas {
		rm := &r.Result.Metrics
		energyJ += rm.EnergyJ
		activeSteps += r.Totals.ActiveSteps
		stalledSteps += r.Totals.StalledSteps
		m.PeakTemperatureC = math.Max(m.PeakTemperatureC, rm.PeakTemperatureC)
		m.PeakKVTokens = math.Max(m.PeakKVTokens, rm.PeakKVTokens)
		m.PowerViolationW = math.Max(m.PowerViolationW, rm.PowerViolationW)
		m.ThermalViolationC = math.Max(m.ThermalViolationC, rm.ThermalViolationC)
		m.KVViolationTokens = math.Max(m.KVViolationTokens, rm.KVViolationTokens)
		m.PeakQueuedRequestsAtMinimumClock = math.Max(m.PeakQueuedRequestsAtMinimumClock, rm.PeakQueuedRequestsAtMinimumClock)
	}
	// RecordMetrics leaves the completed output tokens in the throughput
	// and max(1, them) in the energy per token.
	m.OutputThroughputTokensPerS /= durationS
	m.EnergyJ = energyJ
	m.EnergyPerOutputTokenJ = energyJ / m.EnergyPerOutputTokenJ
	for t := range res.Steps {
		m.PeakPowerW = math.Max(m.PeakPowerW, res.PowerW[t])
		m.PeakQueuedRequests = math.Max(m.PeakQueuedRequests, float64(res.Queued[t]))
	}
	if activeSteps > 0 {
		m.DecodeStallFraction = float64(stalledSteps) / float64(activeSteps)
	}
	return m, slo
}

// requestMetrics are the request metrics of the fleet (see fleetMetrics)
// and its slo block over durationS (see targets), from the records of a
// workload held whole or the samples of a streamed one.
func (e *engine) requestMetrics(res *Result, durationS float64) (plant.Metrics, plant.SLOReport) {
	targets := e.targets()
	if s := e.stream; s != nil {
		tally := plant.NewRecordTally(e.cfg.Plant.ReportingHorizonS, targets)
		for _, w := range s.writers {
			tally.Merge(&w.tally)
		}
		return s.samples.metrics(&tally, s.ws.Loaded(), targets, durationS)
	}
	return plant.RecordMetrics(res.Requests, e.cfg.Plant.ReportingHorizonS, func(i int) plant.SLO {
		return e.slo(res.Assignment[i])
	}, targets, durationS)
}

// targets are the objectives the fleet's slo block names: those every
// replica is judged by, or, when they differ (groups of profiles with other
// SLOs and no SLO flags), NaN TTFT and TPOT objectives (null in the
// document), each request being judged by its replica's.
func (e *engine) targets() plant.SLO {
	targets := e.slo(0)
	for k := range e.specs {
		if e.slo(k) != targets {
			return plant.SLO{TTFTSeconds: math.NaN(), TPOTSeconds: math.NaN(), E2ESeconds: targets.E2ESeconds}
		}
	}
	return targets
}

// slo is what replica k's requests are judged by: its profile's objectives
// unless Options.SLO sets them (objectives, worked out once per group).
func (e *engine) slo(k int) plant.SLO {
	group := 0 // a request an elastic fleet never routed: its one group's
	if k >= 0 && k < len(e.specs) {
		group = e.specs[k].group
	}
	return e.objectives[group]
}

// objectivesByGroup are the objectives each group's requests are judged
// by. Under the batched service model they come from its baseline, a
// thousand iterations of its cost model: worked out once here, not at
// every request judged.
func objectivesByGroup(cfg *Config) []plant.SLO {
	out := make([]plant.SLO, len(cfg.Groups))
	for g := range cfg.Groups {
		out[g] = cfg.Options.SLO.ObjectivesFor(cfg.Groups[g].Profile, cfg.Options.Service)
	}
	return out
}
