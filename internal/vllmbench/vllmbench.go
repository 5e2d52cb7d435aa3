// Package vllmbench writes a simulated run in the keys of the result JSON
// that `vllm bench serve --save-result --save-detailed` saves
// (vllm/benchmarks/serve.py), so that scripts comparing benchmark runs
// compare a simulation with a measurement unchanged.
//
// The mapping: a request that completed is a successful one, a request
// still unfinished when the run ended is a failed one; the benchmark
// starts at the first arrival and, for the duration, ends at the last
// completion. The fluid plant produces a request's output tokens at one
// rate, so each of its inter-token latencies is its TPOT: itl statistics
// are over every token after the first, each request's TPOT counted
// output_tokens - 1 times (vLLM's flattened itls list). As in vLLM,
// statistics of no values are 0, tpot leaves out single-token requests,
// and percentiles are numpy's linear ones; the standard deviation is
// numpy's (population).
package vllmbench

import (
	"errors"
	"math"

	"servesim/internal/fleet"
	"servesim/internal/numeric"
	"servesim/internal/plant"
)

// Result is the document: vLLM's keys in vLLM's order, times in seconds
// in the per-request lists and in ms in the statistics.
type Result struct {
	DurationS            float64 `json:"duration"`               // duration: last completion minus first arrival, s (0 when nothing completed)
	Completed            int     `json:"completed"`              // completed: requests that completed
	Failed               int     `json:"failed"`                 // failed: requests unfinished when the run ended
	TotalInputTokens     int     `json:"total_input_tokens"`     // total_input_tokens: prompt tokens of the completed requests
	TotalOutputTokens    int     `json:"total_output_tokens"`    // total_output_tokens: output tokens of the completed requests
	RequestThroughput    float64 `json:"request_throughput"`     // request_throughput: completed / duration, requests/s
	RequestGoodput       float64 `json:"request_goodput"`        // request_goodput: requests meeting the SLO / duration, requests/s
	OutputThroughput     float64 `json:"output_throughput"`      // output_throughput: total_output_tokens / duration, tokens/s
	TotalTokenThroughput float64 `json:"total_token_throughput"` // total_token_throughput: (input + output tokens) / duration, tokens/s
	// Per request, in workload order (unfinished ones too, as vLLM lists
	// failed ones).
	InputLens  []int     `json:"input_lens"`  // input_lens: prompt tokens
	OutputLens []int     `json:"output_lens"` // output_lens: output tokens, 0 when unfinished
	TTFTs      []float64 `json:"ttfts"`       // ttfts: first token minus arrival, s; 0 without a first token
	Latencies  []float64 `json:"latencies"`   // latencies: completion minus arrival, s; 0 when unfinished

	MeanTTFTMs   float64 `json:"mean_ttft_ms"`
	MedianTTFTMs float64 `json:"median_ttft_ms"`
	StdTTFTMs    float64 `json:"std_ttft_ms"`
	P99TTFTMs    float64 `json:"p99_ttft_ms"`
	MeanTPOTMs   float64 `json:"mean_tpot_ms"`
	MedianTPOTMs float64 `json:"median_tpot_ms"`
	StdTPOTMs    float64 `json:"std_tpot_ms"`
	P99TPOTMs    float64 `json:"p99_tpot_ms"`
	MeanITLMs    float64 `json:"mean_itl_ms"`
	MedianITLMs  float64 `json:"median_itl_ms"`
	StdITLMs     float64 `json:"std_itl_ms"`
	P99ITLMs     float64 `json:"p99_itl_ms"`
	MeanE2ELMs   float64 `json:"mean_e2el_ms"`
	MedianE2ELMs float64 `json:"median_e2el_ms"`
	StdE2ELMs    float64 `json:"std_e2el_ms"`
	P99E2ELMs    float64 `json:"p99_e2el_ms"`
}

// FromPlant is the document of a single-GPU run that kept its request
// records (Result.Requests, or Result.Log with a summary); goodput counts
// the requests meeting the objectives of its slo block.
func FromPlant(res *plant.Result) (*Result, error) {
	records, err := plantRecords(res)
	if err != nil {
		return nil, err
	}
	slo := plant.SLO{TTFTSeconds: res.SLO.TTFTSLOSeconds, TPOTSeconds: res.SLO.TPOTSLOSeconds}
	if res.SLO.E2ESLOSeconds != nil {
		slo.E2ESeconds = *res.SLO.E2ESLOSeconds
	}
	return Compute(records, func(int) plant.SLO { return slo }), nil
}

