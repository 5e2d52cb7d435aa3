// Package cards describes the hardware and the model of a batched service
// model: a GPU card (memory, memory bandwidth, peak dense compute, board
// power, and the efficiencies and per-iteration overhead an engine attains
// on it) and a model card (weight bytes and the transformer shape that sets
// the KV cache and the attention work). Built-in cards come from public
// specifications; a card file (JSON) names the same fields.
package cards

// GPU is a GPU card.
type GPU struct {
	// Name identifies the card ("L4", "A100-80GB").
	Name string `json:"name"`
	// MemoryGB is the memory the engine can see, decimal gigabytes (1e9
	// bytes).
	MemoryGB float64 `json:"memory_gb"`
	// MemoryBandwidthGBps is the peak memory bandwidth, GB/s (1e9 bytes
	// per second).
	MemoryBandwidthGBps float64 `json:"memory_bandwidth_gb_per_s"`
	// PeakTFLOPS is the peak dense BF16/FP16 tensor compute, TFLOP/s (no
	// sparsity).
	PeakTFLOPS float64 `json:"peak_dense_tflops"`
	// BoardPowerW is the board power limit (TDP), W.
	BoardPowerW float64 `json:"board_power_w"`
	// MemoryEfficiency is the share of MemoryBandwidthGBps an iteration's
	// reads attain at the profile's top clock level, in (0, 1].
	MemoryEfficiency float64 `json:"memory_efficiency"`
	// ComputeEfficiency is the share of PeakTFLOPS an iteration's
	// matrix work attains at the profile's top clock level, in (0, 1].
	ComputeEfficiency float64 `json:"compute_efficiency"`
	// IterationOverheadS is the fixed cost of one engine iteration
	// (scheduling, kernel launches, sampling), seconds, >= 0.
	IterationOverheadS float64 `json:"iteration_overhead_s"`
}

// Model is a model card.
type Model struct {
	// Name identifies the card ("Qwen2.5-7B-Instruct").
	Name string `json:"name"`
	// WeightGB is the size of the weights as served, decimal gigabytes.
	WeightGB float64 `json:"weight_gb"`
	// Layers is the number of transformer layers.
	Layers int `json:"layers"`
	// HiddenSize is the model dimension.
	HiddenSize int `json:"hidden_size"`
	// AttentionHeads is the number of query heads.
	AttentionHeads int `json:"attention_heads"`
	// KVHeads is the number of key/value heads (grouped-query attention).
	KVHeads int `json:"kv_heads"`
	// HeadSize is the dimension of one head.
	HeadSize int `json:"head_size"`
	// Dtype is the type of the weights and of the KV cache: "bfloat16",
	// "float16" (2 bytes) or "fp8" (1 byte).
	Dtype string `json:"dtype"`
}
