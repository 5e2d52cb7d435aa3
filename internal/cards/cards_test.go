package cards

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuiltinsValidate(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"L4", "A10G", "L40S", "A100-40GB", "A100-80GB", "H100"}, GPUNames())
	require.Equal(t, []string{"Qwen2.5-7B-Instruct", "Llama-3.1-8B-Instruct", "Mistral-7B-Instruct-v0.3", "Qwen2.5-14B-Instruct"}, ModelNames())
	for _, name := range GPUNames() {
		g, ok := BuiltinGPU(name)
		require.True(t, ok, name)
		assert.Equal(t, name, g.Name)
		assert.NoError(t, g.Validate(), name)
	}
	for _, name := range ModelNames() {
		m, ok := BuiltinModel(name)
		require.True(t, ok, name)
		assert.Equal(t, name, m.Name)
		assert.NoError(t, m.Validate(), name)
	}
	_, ok := BuiltinGPU(DefaultGPU)
	assert.True(t, ok, "the default GPU is built in")
	_, ok = BuiltinModel(DefaultModel)
	assert.True(t, ok, "the default model is built in")
}

func TestBuiltinEfficiencies(t *testing.T) {
	t.Parallel()
	for _, name := range GPUNames() {
		g, _ := BuiltinGPU(name)
		want := GPU{MemoryEfficiency: DefaultMemoryEfficiency, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS}
		if name == "L4" {
			want = GPU{MemoryEfficiency: L4MemoryEfficiency, ComputeEfficiency: L4ComputeEfficiency, IterationOverheadS: L4IterationOverheadS}
		}
		assert.Equal(t, want.MemoryEfficiency, g.MemoryEfficiency, name)
		assert.Equal(t, want.ComputeEfficiency, g.ComputeEfficiency, name)
		assert.Equal(t, want.IterationOverheadS, g.IterationOverheadS, name)
	}
	l4, _ := BuiltinGPU("L4")
	assert.Equal(t, GPU{Name: "L4", MemoryGB: 24, MemoryBandwidthGBps: 300, PeakTFLOPS: 121, BoardPowerW: 72,
		MemoryEfficiency: 0.926, ComputeEfficiency: 0.418, IterationOverheadS: 0.002}, l4)
}

func TestModelArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model      string
		parameters float64
		kvBytes    float64
	}{
		{"Qwen2.5-7B-Instruct", 7_615_616_512, 57344},
		{"Llama-3.1-8B-Instruct", 8_030_261_248, 131072},
		{"Mistral-7B-Instruct-v0.3", 7_248_023_552, 131072},
		{"Qwen2.5-14B-Instruct", 14_770_033_664, 196608},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			m, ok := BuiltinModel(tt.model)
			require.True(t, ok)
			assert.Equal(t, 2.0, m.DtypeBytes())
			assert.InDelta(t, tt.parameters, m.Parameters(), 1)
			assert.InDelta(t, 2*tt.parameters, m.FLOPsPerToken(), 2)
			assert.Equal(t, tt.kvBytes, m.KVBytesPerToken())
		})
	}
	fp8 := Model{Name: "x", WeightGB: 7, Layers: 2, HiddenSize: 8, AttentionHeads: 4, KVHeads: 2, HeadSize: 2, Dtype: "fp8"}
	assert.Equal(t, 1.0, fp8.DtypeBytes())
	assert.Equal(t, 7e9, fp8.Parameters())
	assert.Equal(t, 16.0, fp8.KVBytesPerToken(), "K and V * 2 layers * 2 KV heads * head 2 * 1 byte")
}

