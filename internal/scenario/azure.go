package scenario

import (
	"errors"
	"fmt"

	"servesim/internal/workload"
)

// FromPlantTrace turns a trace read by workload.LoadWorkload (an Azure-format
// CSV) into a replay workload, in the same order: arrivals in milliseconds
// after the first request, computed from the plant's whole microseconds
// (never from float seconds), the first sharedPrefixTokens tokens of each
// prompt as the shared prefix (all of it when shorter) and the rest as
// unique, the output tokens unchanged, and IDs "req-000", "req-001", ...
func FromPlantTrace(requests []workload.Request, sharedPrefixTokens int) ([]WorkloadRequest, error) {
	if sharedPrefixTokens < 0 {
		return nil, fmt.Errorf("%d shared-prefix tokens: must not be negative", sharedPrefixTokens)
	}
	if len(requests) == 0 {
		return nil, errors.New("an empty trace: need at least one request")
	}
	start := requests[0].ArrivalMicroseconds()
	trace := make([]WorkloadRequest, len(requests))
	for i, r := range requests {
		shared := min(sharedPrefixTokens, r.PromptTokens)
		trace[i] = WorkloadRequest{
			RequestID:          fmt.Sprintf("req-%03d", i),
			ArrivalMS:          float64(r.ArrivalMicroseconds()-start) / 1000,
			SharedPrefixTokens: shared,
			UniquePromptTokens: r.PromptTokens - shared,
			OutputTokens:       r.OutputTokens,
		}
	}
	return trace, nil
}
