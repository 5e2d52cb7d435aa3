package cards

import (
	"slices"
	"strings"
)

// The efficiencies and per-iteration overhead of a GPU card file that
// omits them, and of every built-in GPU but the L4.
const (
	DefaultMemoryEfficiency   = 0.85
	DefaultComputeEfficiency  = 0.55
	DefaultIterationOverheadS = 0.002
)

// The L4's efficiencies and per-iteration overhead, fitted to the
// measured L4 run (Qwen2.5-7B-Instruct, vLLM 0.28.0, at its top requested
// clock, realized near 970 MHz under the 72 W cap): with a 2 ms
// iteration, a lone request's decode iteration (the weights and about
// 1,089 tokens of KV, 15.29 GB) takes the measured 57.06 ms TPOT at 92.6%
// of 300 GB/s, and its 1,024-token prompt (15.8 TFLOP with attention)
// the measured 314.5 ms TTFT at 41.8% of 121 TFLOPS (the cap holds the
// clock at about 48% of the 2,040 MHz boost). See docs/calibration.md.
const (
	L4MemoryEfficiency   = 0.926
	L4ComputeEfficiency  = 0.418
	L4IterationOverheadS = 0.002
)

// The card a command uses when none is named.
const (
	DefaultGPU   = "L4"
	DefaultModel = "Qwen2.5-7B-Instruct"
)

// builtinGPUs are the built-in GPU cards, in GPUNames order. Memory is
// the datasheet's (decimal GB), bandwidth its peak, compute its dense
// BF16 tensor figure (half the "with sparsity" one), power its maximum
// board power.
var builtinGPUs = []GPU{
	// NVIDIA L4 Tensor Core GPU datasheet: 24 GB GDDR6, 300 GB/s,
	// BF16 tensor 242 TFLOPS with sparsity (121 dense), 72 W.
	{Name: "L4", MemoryGB: 24, MemoryBandwidthGBps: 300, PeakTFLOPS: 121, BoardPowerW: 72,
		MemoryEfficiency: L4MemoryEfficiency, ComputeEfficiency: L4ComputeEfficiency, IterationOverheadS: L4IterationOverheadS},
	// NVIDIA publishes no A10G datasheet (an AWS variant of the A10,
	// in EC2 G5 instances). Memory and bandwidth are the A10
	// datasheet's (24 GB GDDR6, 600 GB/s), shared by both cards; dense
	// tensor compute about 70 TFLOPS and 300 W as third-party spec
	// comparisons give them (Baseten, "NVIDIA A10 vs A10G for ML model
	// inference"); the A10 itself is 125 TFLOPS dense BF16 at 150 W.
	{Name: "A10G", MemoryGB: 24, MemoryBandwidthGBps: 600, PeakTFLOPS: 70, BoardPowerW: 300,
		MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS},
	// NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 tensor 733
	// TFLOPS with sparsity (362.05 dense), 350 W.
	{Name: "L40S", MemoryGB: 48, MemoryBandwidthGBps: 864, PeakTFLOPS: 362, BoardPowerW: 350,
		MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS},
	// NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM: 40 GB HBM2,
	// 1,555 GB/s, BF16 tensor 312 TFLOPS dense (624 with sparsity), 400 W.
	{Name: "A100-40GB", MemoryGB: 40, MemoryBandwidthGBps: 1555, PeakTFLOPS: 312, BoardPowerW: 400,
		MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS},
	// NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM: 80 GB
	// HBM2e, 2,039 GB/s, BF16 tensor 312 TFLOPS dense, 400 W.
	{Name: "A100-80GB", MemoryGB: 80, MemoryBandwidthGBps: 2039, PeakTFLOPS: 312, BoardPowerW: 400,
		MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS},
	// NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 80 GB HBM3,
	// 3.35 TB/s, BF16 tensor 1,979 TFLOPS with sparsity (989 dense), up
	// to 700 W.
	{Name: "H100", MemoryGB: 80, MemoryBandwidthGBps: 3350, PeakTFLOPS: 989, BoardPowerW: 700,
		MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS},
}

// builtinModels are the built-in model cards, in ModelNames order. The
// shape is the model's Hugging Face config.json; the weights are bf16,
// two bytes for each parameter, the parameters counted from that shape
// (embeddings and LM head untied, Qwen2's QKV biases and the RMSNorm
// weights included).
var builtinModels = []Model{
	// Qwen/Qwen2.5-7B-Instruct config.json: 28 layers, hidden 3584, 28
	// heads, 4 KV heads (head 128), intermediate 18944, vocabulary
	// 152064: 7,615,616,512 parameters.
	{Name: "Qwen2.5-7B-Instruct", WeightGB: 15.231233024, Layers: 28, HiddenSize: 3584,
		AttentionHeads: 28, KVHeads: 4, HeadSize: 128, Dtype: "bfloat16"},
	// meta-llama/Llama-3.1-8B-Instruct config.json: 32 layers, hidden
	// 4096, 32 heads, 8 KV heads (head 128), intermediate 14336,
	// vocabulary 128256: 8,030,261,248 parameters.
	{Name: "Llama-3.1-8B-Instruct", WeightGB: 16.060522496, Layers: 32, HiddenSize: 4096,
		AttentionHeads: 32, KVHeads: 8, HeadSize: 128, Dtype: "bfloat16"},
	// mistralai/Mistral-7B-Instruct-v0.3 config.json: 32 layers, hidden
	// 4096, 32 heads, 8 KV heads (head 128), intermediate 14336,
	// vocabulary 32768: 7,248,023,552 parameters.
	{Name: "Mistral-7B-Instruct-v0.3", WeightGB: 14.496047104, Layers: 32, HiddenSize: 4096,
		AttentionHeads: 32, KVHeads: 8, HeadSize: 128, Dtype: "bfloat16"},
	// Qwen/Qwen2.5-14B-Instruct config.json: 48 layers, hidden 5120, 40
	// heads, 8 KV heads (head 128), intermediate 13824, vocabulary
	// 152064: 14,770,033,664 parameters.
	{Name: "Qwen2.5-14B-Instruct", WeightGB: 29.540067328, Layers: 48, HiddenSize: 5120,
		AttentionHeads: 40, KVHeads: 8, HeadSize: 128, Dtype: "bfloat16"},
}

