package cards

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errNotExist is fs.ErrNotExist, for errors.Is.
func errNotExist() error { return fs.ErrNotExist }

const goodGPU = `{"memory_gb": 24, "memory_bandwidth_gb_per_s": 300, "peak_dense_tflops": 121, "board_power_w": 72}`

const goodModel = `{"name": "m", "weight_gb": 15, "layers": 28, "hidden_size": 3584, "attention_heads": 28,
 "kv_heads": 4, "head_size": 128, "dtype": "bfloat16"}`

// edit replaces the first old in card with new.
func edit(card, old, new string) string { return strings.Replace(card, old, new, 1) }

func TestParseGPU(t *testing.T) {
	t.Parallel()
	g, err := ParseGPU("cards/my-l4.json", []byte(goodGPU))
	require.NoError(t, err)
	assert.Equal(t, GPU{Name: "my-l4", MemoryGB: 24, MemoryBandwidthGBps: 300, PeakTFLOPS: 121, BoardPowerW: 72,
		MemoryEfficiency: 0.85, ComputeEfficiency: 0.55, IterationOverheadS: 0.002}, g, "defaults for the optional fields")
	g, err = ParseGPU("x.json", []byte(edit(goodGPU, "{", `{"name": "Mine", "iteration_overhead_s": 0, "compute_efficiency": 1,`)))
	require.NoError(t, err)
	assert.Equal(t, "Mine", g.Name)
	assert.Equal(t, 0.0, g.IterationOverheadS, "no per-iteration overhead is allowed")
	assert.Equal(t, 1.0, g.ComputeEfficiency)

	tests := []struct {
		name, data, err string
	}{
		{"empty file", "", "gpu card my.json: empty file: expected a JSON object of the card's fields"},
		{"blank file", " \n\t", "gpu card my.json: empty file: expected a JSON object of the card's fields"},
		{"array", "[1]", "gpu card my.json: expected a JSON object of the card's fields, got an array"},
		{"null", "null", "gpu card my.json: expected a JSON object of the card's fields, got null"},
		{"number", " 3", "gpu card my.json: expected a JSON object of the card's fields, got a number"},
		{"missing field", edit(goodGPU, `"board_power_w": 72`, `"memory_efficiency": 0.9`),
			"gpu card my.json: field board_power_w: missing"},
		{"negative", edit(goodGPU, "300", "-3"),
			`gpu card my.json: field memory_bandwidth_gb_per_s "-3": must be finite and positive`},
		{"zero", edit(goodGPU, "24", "0"), `gpu card my.json: field memory_gb "0": must be finite and positive`},
		{"zero as written", edit(goodGPU, "24", "0.0e0"), `gpu card my.json: field memory_gb "0.0e0": must be finite and positive`},
		{"out of range", edit(goodGPU, "121", "1e999"), `gpu card my.json: field peak_dense_tflops "1e999": out of range`},
		{"wrong type", edit(goodGPU, "24", `"24"`), `gpu card my.json: field memory_gb "24": expected a number, got a string`},
		{"null value", edit(goodGPU, "72", "null"), `gpu card my.json: field board_power_w "null": expected a number, got null`},
		{"name a number", edit(goodGPU, "{", `{"name": 4,`), `gpu card my.json: field name "4": expected a string, got a number`},
		{"empty name", edit(goodGPU, "{", `{"name": "",`), `gpu card my.json: field name: must not be empty`},
		{"control in name", edit(goodGPU, "{", `{"name": "a\nb",`), `gpu card my.json: field name "a\nb": must not hold control characters`},
		{"unknown field", edit(goodGPU, "memory_gb", "memroy_gb"),
			`gpu card my.json: unknown field "memroy_gb": expected one of name, memory_gb, memory_bandwidth_gb_per_s, ` +
				`peak_dense_tflops, board_power_w, memory_efficiency, compute_efficiency, iteration_overhead_s`},
		{"twice", edit(goodGPU, "{", `{"board_power_w": 70,`), "gpu card my.json: field board_power_w: given twice"},
		{"efficiency 1.5", edit(goodGPU, "{", `{"memory_efficiency": 1.5,`), `gpu card my.json: field memory_efficiency "1.5": must be in (0, 1]`},
		{"efficiency 0", edit(goodGPU, "{", `{"compute_efficiency": 0,`), `gpu card my.json: field compute_efficiency "0": must be in (0, 1]`},
		{"negative overhead", edit(goodGPU, "{", `{"iteration_overhead_s": -0.001,`),
			`gpu card my.json: field iteration_overhead_s "-0.001": must be finite and not negative`},
		{"trailing data", goodGPU + "\n\n {}", "gpu card my.json: trailing data after the JSON object on line 3"},
		{"trailing brace", goodGPU + "}", "gpu card my.json: trailing data after the JSON object on line 1"},
		{"truncated", goodGPU[:40], "gpu card my.json: invalid JSON: the file ends inside the object"},
		{"syntax", "{\n\"memory_gb\" 24}", "gpu card my.json: invalid JSON on line 2: expected colon after object key"},
		{"too large", goodGPU + strings.Repeat(" ", int(MaxFileBytes)), "gpu card my.json: 1.0 MiB: larger than the 1 MiB cap on a card file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseGPU("my.json", []byte(tt.data))
			require.EqualError(t, err, tt.err)
			var fieldErr *FieldError
			require.ErrorAs(t, err, &fieldErr)
			assert.Equal(t, "my.json", fieldErr.File)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestParseModel(t *testing.T) {
	t.Parallel()
	m, err := ParseModel("m.json", []byte(goodModel))
	require.NoError(t, err)
	assert.Equal(t, Model{Name: "m", WeightGB: 15, Layers: 28, HiddenSize: 3584, AttentionHeads: 28, KVHeads: 4, HeadSize: 128, Dtype: "bfloat16"}, m)

	tests := []struct {
		name, data, err string
	}{
		{"empty file", "", "model card m.json: empty file: expected a JSON object of the card's fields"},
		{"missing field", edit(goodModel, `"head_size": 128,`, ""), "model card m.json: field head_size: missing"},
		{"missing dtype", edit(goodModel, `, "dtype": "bfloat16"`, ""), "model card m.json: field dtype: missing"},
		{"negative weights", edit(goodModel, "15", "-15"), `model card m.json: field weight_gb "-15": must be finite and positive`},
		{"zero layers", edit(goodModel, `"layers": 28`, `"layers": 0`), `model card m.json: field layers "0": must be a positive integer`},
		{"negative heads", edit(goodModel, `"kv_heads": 4`, `"kv_heads": -4`), `model card m.json: field kv_heads "-4": must be a positive integer`},
		{"fractional", edit(goodModel, `"layers": 28`, `"layers": 28.5`), `model card m.json: field layers "28.5": expected an integer`},
		{"integral float", edit(goodModel, `"layers": 28`, `"layers": 28.0`), `model card m.json: field layers "28.0": expected an integer`},
		{"huge integer", edit(goodModel, `"layers": 28`, `"layers": 99999999999999999999`),
			`model card m.json: field layers "99999999999999999999": out of range`},
		{"wrong type", edit(goodModel, `"layers": 28`, `"layers": [28]`), `model card m.json: field layers "[28]": expected an integer, got an array`},
		{"boolean", edit(goodModel, `"hidden_size": 3584`, `"hidden_size": true`),
			`model card m.json: field hidden_size "true": expected an integer, got a boolean`},
		{"dtype unknown", edit(goodModel, "bfloat16", "int4"), `model card m.json: field dtype "int4": expected one of bfloat16, float16, fp8`},
		{"dtype case", edit(goodModel, "bfloat16", "BF16"), `model card m.json: field dtype "BF16": expected one of bfloat16, float16, fp8`},
		{"heads not divisible", edit(goodModel, `"kv_heads": 4`, `"kv_heads": 5`),
			`model card m.json: field attention_heads "28": must be a multiple of kv_heads (5)`},
		{"unknown field", edit(goodModel, "layers", "num_hidden_layers"),
			`model card m.json: unknown field "num_hidden_layers": expected one of name, weight_gb, layers, hidden_size, ` +
				`attention_heads, kv_heads, head_size, dtype`},
		{"trailing data", goodModel + " x", "model card m.json: trailing data after the JSON object on line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseModel("m.json", []byte(tt.data))
			require.EqualError(t, err, tt.err)
			var fieldErr *FieldError
			require.ErrorAs(t, err, &fieldErr)
			assert.Equal(t, "m.json", fieldErr.File)
		})
	}
}

func TestValidateNamesTheCard(t *testing.T) {
	t.Parallel()
	l4, _ := BuiltinGPU("L4")
	qwen, _ := BuiltinModel("qwen2.5-7b")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bandwidth", func() error { g := l4; g.MemoryBandwidthGBps = -3; return g.Validate() }(),
			`gpu card L4: field memory_bandwidth_gb_per_s "-3": must be finite and positive`},
		{"infinite power", func() error { g := l4; g.BoardPowerW = posInf(); return g.Validate() }(),
			`gpu card L4: field board_power_w "+Inf": must be finite and positive`},
		{"NaN efficiency", func() error { g := l4; g.MemoryEfficiency = nan(); return g.Validate() }(),
			`gpu card L4: field memory_efficiency "NaN": must be in (0, 1]`},
		{"no name", func() error { g := l4; g.Name = " "; return g.Validate() }(), `gpu card: field name " ": must not be empty`},
		{"NaN weights", func() error { m := qwen; m.WeightGB = nan(); return m.Validate() }(),
			`model card Qwen2.5-7B-Instruct: field weight_gb "NaN": must be finite and positive`},
		{"zero KV heads", func() error { m := qwen; m.KVHeads = 0; return m.Validate() }(),
			`model card Qwen2.5-7B-Instruct: field kv_heads "0": must be a positive integer`},
		{"no dtype", func() error { m := qwen; m.Dtype = ""; return m.Validate() }(),
			`model card Qwen2.5-7B-Instruct: field dtype: expected one of bfloat16, float16, fp8`},
	}
	for _, tt := range tests {
		assert.EqualError(t, tt.err, tt.want, tt.name)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600))
	_, err := LoadGPU(big)
	assert.EqualError(t, err, "gpu card "+big+": 1.0 MiB: larger than the 1 MiB cap on a card file")
	_, err = LoadModel(dir)
	assert.EqualError(t, err, "model card "+dir+": is a folder, not a card file")

	named := filepath.Join(dir, "bench.v2.json")
	require.NoError(t, os.WriteFile(named, []byte(goodGPU), 0o600))
	g, err := LoadGPU(named)
	require.NoError(t, err)
	assert.Equal(t, "bench.v2", g.Name, "the base name without its last extension")
}
