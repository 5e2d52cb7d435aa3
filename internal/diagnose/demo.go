package diagnose

import (
	"fmt"

	"servesim/internal/numeric"
)

// SimulateWorkloadLogs is the seed's simulate_workload_logs: 100 controlled
// requests, 95 steady ones and a burst of five long prompts. Above a 90%
// admission watermark the burst is preempted and recomputed; otherwise it
// is gated briefly, and chunked prefill shortens its prefill.
func SimulateWorkloadLogs(admitWatermarkPct float64, chunkedPrefill bool) []RequestLog {
	logs := make([]RequestLog, 0, 100)
	for i := range 100 {
		id := fmt.Sprintf("req-%03d", i)
		if i < 95 {
			prefill := 42.0
			if chunkedPrefill {
				prefill = 38.0
			}
			logs = append(logs, RequestLog{
				RequestID: id, PromptTokens: 1024, OutputTokens: 128,
				QueueWaitMs: 14.0 + float64(i%6)*2.0, PrefillMs: prefill, DecodeTPOTMs: 14.5,
				PrefixCachedTokens: 640, KVOccupancyPctAtArrival: 76.0 + float64(i%9),
			})
			continue
		}
		burst := float64(i - 95)
		if admitWatermarkPct > 90.0 {
			// Over-admission drives KV occupancy to 98.4%: decode eviction
			// and a full recompute cascade.
			logs = append(logs, RequestLog{
				RequestID: id, PromptTokens: 4096, OutputTokens: 192,
				QueueWaitMs: 3200.0 + burst*850.0, PrefillMs: 310.0, DecodeTPOTMs: 22.0,
				Preempted: true, RecomputePenaltyMs: 11200.0 + burst*1300.0,
				PrefixCachedTokens: 1024, KVOccupancyPctAtArrival: 96.0 + burst*0.6,
			})
			continue
		}
		// The admission watermark holds the burst briefly at the gate;
		// chunked prefill prevents head-of-line blocking.
		prefill := 260.0
		if chunkedPrefill {
			prefill = 75.0
		}
		logs = append(logs, RequestLog{
			RequestID: id, PromptTokens: 4096, OutputTokens: 192,
			QueueWaitMs: 85.0 + burst*18.0, PrefillMs: prefill, DecodeTPOTMs: 15.0,
			PrefixCachedTokens: 2048, KVOccupancyPctAtArrival: 84.5,
		})
	}
	return logs
}

// ExecutionMode is the seed main()'s statement of what the demo is.
const ExecutionMode = "CPU algorithm with controlled inputs; any latency/capacity coefficients are assumptions"

// DemoReport is the seed main()'s report, with its keys in its order.
type DemoReport struct {
	ExecutionMode             string   `json:"execution_mode"`              // execution_mode: the constant ExecutionMode
	BeforeRemediation         Snapshot `json:"before_remediation"`          // before_remediation: snapshot of the unbounded 98.5% KV watermark workload
	AfterRemediation          Snapshot `json:"after_remediation"`           // after_remediation: snapshot of the gated 85% watermark plus chunked prefill workload
	P99ReductionX             float64  `json:"p99_reduction_x"`             // p99_reduction_x: before p99_e2e_ms / after p99_e2e_ms, rounded to 2 decimals
	RecomputeTokensEliminated int64    `json:"recompute_tokens_eliminated"` // recompute_tokens_eliminated: before minus after estimated_recompute_tokens
}

// Demo is the seed's main(): the unbounded 98.5% watermark workload
// diagnosed before remediation, and the 85% watermark with chunked prefill
// after it. With DefaultOptions it is the seed's report.
func Demo(opts Options) (DemoReport, error) {
	before, err := Diagnose("unbounded_98pct_kv_watermark", SimulateWorkloadLogs(98.5, false), opts)
	if err != nil {
		return DemoReport{}, err
	}
	after, err := Diagnose("gated_85pct_kv_plus_chunked_prefill", SimulateWorkloadLogs(85.0, true), opts)
	if err != nil {
		return DemoReport{}, err
	}
	return DemoReport{
		ExecutionMode:             ExecutionMode,
		BeforeRemediation:         before,
		AfterRemediation:          after,
		P99ReductionX:             numeric.Round(before.P99E2EMs/after.P99E2EMs, 2),
		RecomputeTokensEliminated: before.EstimatedRecomputeTokens - after.EstimatedRecomputeTokens,
	}, nil
}
