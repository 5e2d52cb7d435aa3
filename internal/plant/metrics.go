package plant

import "errors"

// Metrics are the reference's ServingMetrics. A value that is undefined
// because no request completed (a mean, a percentile or a violation rate of
// nothing) is NaN, written as null in JSON.
type Metrics struct {
	// completed_fraction: completed requests / max(1, all requests).
	CompletedFraction float64 `json:"completed_fraction"`
	// mean_ttft_s: mean of first_token_time_s - arrival_time_s over completed requests, s.
	MeanTTFTS float64 `json:"mean_ttft_s"`
	// p95_ttft_s: 95th percentile (numpy linear) of time to first token over completed requests, s.
	P95TTFTS float64 `json:"p95_ttft_s"`
	// mean_tpot_s: mean of (completion - first token) / max(1, output_tokens-1) over completed requests, s.
	MeanTPOTS float64 `json:"mean_tpot_s"`
	// p95_tpot_s: 95th percentile (numpy linear) of that time per output token, s.
	P95TPOTS float64 `json:"p95_tpot_s"`
	// mean_latency_s: mean of completion_time_s - arrival_time_s over completed requests, s.
	MeanLatencyS float64 `json:"mean_latency_s"`
	// output_throughput_tokens_per_s: output tokens of completed requests / max(last - first step time, time step), tokens/s.
	OutputThroughputTokensPerS float64 `json:"output_throughput_tokens_per_s"`
	// energy_j: cumulative energy at the last step (0 without steps), J.
	EnergyJ float64 `json:"energy_j"`
	// energy_per_output_token_j: energy_j / max(1, output tokens of completed requests), J/token.
	EnergyPerOutputTokenJ float64 `json:"energy_per_output_token_j"`
	// peak_power_w: maximum step power (at least 0), W.
	PeakPowerW float64 `json:"peak_power_w"`
	// peak_temperature_c: maximum step temperature (at least ambient), degrees C.
	PeakTemperatureC float64 `json:"peak_temperature_c"`
	// peak_kv_tokens: maximum KV-cache occupancy (at least 0), tokens.
	PeakKVTokens float64 `json:"peak_kv_tokens"`
	// ttft_violation_rate: fraction of completed requests whose TTFT exceeds the TTFT SLO: the profile's (2 x baseline) unless Options.SLO sets one.
	TTFTViolationRate float64 `json:"ttft_violation_rate"`
	// tpot_violation_rate: fraction of completed requests whose TPOT exceeds the TPOT SLO: the profile's (1.5 x baseline) unless Options.SLO sets one.
	TPOTViolationRate float64 `json:"tpot_violation_rate"`
	// power_violation_w: max(0, peak_power_w - power limit), W.
	PowerViolationW float64 `json:"power_violation_w"`
	// thermal_violation_c: max(0, peak_temperature_c - thermal limit), degrees C.
	ThermalViolationC float64 `json:"thermal_violation_c"`
	// kv_violation_tokens: max(0, peak_kv_tokens - KV capacity), tokens.
	KVViolationTokens float64 `json:"kv_violation_tokens"`
	// decode_stall_fraction: share of steps with decoding requests that generated no decode token (increment <= TokenEpsilon); 0 without such steps.
	DecodeStallFraction float64 `json:"decode_stall_fraction"`
	// peak_queued_requests: maximum over steps of prefill queue + decoding requests.
	PeakQueuedRequests float64 `json:"peak_queued_requests"`
	// peak_queued_requests_at_minimum_clock: the same maximum over steps whose realized clock is within 1e-9 MHz of the profile's minimum realized clock; 0 without such steps.
	PeakQueuedRequestsAtMinimumClock float64 `json:"peak_queued_requests_at_minimum_clock"`
	// unfinished_requests_at_reporting_horizon: requests arrived by the reporting horizon minus requests completed by it.
	UnfinishedRequestsAtReportingHorizon float64 `json:"unfinished_requests_at_reporting_horizon"`
	// unfinished_requests_at_end: requests never completed.
	UnfinishedRequestsAtEnd float64 `json:"unfinished_requests_at_end"`
	// reporting_horizon_s: the plant's reporting horizon, s.
	ReportingHorizonS float64 `json:"reporting_horizon_s"`
}

// stepStats accumulates the trajectory part of the metrics online, one step
// at a time, with the reference's arithmetic (np.max with an initial value,
// decode increments as differences of the cumulative decode tokens).
type stepStats struct {
	previousDecode    float64
	peakPowerW        float64
	peakTemperatureC  float64
	peakKVTokens      float64
	peakQueued        int // requests queued or decoding (the reference's sum of the two as floats, exact)
	peakQueuedAtMin   int
	activeSteps       int
	stalledSteps      int
	minimumClockMHz   float64 // realized clocks at or below this count as minimum
	anyAtMinimumClock bool
}

func newStepStats(p Plant) stepStats {
	return stepStats{
		peakTemperatureC: p.AmbientTemperatureC,
		minimumClockMHz:  p.Profile.MinRealizedClockMHz() + 1e-9,
	}
}

