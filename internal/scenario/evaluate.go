package scenario

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"servesim/internal/numeric"
)

// Defaults of the reference's evaluate_engine_benchmark.
const (
	DefaultWorkloadName        = "agent-shared-prefix"
	DefaultTTFTSLOMilliseconds = 500.0
	DefaultTPOTSLOMilliseconds = 35.0
)

// prefillOverheadMS is the fixed cost of every prefill.
const prefillOverheadMS = 3.0

// BenchmarkOptions are the settings of one replay.
type BenchmarkOptions struct {
	// WorkloadName is reported as the summary's workload.
	WorkloadName string
	// TTFTSLOMilliseconds and TPOTSLOMilliseconds are the SLO thresholds: a request meets the
	// SLO when its TTFT and its TPOT are both at most these.
	TTFTSLOMilliseconds float64
	TPOTSLOMilliseconds float64 // TPOT SLO threshold, ms
	// ClosedLoop makes each request arrive when the previous ones have all
	// completed, instead of at its trace arrival time.
	ClosedLoop bool
}

// DefaultBenchmarkOptions returns the reference's defaults: workload
// "agent-shared-prefix", TTFT SLO 500 ms, TPOT SLO 35 ms, open loop.
func DefaultBenchmarkOptions() BenchmarkOptions {
	return BenchmarkOptions{WorkloadName: DefaultWorkloadName, TTFTSLOMilliseconds: DefaultTTFTSLOMilliseconds, TPOTSLOMilliseconds: DefaultTPOTSLOMilliseconds}
}

// EvaluateEngineBenchmark is the reference's evaluate_engine_benchmark: it
// replays trace in order against profile. A request is admitted when fewer
// than MaxBatchSlots earlier requests are still decoding (else when the
// oldest of the excess completes); prefills run one at a time; TTFT is the
// wait plus a prefill of 3 ms plus the uncached tokens over the prefill rate;
// TPOT grows linearly with the batch the request joins. As in the reference,
// the list of decoding requests is pruned on every request, after the
// admission check.
//
// It returns an error for an invalid profile (see EngineProfile.Validate),
// an empty trace, or a request with a non-finite arrival, negative prompt
// tokens or no output token.
func EvaluateEngineBenchmark(trace []WorkloadRequest, profile EngineProfile, opts BenchmarkOptions) (BenchmarkSummary, error) {
	if err := profile.Validate(); err != nil {
		return BenchmarkSummary{}, fmt.Errorf("profile %q: %w", profile.Name, err)
	}
	if len(trace) == 0 {
		return BenchmarkSummary{}, errors.New("workload trace must not be empty")
	}
	if err := checkTrace(trace); err != nil {
		return BenchmarkSummary{}, err
	}
	slots := profile.MaxBatchSlots
	// At most slots completions survive each pruning (see the loop), so
	// these buffers never grow: the loop allocates nothing.
	bufCap := min(slots, len(trace)) + 1
	active := make([]float64, 0, bufCap)
	occupied := make([]float64, 0, bufCap)
	ttftSamples := make([]float64, len(trace))
	tpotSamples := make([]float64, len(trace))

	prefillFreeAtMS := 0.0
	sloPassed := 0
	totalOutputTokens := 0
	firstArrivalMS := trace[0].ArrivalMS
	lastCompletionMS := 0.0
	for i, req := range trace {
		effectiveArrivalMS := req.ArrivalMS
		if opts.ClosedLoop {
			effectiveArrivalMS = lastCompletionMS
		}
		// Enforce admission capacity instead of merely capping the batch.
		occupied = occupied[:0]
		for _, t := range active {
			if t > effectiveArrivalMS {
				occupied = append(occupied, t)
			}
		}
		slices.Sort(occupied)
		admittedAtMS := effectiveArrivalMS
		if len(occupied) >= slots {
			admittedAtMS = occupied[len(occupied)-slots]
		}
		active = slices.DeleteFunc(active, func(t float64) bool { return !(t > admittedAtMS) })
		activeBatch := min(slots, len(active)+1)
		queueWaitMS := max(admittedAtMS, prefillFreeAtMS) - effectiveArrivalMS
		uncachedShared := float64(req.SharedPrefixTokens) * (1.0 - profile.PrefixCacheHitEfficiency)
		effectivePrefillTokens := uncachedShared + float64(req.UniquePromptTokens)
		prefillMS := prefillOverheadMS + (effectivePrefillTokens / profile.PrefillTokensPerMS)
		ttftMS := queueWaitMS + prefillMS
		prefillFreeAtMS = effectiveArrivalMS + ttftMS
		tpotMS := profile.BaseTPOTMS + profile.BatchTPOTSlopeMS*float64(activeBatch)
		decodeMS := float64(req.OutputTokens-1) * tpotMS
		completionMS := effectiveArrivalMS + ttftMS + decodeMS
		active = append(active, completionMS)
		lastCompletionMS = max(lastCompletionMS, completionMS)
		ttftSamples[i] = ttftMS
		tpotSamples[i] = tpotMS
		totalOutputTokens += req.OutputTokens
		if ttftMS <= opts.TTFTSLOMilliseconds && tpotMS <= opts.TPOTSLOMilliseconds {
			sloPassed++
		}
	}
	// The reference rounds every sample to 2 decimals, sorts, and picks by
	// nearest rank. Rounding is monotone, so the k-th smallest rounded
	// sample is the rounded k-th smallest sample: rounding only the picks
	// gives the same numbers without rounding every sample.
	slices.Sort(ttftSamples)
	slices.Sort(tpotSamples)
	startMS := firstArrivalMS
	if opts.ClosedLoop {
		startMS = 0.0
	}
	durationS := max(0.001, (lastCompletionMS-startMS)/1000.0)
	n := float64(len(trace))
	return BenchmarkSummary{
		Engine:               profile.Name,
		Workload:             opts.WorkloadName,
		TotalRequests:        len(trace),
		DurationS:            numeric.Round(durationS, 3),
		TTFTP50MS:            roundedPercentile(ttftSamples, 0.50),
		TTFTP99MS:            roundedPercentile(ttftSamples, 0.99),
		TPOTP50MS:            roundedPercentile(tpotSamples, 0.50),
		TPOTP99MS:            roundedPercentile(tpotSamples, 0.99),
		RawOutputTokensPerS:  numeric.Round(float64(totalOutputTokens)/durationS, 2),
		RequestThroughputRPS: numeric.Round(n/durationS, 3),
		SLOGoodputRPS:        numeric.Round(float64(sloPassed)/durationS, 3),
		SLOAttainmentRatio:   numeric.Round(float64(sloPassed)/n, 4),
	}, nil
}

// roundedPercentile is round(_percentile(sorted rounded samples, q), 2) of
// the reference: the nearest-rank pick, 0 for no samples, to 2 decimals.
func roundedPercentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0.0
	}
	return numeric.Round(numeric.NearestRank(sorted, q), 2)
}

// checkTrace rejects requests the replay cannot give meaning to.
func checkTrace(trace []WorkloadRequest) error {
	for _, req := range trace {
		switch {
		case math.IsNaN(req.ArrivalMS) || math.IsInf(req.ArrivalMS, 0):
			return fmt.Errorf("request %s: arrival_ms %v: must be finite", req.RequestID, req.ArrivalMS)
		case req.SharedPrefixTokens < 0 || req.UniquePromptTokens < 0:
			return fmt.Errorf("request %s: prompt token counts must not be negative", req.RequestID)
		case req.OutputTokens < 1:
			return fmt.Errorf("request %s: output_tokens %d: must be at least 1", req.RequestID, req.OutputTokens)
		}
	}
	return nil
}