func TestAttentionFLOPs(t *testing.T) {
	t.Parallel()
	m := Model{Name: "x", WeightGB: 1, Layers: 2, HiddenSize: 12, AttentionHeads: 3, KVHeads: 1, HeadSize: 4, Dtype: "bfloat16"}
	per := 4.0 * 2 * 3 * 4 // FLOPs of one query-key pair over all heads and layers
	tests := []struct {
		name            string
		context, tokens float64
		pairs           float64
	}{
		{"nothing", 0, 0, 0},
		{"one decode step", 100, 1, 101},
		{"prefill of 4", 0, 4, 10},
		{"chunk of 3 after 5", 5, 3, 21},
	}
	for _, tt := range tests {
		assert.Equal(t, per*tt.pairs, m.AttentionFLOPs(tt.context, tt.tokens), tt.name)
	}
}

func TestKVCapacityTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gpu, model  string
		utilization float64
		want        float64
		err         string
	}{
		// (24e9 * 0.9 - 15.231233024e9) / 57344 = 111062.48
		{gpu: "L4", model: "Qwen2.5-7B-Instruct", utilization: 0.9, want: 111062},
		// (80e9 * 0.9 - 16.060522496e9) / 131072 = 426784.x
		{gpu: "H100", model: "Llama-3.1-8B-Instruct", utilization: 0.9, want: 426784},
		{gpu: "L4", model: "Qwen2.5-14B-Instruct", utilization: 0.9,
			err: "model Qwen2.5-14B-Instruct (29.5 GB of weights) does not fit in 90% of L4's 24 GB (21.6 GB)"},
		{gpu: "L4", model: "Qwen2.5-7B-Instruct", utilization: 0.6,
			err: "model Qwen2.5-7B-Instruct (15.2 GB of weights) does not fit in 60% of L4's 24 GB (14.4 GB)"},
		{gpu: "L4", model: "Qwen2.5-7B-Instruct", utilization: 0, err: "gpu memory utilization 0: must be in (0, 1]"},
		{gpu: "L4", model: "Qwen2.5-7B-Instruct", utilization: 1.5, err: "gpu memory utilization 1.5: must be in (0, 1]"},
		{gpu: "L4", model: "Qwen2.5-7B-Instruct", utilization: math.NaN(), err: "gpu memory utilization NaN: must be in (0, 1]"},
	}
	for _, tt := range tests {
		g, _ := BuiltinGPU(tt.gpu)
		m, _ := BuiltinModel(tt.model)
		got, err := KVCapacityTokens(g, m, tt.utilization)
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%s + %s", tt.gpu, tt.model)
	}

	g, _ := BuiltinGPU("L4")
	m, _ := BuiltinModel("Qwen2.5-14B-Instruct")
	_, err := KVCapacityTokens(g, m, 0.9)
	var fit *FitError
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, FitError{GPU: "L4", Model: "Qwen2.5-14B-Instruct", MemoryGB: 24, WeightGB: 29.540067328, Utilization: 0.9}, *fit)

	bad := g
	bad.MemoryGB = -1
	_, err = KVCapacityTokens(bad, m, 0.9)
	assert.EqualError(t, err, `gpu card L4: field memory_gb "-1": must be finite and positive`, "an invalid card is its Validate error")
}