// add accounts for one step with cumulativeDecode tokens generated so far,
// which drew powerW, reached temperatureC, held kvTokens of KV and queued
// requests (waiting for or in prefill, or decoding: decodeActive of them),
// at a realized clock of realizedClockMHz.
func (a *stepStats) add(cumulativeDecode, powerW, temperatureC, kvTokens, realizedClockMHz float64, queued, decodeActive int) {
	increment := cumulativeDecode - a.previousDecode
	a.previousDecode = cumulativeDecode
	if decodeActive > 0 {
		a.activeSteps++
		if increment <= TokenEpsilon {
			a.stalledSteps++
		}
	}
	a.peakPowerW = pyMax(a.peakPowerW, powerW)
	a.peakTemperatureC = pyMax(a.peakTemperatureC, temperatureC)
	a.peakKVTokens = pyMax(a.peakKVTokens, kvTokens)
	a.peakQueued = max(a.peakQueued, queued)
	if realizedClockMHz <= a.minimumClockMHz {
		a.anyAtMinimumClock = true
		a.peakQueuedAtMin = max(a.peakQueuedAtMin, queued)
	}
}

// stepSpan is what the metrics take from a run's steps besides their
// statistics: the end of the first step and of the last (0 without
// steps), and the energy at the last.
type stepSpan struct {
	firstTimeS, lastTimeS, energyJ float64
}

// metrics combines the step statistics of the steps spanning span with
// the request statistics (the reference's _metrics, its violation rates
// judged by the SLO the requests were added with) and the slo block.
func (a *stepStats) metrics(span stepSpan, requests *requestStats, p Plant) (Metrics, SLOReport) {
	m := requests.metrics()
	duration := pyMax(span.lastTimeS-span.firstTimeS, p.TimeStepS)
	stall := 0.0
	if a.activeSteps > 0 {
		stall = float64(a.stalledSteps) / float64(a.activeSteps)
	}
	peakQueuedAtMin := 0.0
	if a.anyAtMinimumClock {
		peakQueuedAtMin = float64(a.peakQueuedAtMin)
	}
	m.OutputThroughputTokensPerS /= duration
	m.EnergyJ = span.energyJ
	m.EnergyPerOutputTokenJ = span.energyJ / m.EnergyPerOutputTokenJ
	m.PeakPowerW = a.peakPowerW
	m.PeakTemperatureC = a.peakTemperatureC
	m.PeakKVTokens = a.peakKVTokens
	m.PowerViolationW = pyMax(0, a.peakPowerW-p.PowerLimitW)
	m.ThermalViolationC = pyMax(0, a.peakTemperatureC-p.ThermalLimitC)
	m.KVViolationTokens = pyMax(0, a.peakKVTokens-p.KVCapacityTokens)
	m.DecodeStallFraction = stall
	m.PeakQueuedRequests = float64(a.peakQueued)
	m.PeakQueuedRequestsAtMinimumClock = peakQueuedAtMin
	return m, requests.sloReport(duration)
}

// RecordMetrics computes the metrics that depend on the request records
// alone, with the reference's formulas: completed_fraction, the TTFT, TPOT
// and latency means and 95th percentiles, the two violation rates
// (records[i] judged by the objectives judge(i) returns, resolved), the
// unfinished counts at horizonS and at the end, and reporting_horizon_s. Of
// the other fields, two carry what their formulas need:
// OutputThroughputTokensPerS holds the output tokens of the completed
// requests (to be divided by the duration) and EnergyPerOutputTokenJ holds
// max(1, those tokens) (to divide the energy by); the rest are zero, for
// the caller to fill. It also returns the slo block of the records over
// durationS seconds, each request meeting judge(i)'s objectives or not, the
// block naming targets as its objectives.
func RecordMetrics(records []RequestRecord, horizonS float64, judge func(i int) SLO, targets SLO, durationS float64) (Metrics, SLOReport) {
	stats := newRequestStats(horizonS, SLO{}, len(records))
	for i := range records {
		stats.judge = judge(i)
		stats.add(&records[i], stats.judge.TTFTSeconds, stats.judge.TPOTSeconds)
	}
	m := stats.metrics()
	stats.judge = targets
	return m, stats.sloReport(durationS)
}

// ComputeMetrics recomputes the metrics of r from its stored trajectory and
// request records under plant p (the reference's compute_metrics). It needs
// the full trajectory: r must come from Simulate with stride 1 and without
// Options.Summary.
func ComputeMetrics(r *Result, p Plant) (Metrics, error) {
	if r.Stride != 1 || r.Len() != r.Steps || r.Requests == nil {
		return Metrics{}, errors.New("compute_metrics needs the full trajectory and the request records (stride 1, no summary)")
	}
	if err := p.Validate(); err != nil {
		return Metrics{}, err
	}
	stats := newStepStats(p)
	var span stepSpan
	for i := range r.Len() {
		stats.add(r.CumulativeDecodeTokens[i], r.PowerW[i], r.TemperatureC[i], r.KVTokens[i], r.RealizedClockMHz[i], r.PrefillQueue[i]+r.DecodeActive[i], r.DecodeActive[i])
		span.lastTimeS, span.energyJ = r.TimeS[i], r.EnergyJ[i]
	}
	if r.Len() > 0 {
		span.firstTimeS = r.TimeS[0]
	}
	requests := newRequestStats(p.ReportingHorizonS, ProfileSLO(p.Profile), len(r.Requests))
	requests.addAll(r.Requests)
	m, _ := stats.metrics(span, requests, p)
	return m, nil
}
