package plant

import (
	"bytes"
	_ "embed"

	"servesim/internal/workload"
)

// defaultTraceCSV is DefaultTraceConfig() written by WriteCSV;
// TestDefaultTraceIsGenerated keeps it so.
//
//go:embed default_trace.csv
var defaultTraceCSV []byte

// The configuration of the embedded default trace.
const (
	DefaultTraceSeed      = 2023
	DefaultTraceDurationS = 1800.0
	// DefaultTraceRequestsPerS is the embedded trace's arrival rate.
	DefaultTraceRequestsPerS = 1.2
	// DefaultTraceName is what provenance records call the embedded trace.
	DefaultTraceName = "(embedded synthetic interactive trace, seed 2023, 1800 s)"
)

// DefaultTraceConfig is the embedded trace: the first thing a new user
// simulates, sized so that the embedded proxy profile serves it at a healthy
// operating point under simulate's defaults (chunked prefill, maximum
// clock): every request completes and p95 TTFT and TPOT meet the proxy's
// SLOs. It is 30 minutes of Poisson arrivals at 1.2 requests per second
// (about 20% of the proxy's isolated maximum-clock capacity) with short
// interactive prompts, lognormal with a median of about 400 tokens (log-mean
// 6.0, log-sd 0.7, clamped to 3-2048), and the code trace's output lengths
// (CodeTraceLike). The Azure code trace itself, with its bursts and prompts
// of up to 7437 tokens, overloads the proxy: CodeTraceLike models it.
func DefaultTraceConfig() workload.SyntheticTrace {
	c := CodeTraceLike(DefaultTraceSeed, DefaultTraceDurationS)
	c.MeanRequestsPerS = DefaultTraceRequestsPerS
	c.MeanBurstSize, c.BurstGapS = 1, 0 // no bursts: Poisson arrivals
	c.Prompt = workload.LogNormalTokens{LogMean: 6.0, LogSigma: 0.7, Min: 3, Max: 2048}
	return c
}

// DefaultTrace loads the embedded synthetic trace, keeping the rows within
// maxElapsedS of the first (NoElapsedLimit keeps all).
func DefaultTrace(maxElapsedS float64) (Workload, error) {
	return LoadWorkload(bytes.NewReader(defaultTraceCSV), DefaultTraceName, maxElapsedS)
}
