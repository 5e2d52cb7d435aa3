// Package calibrate fits the batched service model to a user's own
// measurements: `vllm bench serve` result files (latency and throughput)
// and nvidia-smi power logs (power, clocks, temperature). It replays each
// measured run on the simulated server, fits the GPU card's efficiencies
// and per-iteration overhead by least squares on the measured TTFT, TPOT
// and throughput, fits the profile's idle, prefill and decode power per
// clock and the thermal constants from the power logs, and reports the
// error of every run, fitted or held out.
package calibrate

// Run is one measured run: a `vllm bench serve --save-result` file.
type Run struct {
	// File is where it was read from (errors and reports name it).
	File string
	// Date is the file's date ("20250101-120000"), when vLLM wrote it.
	Date string
	// ModelID is the served model's id (model_id).
	ModelID string
	// RequestRate is requests/s; +Inf for "inf" (every request at once).
	RequestRate float64
	// Burstiness is the gamma shape of the arrivals (1: Poisson).
	Burstiness float64
	// MaxConcurrency is the client's concurrency cap; 0 for none.
	MaxConcurrency int
	// DurationS is the benchmark's duration, s.
	DurationS float64
	// Requests are the run's requests in the order the client sent them.
	Requests []Request
	// ClockMHz is the profile level the GPU was locked to while it ran
	// (its power log's clock says so; Study sets it), 0 for the top level
	// (a GPU at its default clocks).
	ClockMHz float64
}

// Request is one measured request. TTFTS and LatencyS are 0 for a failed
// request (Failed).
type Request struct {
	InputTokens, OutputTokens int
	TTFTS, LatencyS           float64
	Failed                    bool
}

// Metrics are what a run is judged by, measured or simulated.
type Metrics struct {
	MeanTTFTS float64 `json:"mean_ttft_s"`
	P99TTFTS  float64 `json:"p99_ttft_s"`
	// MeanTPOTS is the mean over requests of more than one output token
	// of (latency - TTFT) / (output - 1), as vLLM's mean_tpot_ms.
	MeanTPOTS float64 `json:"mean_tpot_s"`
	// OutputThroughput is output tokens / duration, tokens/s.
	OutputThroughput float64 `json:"output_throughput_tokens_per_s"`
	// MeanPowerW and EnergyPerTokenJ are the run's mean board power and
	// energy per output token; nil without a power log (measured) or
	// without a profile's powers (simulated).
	MeanPowerW      *float64 `json:"mean_power_w"`
	EnergyPerTokenJ *float64 `json:"energy_per_output_token_j"`
}
