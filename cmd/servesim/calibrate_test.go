package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/calibrate"
	"servesim/internal/cards"
	"servesim/internal/plant"
)

// parseCalibrate runs `servesim calibrate args` with a runF that captures
// the options instead of calibrating.
func parseCalibrate(t *testing.T, args ...string) (*calibrateOptions, int, string) {
	t.Helper()
	o, code, _, stderr := parseFlags(t, "calibrate", newCalibrateCmd, args...)
	return o, code, stderr
}

func TestCalibrateFlagDefaults(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseCalibrate(t, "--bench", "c1.json")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, []string{"c1.json"}, o.Bench)
	assert.Empty(t, o.HoldOut)
	assert.Empty(t, o.PowerLogs)
	assert.Empty(t, o.ProfilePath, "the embedded proxy")
	assert.Equal(t, calibrate.ParamNames, o.Fit)
	assert.Equal(t, 3, o.Seeds)
	assert.Equal(t, plant.ServiceBatched, o.Service.Kind)
	assert.Equal(t, cards.DefaultGPU, o.Service.GPU)
	assert.Equal(t, cards.DefaultModel, o.Service.ModelCard)
	assert.Zero(t, o.Service.MaxNumSeqs, "vLLM's default")
	assert.Zero(t, o.Service.MaxNumBatchedTokens, "vLLM's default")
	assert.Equal(t, plant.DefaultGPUMemoryUtilization, o.Service.GPUMemoryUtilization)
	assert.Equal(t, plant.NewPlant(nil), o.Plant, "the plant's defaults: its power limit decides")
	assert.False(t, o.kvGiven)
	assert.Empty(t, o.OutGPU)
	assert.Empty(t, o.OutProfile)
	assert.Equal(t, "json", o.Format)
	assert.Empty(t, o.Output.Path)
	assert.Empty(t, o.Plot.Path)
}

func TestCalibrateFlagsSetEveryField(t *testing.T) {
	t.Parallel()
	o, code, stderr := parseCalibrate(t, "--bench", "c1.json", "--bench", "a,b.json", "--holdout", "c32.json", "--holdout", "c64.json",
		"--power-log", "gpu.csv", "--power-log", "gpu2.csv", "--profile", "bundle", "--fit", "memory_efficiency, iteration_overhead_s",
		"--seeds", "5", "--gpu", "A100-80GB", "--model", "Llama-3.1-8B-Instruct", "--max-num-seqs", "64", "--max-num-batched-tokens", "4096",
		"--gpu-memory-utilization", "0.85", "--power-limit", "72", "--kv-capacity", "50000", "--out-gpu", "fitted.json",
		"--out-profile", "profile.csv", "--format", "table", "-o", "report.txt", "--plot", "fit.svg")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, []string{"c1.json", "a,b.json"}, o.Bench, "a file name may hold a comma")
	assert.Equal(t, []string{"c32.json", "c64.json"}, o.HoldOut)
	assert.Equal(t, []string{"gpu.csv", "gpu2.csv"}, o.PowerLogs)
	assert.Equal(t, "bundle", o.ProfilePath)
	assert.Equal(t, []string{calibrate.ParamMemoryEfficiency, calibrate.ParamIterationOverheadS}, o.Fit)
	assert.Equal(t, 5, o.Seeds)
	assert.Equal(t, "A100-80GB", o.Service.GPU)
	assert.Equal(t, "Llama-3.1-8B-Instruct", o.Service.ModelCard)
	assert.Equal(t, 64, o.Service.MaxNumSeqs)
	assert.Equal(t, 4096, o.Service.MaxNumBatchedTokens)
	assert.Equal(t, 0.85, o.Service.GPUMemoryUtilization)
	assert.Equal(t, 72.0, o.Plant.PowerLimitW)
	assert.Equal(t, 50000.0, o.Plant.KVCapacityTokens)
	assert.True(t, o.kvGiven)
	assert.Equal(t, "fitted.json", o.OutGPU)
	assert.Equal(t, "profile.csv", o.OutProfile)
	assert.Equal(t, "table", o.Format)
	assert.Equal(t, "report.txt", o.Output.Path)
	assert.Equal(t, "fit.svg", o.Plot.Path)
}

func TestCalibrateRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no bench", nil, "--bench: expected at least one result file of vllm bench serve --save-result to fit on"},
		{"holdout alone", []string{"--holdout", "c32.json"}, "--bench: expected at least one"},
		{"out-profile without power log", []string{"--bench", "c1.json", "--out-profile", "p.csv"},
			"--out-profile p.csv: needs --power-log: the profile's powers are fitted from power logs"},
		{"out-profile not csv", []string{"--bench", "c1.json", "--power-log", "g.csv", "--out-profile", "p.json"},
			`--out-profile "p.json": expected a .csv file (its manifest goes beside it as .json)`},
		{"unknown fit", []string{"--bench", "c1.json", "--fit", "memory_efficiency,speed"},
			`--fit "speed": expected memory_efficiency, compute_efficiency or iteration_overhead_s`},
		{"fit twice", []string{"--bench", "c1.json", "--fit", "memory_efficiency,memory_efficiency"}, `--fit "memory_efficiency": listed twice`},
		{"empty fit", []string{"--bench", "c1.json", "--fit", ""}, "--fit: expected one or more of"},
		{"zero seeds", []string{"--bench", "c1.json", "--seeds", "0"}, "--seeds 0: expected a whole number of at least 1"},
		{"seeds not a number", []string{"--bench", "c1.json", "--seeds", "many"}, "--seeds"},
		{"unknown gpu", []string{"--bench", "c1.json", "--gpu", "B200"}, `--gpu "B200": expected a built-in card (L4, `},
		{"ambiguous gpu", []string{"--bench", "c1.json", "--gpu", "a100"}, `--gpu "a100": ambiguous`},
		{"unknown model", []string{"--bench", "c1.json", "--model", "gpt5"}, `--model "gpt5": expected a built-in card`},
		{"max-num-seqs", []string{"--bench", "c1.json", "--max-num-seqs", "0"}, "--max-num-seqs 0: expected a whole number of at least 1"},
		{"memory share", []string{"--bench", "c1.json", "--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization 1.5: expected a share in (0, 1]"},
		{"no service-model flag", []string{"--bench", "c1.json", "--service-model", "batched"}, "unknown flag: --service-model"},
		{"run fitted and held out", []string{"--bench", "c1.json", "--holdout", "./c1.json"}, "--holdout ./c1.json: given to --bench already"},
		{"run twice", []string{"--bench", "c1.json", "--bench", "c1.json"}, "--bench c1.json: given to --bench already"},
		{"card over report", []string{"--bench", "c1.json", "-o", "f.json", "--out-gpu", "f.json"}, "--out-gpu f.json: -o writes that file already"},
		{"manifest over card", []string{"--bench", "c1.json", "--power-log", "g.csv", "--out-gpu", "p.json", "--out-profile", "p.csv"},
			"--out-profile's manifest p.json: --out-gpu writes that file already"},
		{"plot extension", []string{"--bench", "c1.json", "--plot", "fit.jpg"}, `--plot "fit.jpg": expected a .png or .svg extension`},
		{"format", []string{"--bench", "c1.json", "--format", "csv"}, "--format"},
		{"argument", []string{"--bench", "c1.json", "c8.json"}, `unknown command "c8.json"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, code, stderr := parseCalibrate(t, tt.args...)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Nil(t, o, "the command did not run")
			assert.True(t, strings.HasPrefix(stderr, "servesim: "+tt.wantErr), "stderr %q, want %q", stderr, tt.wantErr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
}

// TestCalibrateBadInput runs the command on files it cannot use: each is
// bad input (exit 1) in one line naming the file.
func TestCalibrateBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	other := write("other.json", `{"date": "20250101-120000", "model_id": "facebook/opt-125m", "request_rate": "inf", "duration": 2.0,
		"input_lens": [10], "output_lens": [2], "ttfts": [0.5], "itls": [[0.25]]}`)
	qwen := write("qwen.json", `{"date": "20250101-130000", "model_id": "Qwen2.5-7B-Instruct", "request_rate": "inf", "duration": 2.0,
		"input_lens": [10], "output_lens": [2], "ttfts": [0.5], "itls": [[0.25]]}`)
	bad := write("bad.json", `{"model_id": 3}`)
	shadowed := filepath.Join(dir, "shadow")
	require.NoError(t, os.Mkdir(shadowed, 0o755))
	write("shadow/profile_manifest.json", "{}")
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing bench file", []string{"--bench", filepath.Join(dir, "none.json")}, "bench file " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{"invalid bench file", []string{"--bench", bad}, "bench file " + bad + ": "},
		{"two models", []string{"--bench", qwen, "--holdout", other},
			"bench file " + other + `: model_id "facebook/opt-125m": the other runs are of "Qwen2.5-7B-Instruct": calibrate one model at a time`},
		{"one load level", []string{"--bench", qwen}, "calibrate: the runs are at 1 load level: "},
		{"missing power log", []string{"--bench", qwen, "--power-log", filepath.Join(dir, "none.csv")}, "power log " + filepath.Join(dir, "none.csv") + ": "},
		{"missing card file", []string{"--bench", qwen, "--gpu", filepath.Join(dir, "card.json")}, "gpu card " + filepath.Join(dir, "card.json")},
		{"shadowed manifest", []string{"--bench", qwen, "--power-log", "g.csv", "--out-profile", filepath.Join(shadowed, "p.csv")},
			"--out-profile " + filepath.Join(shadowed, "p.csv") + ": its folder holds "},
		{"plant", []string{"--bench", qwen, "--power-limit", "-1"}, "plant: --power-limit: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams("")
			code := runCommands(context.Background(), append([]string{"calibrate"}, tt.args...), s, commands())
			assert.Equal(t, exitInput, code, errOut.String())
			assert.Empty(t, out.String())
			assert.True(t, strings.HasPrefix(errOut.String(), "servesim: "+tt.wantErr), "stderr %q, want %q", errOut.String(), tt.wantErr)
			assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %q", errOut.String())
		})
	}
}

func TestShellWord(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"fitted.json", "fitted.json"},
		{"out/l4-fitted_1.json", "out/l4-fitted_1.json"},
		{"my card.json", "'my card.json'"},
		{"it's.json", `'it'\''s.json'`},
		{"", "''"},
	} {
		assert.Equal(t, tt.want, shellWord(tt.in), tt.in)
	}
}
