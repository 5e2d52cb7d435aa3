package cards

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// dtypeBytes are the types a model card's dtype may name, with their
// bytes.
var dtypeBytes = map[string]float64{"bfloat16": 2, "float16": 2, "fp8": 1}

// dtypeNames lists the dtypes for messages, in a stable order.
const dtypeNames = "bfloat16, float16, fp8"

// Validate checks a GPU card: a name that is not blank and has no control
// characters; memory,
// bandwidth, compute and power finite and positive; both efficiencies in
// (0, 1]; the per-iteration overhead finite and not negative. Its error
// is a *FieldError naming the card (File empty).
func (g GPU) Validate() error {
	fail := func(field string, value float64, why string) error {
		return &FieldError{Kind: "gpu", Card: g.Name, Field: field, Value: formatNumber(value), Why: why}
	}
	if why := badName(g.Name); why != "" {
		return &FieldError{Kind: "gpu", Field: "name", Value: g.Name, Why: why}
	}
	for _, f := range []struct {
		name  string
		value float64
	}{
		{"memory_gb", g.MemoryGB},
		{"memory_bandwidth_gb_per_s", g.MemoryBandwidthGBps},
		{"peak_dense_tflops", g.PeakTFLOPS},
		{"board_power_w", g.BoardPowerW},
	} {
		if !positive(f.value) {
			return fail(f.name, f.value, "must be finite and positive")
		}
	}
	for _, f := range []struct {
		name  string
		value float64
	}{
		{"memory_efficiency", g.MemoryEfficiency},
		{"compute_efficiency", g.ComputeEfficiency},
	} {
		if !(f.value > 0 && f.value <= 1) {
			return fail(f.name, f.value, "must be in (0, 1]")
		}
	}
	if !(g.IterationOverheadS >= 0 && !math.IsInf(g.IterationOverheadS, 1)) {
		return fail("iteration_overhead_s", g.IterationOverheadS, "must be finite and not negative")
	}
	return nil
}

// Validate checks a model card: a name that is not blank and has no
// control characters; weights finite
// and positive; layers, hidden size, heads, KV heads and head size
// positive; the query heads a multiple of the KV heads; a dtype of
// bfloat16, float16 or fp8. Its error is a *FieldError naming the card
// (File empty).
func (m Model) Validate() error {
	if why := badName(m.Name); why != "" {
		return &FieldError{Kind: "model", Field: "name", Value: m.Name, Why: why}
	}
	fail := func(field, value, why string) error {
		return &FieldError{Kind: "model", Card: m.Name, Field: field, Value: value, Why: why}
	}
	if !positive(m.WeightGB) {
		return fail("weight_gb", formatNumber(m.WeightGB), "must be finite and positive")
	}
	for _, f := range []struct {
		name  string
		value int
	}{
		{"layers", m.Layers},
		{"hidden_size", m.HiddenSize},
		{"attention_heads", m.AttentionHeads},
		{"kv_heads", m.KVHeads},
		{"head_size", m.HeadSize},
	} {
		if f.value <= 0 {
			return fail(f.name, strconv.Itoa(f.value), "must be a positive integer")
		}
	}
	if m.AttentionHeads%m.KVHeads != 0 {
		return fail("attention_heads", strconv.Itoa(m.AttentionHeads),
			fmt.Sprintf("must be a multiple of kv_heads (%d)", m.KVHeads))
	}
	if _, ok := dtypeBytes[m.Dtype]; !ok {
		return fail("dtype", m.Dtype, "expected one of "+dtypeNames)
	}
	return nil
}

// DtypeBytes is the size of one weight and of one KV cache element: 2 for
// bfloat16 and float16, 1 for fp8, 0 for a dtype Validate rejects.
func (m Model) DtypeBytes() float64 { return dtypeBytes[m.Dtype] }

// Parameters is the model's parameter count: its weight bytes over the
// bytes of one weight.
func (m Model) Parameters() float64 { return m.WeightGB * 1e9 / m.DtypeBytes() }

// KVBytesPerToken is the KV cache one token takes: a key and a value of
// HeadSize elements for each KV head of each layer.
func (m Model) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadSize) * m.DtypeBytes()
}

// FLOPsPerToken is the dense matrix work of one token: two FLOPs (a
// multiply and an add) for each parameter. The attention over the KV
// cache is AttentionFLOPs.
func (m Model) FLOPsPerToken() float64 { return 2 * m.Parameters() }

// AttentionFLOPs is the attention score and value work of tokens new
// tokens that follow context tokens already in the KV cache, causally
// (the i-th new token attends to context+i tokens): 2 FLOPs per element
// for Q·Kᵀ and for the weighted sum of V, in each head of each layer,
// 4 * Layers * AttentionHeads * HeadSize * (tokens*context +
// tokens*(tokens+1)/2).
func (m Model) AttentionFLOPs(context, tokens float64) float64 {
	pairs := tokens*context + tokens*(tokens+1)/2
	return 4 * float64(m.Layers) * float64(m.AttentionHeads) * float64(m.HeadSize) * pairs
}

// KVCapacityTokens is the KV cache the engine gets, in tokens: the share
// utilization of the GPU's memory less the weights, over the KV bytes of
// one token, rounded down. utilization must be in (0, 1] (vLLM's
// --gpu-memory-utilization); both cards must be valid. A model that
// leaves no room for one token is a *FitError.
func KVCapacityTokens(g GPU, m Model, utilization float64) (float64, error) {
	if !(utilization > 0 && utilization <= 1) {
		return 0, fmt.Errorf("gpu memory utilization %s: must be in (0, 1]", formatNumber(utilization))
	}
	if err := g.Validate(); err != nil {
		return 0, err
	}
	if err := m.Validate(); err != nil {
		return 0, err
	}
	free := g.MemoryGB*1e9*utilization - m.WeightGB*1e9
	tokens := math.Floor(free / m.KVBytesPerToken())
	if !(tokens >= 1) {
		return 0, &FitError{GPU: g.Name, Model: m.Name, MemoryGB: g.MemoryGB, WeightGB: m.WeightGB, Utilization: utilization}
	}
	return tokens, nil
}

// badName says what is wrong with a card's name, or returns "": a name
// is shown in tables and messages, so it is not blank and holds no
// control characters.
func badName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "must not be empty"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "must not hold control characters"
	}
	return ""
}

// positive reports whether x is finite and positive.
func positive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// formatNumber writes x the shortest way that reads back the same.
func formatNumber(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
