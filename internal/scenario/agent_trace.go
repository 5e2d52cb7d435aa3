package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"servesim/internal/numeric"
	"servesim/internal/scenario/pyrand"
)

// Defaults of the reference's build_agent_trace.
const (
	DefaultAgentRequests = 80
	DefaultAgentSeed     = 42
	DefaultAgentRPS      = 8.5
)

// MaxAgentRequests bounds the synthetic trace: ten million requests take
// about 0.7 GB and a few seconds per profile replayed.
const MaxAgentRequests = 10_000_000

// BuildAgentTrace is the reference's build_agent_trace: numRequests bursty
// agent requests drawn from Python's random.Random(seed), with exponential
// inter-arrival times at meanRPS requests per second, shortened in bursts
// (requests 2 to 6 of every 10) and lengthened in lulls. Arrivals are
// rounded to 0.01 ms; the prompts share a 2048- or 3072-token prefix. The
// same seed gives the same arrivals as Python to the last bit. A nil seed
// means 0; Python uses the seed's absolute value. More than
// MaxAgentRequests requests is an error, before anything is allocated.
func BuildAgentTrace(numRequests int, seed *big.Int, meanRPS float64) ([]WorkloadRequest, error) {
	if numRequests < 1 || numRequests > MaxAgentRequests {
		return nil, fmt.Errorf("agent trace: %d requests: need at least 1 and at most %d", numRequests, MaxAgentRequests)
	}
	if !(meanRPS > 0) || math.IsInf(meanRPS, 0) {
		return nil, errors.New("agent trace: mean rate must be positive and finite")
	}
	rng := pyrand.New(seed)
	lambd := meanRPS / 1000.0
	trace := make([]WorkloadRequest, numRequests)
	currentMS := 0.0
	for idx := range trace {
		burstFactor := 1.55
		if m := idx % 10; m >= 2 && m <= 6 {
			burstFactor = 0.32
		}
		currentMS += rng.Expovariate(lambd) * burstFactor
		if math.IsInf(currentMS, 0) {
			return nil, fmt.Errorf("agent trace: mean rate %v requests/s is too small: arrival times overflow", meanRPS)
		}
		sharedPrefix := 3072
		if idx%4 == 0 {
			sharedPrefix = 2048
		}
		trace[idx] = WorkloadRequest{
			RequestID:          fmt.Sprintf("req-%03d", idx),
			ArrivalMS:          numeric.Round(currentMS, 2),
			SharedPrefixTokens: sharedPrefix,
			UniquePromptTokens: 256 + (idx%5)*64,
			OutputTokens:       96 + (idx%4)*32,
		}
	}
	return trace, nil
}