// plantRecords are the request records a single-GPU run kept
// (Result.Requests, or Result.Log with a summary).
func plantRecords(res *plant.Result) ([]plant.RequestRecord, error) {
	records := []plant.RequestRecord(res.Requests)
	if res.Log != nil {
		records = res.Log.Records
	}
	if records == nil {
		return nil, errors.New("vllm-bench: the run kept no request records (plant.Options.RequestLog)")
	}
	return records, nil
}

// FromFleet is the document of a fleet run: every request, each judged by
// slo with a zero TTFT or TPOT objective taken from the profile of the
// replica that served it (as the fleet's metrics judge it).
func FromFleet(res *fleet.Result, slo plant.SLO) *Result {
	slos := make([]plant.SLO, len(res.Groups))
	for g := range res.Groups {
		slos[g] = slo.OrProfile(res.Groups[g].Profile)
	}
	return Compute(res.Requests, func(i int) plant.SLO { return slos[res.Replicas[res.Assignment[i]].Group] })
}

// Compute is the document of records, request i judged by slo(i)
// (resolved: no zero TTFT or TPOT objective).
func Compute(records []plant.RequestRecord, slo func(i int) plant.SLO) *Result {
	n := len(records)
	out := &Result{
		InputLens:  make([]int, n),
		OutputLens: make([]int, n),
		TTFTs:      make([]float64, n),
		Latencies:  make([]float64, n),
	}
	// The statistics' samples in seconds; itl is tpot again, for Repeated
	// to reorder.
	ttft, tpot, e2el, itl := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	itlCounts := make([]int, 0, n)
	firstArrival, lastCompletion := 0.0, 0.0
	good := 0
	for i := range records {
		r := &records[i]
		if i == 0 || r.ArrivalTimeS < firstArrival {
			firstArrival = r.ArrivalTimeS
		}
		out.InputLens[i] = r.PromptTokens
		if t := r.TTFTS(); !math.IsNaN(t) { // reached its first token
			out.TTFTs[i] = t
		}
		if !r.Completed() {
			out.Failed++
			continue
		}
		out.Completed++
		out.TotalInputTokens += r.PromptTokens
		out.TotalOutputTokens += r.OutputTokens
		out.OutputLens[i] = r.OutputTokens
		out.Latencies[i] = r.LatencyS()
		lastCompletion = max(lastCompletion, r.CompletionTimeS)
		ttft = append(ttft, r.TTFTS())
		e2el = append(e2el, r.LatencyS())
		if r.OutputTokens > 1 {
			tpot = append(tpot, r.TPOTS())
			itl = append(itl, r.TPOTS())
			itlCounts = append(itlCounts, r.OutputTokens-1)
		}
		if slo(i).Met(r) {
			good++
		}
	}
	if out.Completed > 0 {
		out.DurationS = lastCompletion - firstArrival
		out.RequestThroughput = float64(out.Completed) / out.DurationS
		out.RequestGoodput = float64(good) / out.DurationS
		out.OutputThroughput = float64(out.TotalOutputTokens) / out.DurationS
		out.TotalTokenThroughput = float64(out.TotalInputTokens+out.TotalOutputTokens) / out.DurationS
	}
	out.MeanTTFTMs, out.MedianTTFTMs, out.StdTTFTMs, out.P99TTFTMs = statsMs(ttft)
	out.MeanTPOTMs, out.MedianTPOTMs, out.StdTPOTMs, out.P99TPOTMs = statsMs(tpot)
	out.MeanITLMs, out.MedianITLMs, out.StdITLMs, out.P99ITLMs = repeatedStatsMs(numeric.NewRepeated(itl, itlCounts))
	out.MeanE2ELMs, out.MedianE2ELMs, out.StdE2ELMs, out.P99E2ELMs = statsMs(e2el)
	return out
}

// statsMs are vLLM's mean, median, standard deviation and 99th percentile
// of values in seconds, each times 1000 (summaryMs at the 99th
// percentile). It sorts values.
func statsMs(values []float64) (mean, median, std, p99 float64) {
	s := summaryMs(values, p99Only)
	return s.Mean, s.Median, s.Std, s.Percentiles[0]
}

// repeatedStatsMs is statsMs of a sample of repeated values.
func repeatedStatsMs(r numeric.Repeated) (mean, median, std, p99 float64) {
	s := repeatedSummaryMs(r, p99Only)
	return s.Mean, s.Median, s.Std, s.Percentiles[0]
}