func TestLookup(t *testing.T) {
	t.Parallel()
	gpus := []struct{ name, want string }{
		{"L4", "L4"}, {"l4", "L4"}, {"NVIDIA-L4", "L4"},
		{"a10g", "A10G"}, {"l40s", "L40S"},
		{"a100-40gb", "A100-40GB"}, {"A100-40G", "A100-40GB"}, {"a100-sxm4-40gb", "A100-40GB"},
		{"A100-80gb", "A100-80GB"}, {"a100-80g", "A100-80GB"},
		{"h100", "H100"}, {"H100-SXM", "H100"}, {"h100-sxm5", "H100"}, {"h100-80gb", "H100"},
		{"a100", ""}, {"a10", ""}, {"h100-pcie", ""}, {"", ""}, {"L4 ", ""},
	}
	for _, tt := range gpus {
		g, ok := BuiltinGPU(tt.name)
		assert.Equal(t, tt.want != "", ok, tt.name)
		assert.Equal(t, tt.want, g.Name, tt.name)
	}
	models := []struct{ name, want string }{
		{"Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"}, {"qwen2.5-7b-instruct", "Qwen2.5-7B-Instruct"},
		{"qwen2.5-7b", "Qwen2.5-7B-Instruct"}, {"Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct"},
		{"llama-3.1-8b", "Llama-3.1-8B-Instruct"}, {"Llama3.1-8B", "Llama-3.1-8B-Instruct"},
		{"meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"}, {"meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"},
		{"mistral-7b", "Mistral-7B-Instruct-v0.3"}, {"MISTRAL-7B-INSTRUCT-V0.3", "Mistral-7B-Instruct-v0.3"},
		{"mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-Instruct-v0.3"},
		{"qwen2.5-14b", "Qwen2.5-14B-Instruct"},
		{"qwen2.5", ""}, {"llama", ""}, {"", ""},
	}
	for _, tt := range models {
		m, ok := BuiltinModel(tt.name)
		assert.Equal(t, tt.want != "", ok, tt.name)
		assert.Equal(t, tt.want, m.Name, tt.name)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	g, err := ResolveGPU("h100-sxm")
	require.NoError(t, err)
	assert.Equal(t, "H100", g.Name)
	g, err = ResolveGPU("testdata/lab-gpu.json")
	require.NoError(t, err)
	assert.Equal(t, GPU{Name: "lab-gpu", MemoryGB: 32, MemoryBandwidthGBps: 1000, PeakTFLOPS: 200, BoardPowerW: 450,
		MemoryEfficiency: 0.8, ComputeEfficiency: DefaultComputeEfficiency, IterationOverheadS: DefaultIterationOverheadS}, g)
	m, err := ResolveModel("testdata/tiny-model.json")
	require.NoError(t, err)
	assert.Equal(t, Model{Name: "tiny-model", WeightGB: 2.5, Layers: 16, HiddenSize: 2048, AttentionHeads: 16, KVHeads: 4,
		HeadSize: 128, Dtype: "float16"}, m)
	m, err = ResolveModel("Qwen/Qwen2.5-14B-Instruct")
	require.NoError(t, err)
	assert.Equal(t, "Qwen2.5-14B-Instruct", m.Name)

	tests := []struct {
		name, gpu, model string
		err              string
	}{
		{name: "unknown GPU", gpu: "FOO",
			err: `unknown GPU card "FOO": expected one of L4, A10G, L40S, A100-40GB, A100-80GB, H100 or a card file`},
		{name: "ambiguous A100", gpu: "a100", err: `ambiguous GPU card "a100": expected A100-40GB or A100-80GB`},
		{name: "ambiguous A100 SXM", gpu: "A100-SXM4", err: `ambiguous GPU card "A100-SXM4": expected A100-40GB or A100-80GB`},
		{name: "unknown model", model: "gpt-5",
			err: `unknown model card "gpt-5": expected one of Qwen2.5-7B-Instruct, Llama-3.1-8B-Instruct, ` +
				`Mistral-7B-Instruct-v0.3, Qwen2.5-14B-Instruct or a card file`},
		{name: "missing GPU file", gpu: "testdata/nope.json", err: "gpu card testdata/nope.json: cannot be read: no such file or directory"},
		{name: "missing model file", model: "nope.json", err: "model card nope.json: cannot be read: no such file or directory"},
		{name: "a folder", gpu: "testdata", err: "gpu card testdata: is a folder, not a card file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.gpu != "" {
				_, err = ResolveGPU(tt.gpu)
			} else {
				_, err = ResolveModel(tt.model)
			}
			require.EqualError(t, err, tt.err)
		})
	}

	_, err = ResolveGPU("a100")
	var unknown *UnknownCardError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, UnknownCardError{Kind: "gpu", Name: "a100", Known: GPUNames(), Ambiguous: []string{"A100-40GB", "A100-80GB"}}, *unknown)
	_, err = ResolveModel("missing.json")
	assert.True(t, errors.Is(err, errNotExist()), "a missing file is fs.ErrNotExist: %v", err)
}