// gpuAliases are the other names of the built-in GPU cards, lower case
// (a lookup ignores case, and every canonical name is accepted too).
var gpuAliases = map[string]string{
	"nvidia-l4":      "L4",
	"nvidia-a10g":    "A10G",
	"nvidia-l40s":    "L40S",
	"a100-40g":       "A100-40GB",
	"a100-sxm4-40gb": "A100-40GB",
	"a100-80g":       "A100-80GB",
	"a100-sxm4-80gb": "A100-80GB",
	"h100-sxm":       "H100",
	"h100-sxm5":      "H100",
	"h100-80gb":      "H100",
	"h100-sxm5-80gb": "H100",
}

// gpuAmbiguous are names that could mean more than one built-in GPU
// card, and the cards they could mean.
var gpuAmbiguous = map[string][]string{
	"a100":      {"A100-40GB", "A100-80GB"},
	"a100-sxm":  {"A100-40GB", "A100-80GB"},
	"a100-sxm4": {"A100-40GB", "A100-80GB"},
}

// modelAliases are the other names of the built-in model cards, lower
// case: the short names, and the Hugging Face repository ids.
var modelAliases = map[string]string{
	"qwen2.5-7b":                            "Qwen2.5-7B-Instruct",
	"qwen/qwen2.5-7b-instruct":              "Qwen2.5-7B-Instruct",
	"llama-3.1-8b":                          "Llama-3.1-8B-Instruct",
	"llama3.1-8b":                           "Llama-3.1-8B-Instruct",
	"meta-llama-3.1-8b-instruct":            "Llama-3.1-8B-Instruct",
	"meta-llama/llama-3.1-8b-instruct":      "Llama-3.1-8B-Instruct",
	"meta-llama/meta-llama-3.1-8b-instruct": "Llama-3.1-8B-Instruct",
	"mistral-7b":                            "Mistral-7B-Instruct-v0.3",
	"mistral-7b-instruct":                   "Mistral-7B-Instruct-v0.3",
	"mistral-7b-v0.3":                       "Mistral-7B-Instruct-v0.3",
	"mistralai/mistral-7b-instruct-v0.3":    "Mistral-7B-Instruct-v0.3",
	"qwen2.5-14b":                           "Qwen2.5-14B-Instruct",
	"qwen/qwen2.5-14b-instruct":             "Qwen2.5-14B-Instruct",
}

// GPUNames returns the names of the built-in GPU cards: L4, A10G, L40S,
// A100-40GB, A100-80GB, H100.
func GPUNames() []string { return names(builtinGPUs, func(g GPU) string { return g.Name }) }

// ModelNames returns the names of the built-in model cards:
// Qwen2.5-7B-Instruct, Llama-3.1-8B-Instruct, Mistral-7B-Instruct-v0.3,
// Qwen2.5-14B-Instruct.
func ModelNames() []string { return names(builtinModels, func(m Model) string { return m.Name }) }

// BuiltinGPU returns the built-in GPU card of that name, in any case, or
// of one of its aliases: nvidia-l4, nvidia-a10g, nvidia-l40s; a100-40g,
// a100-sxm4-40gb; a100-80g, a100-sxm4-80gb; h100-sxm, h100-sxm5,
// h100-80gb, h100-sxm5-80gb. "a100" (and a100-sxm, a100-sxm4) names no
// card: ResolveGPU says which two it could mean.
func BuiltinGPU(name string) (GPU, bool) {
	return lookup(builtinGPUs, gpuAliases, name, func(g GPU) string { return g.Name })
}

// BuiltinModel returns the built-in model card of that name, in any case,
// or of one of its aliases: qwen2.5-7b, llama-3.1-8b, llama3.1-8b,
// meta-llama-3.1-8b-instruct, mistral-7b, mistral-7b-instruct,
// mistral-7b-v0.3, qwen2.5-14b, and the Hugging Face repository ids
// (Qwen/Qwen2.5-7B-Instruct, meta-llama/Llama-3.1-8B-Instruct,
// meta-llama/Meta-Llama-3.1-8B-Instruct,
// mistralai/Mistral-7B-Instruct-v0.3, Qwen/Qwen2.5-14B-Instruct).
func BuiltinModel(name string) (Model, bool) {
	return lookup(builtinModels, modelAliases, name, func(m Model) string { return m.Name })
}

// names lists the cards' names in order.
func names[C any](cards []C, name func(C) string) []string {
	out := make([]string, len(cards))
	for i, c := range cards {
		out[i] = name(c)
	}
	return out
}

// lookup finds a card by its name or an alias, ignoring case.
func lookup[C any](cards []C, aliases map[string]string, key string, name func(C) string) (C, bool) {
	key = strings.ToLower(key)
	if canonical, ok := aliases[key]; ok {
		key = strings.ToLower(canonical)
	}
	i := slices.IndexFunc(cards, func(c C) bool { return strings.ToLower(name(c)) == key })
	if i < 0 {
		var zero C
		return zero, false
	}
	return cards[i], true
}
