package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/calibrate"
	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/profile/profiletest"
	"servesim/internal/testsupport"
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
		t.Run(tt.name, func(t *testing.T) { requireCalibrateUsageError(t, tt.args, tt.wantErr) })
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

// bundleTestdata is the folder of the raw rows and telemetry the bundle
// tests and calibrate_bundle.txtar write bundles from, generated by
// bundleTestdataFiles (go test -run TestCalibrateBundleTestdata -update).
const bundleTestdata = "testdata/calibrate_bundle"

// bundleMetadata is run metadata for bundleTestdata's run.
const bundleMetadata = `{
  "gpu": {"name": "NVIDIA L4", "driver": "570.124.06", "memory_mib": 23034},
  "model": "Qwen/Qwen2.5-7B-Instruct",
  "model_revision": "acbd96531cda22292a3ceaa67e984955d3965282",
  "vllm_image": "vllm/vllm-openai:v0.28.0",
  "vllm_image_digest": "vllm/vllm-openai@sha256:5e1f0c7a5e1f0c7a5e1f0c7a5e1f0c7a5e1f0c7a5e1f0c7a5e1f0c7a5e1f0c7a",
  "vllm_server_arguments": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--no-enable-prefix-caching"],
  "power_cap_w": 72, "thermal_limit_c": 80, "warmup_batches_per_condition": 1,
  "baseline_ttft_s": 0.2, "baseline_tpot_s": 0.021,
  "measured_on": "2026-03-14", "completed_utc": "2026-03-14T22:41:07Z"
}
`

// bundleTestdataFiles are the synthetic profiletest bundle's raw rows
// (without the plateau's clock, 2100 MHz: four requested clocks, the
// fewest a bundle has) and 20 telemetry rows.
func bundleTestdataFiles() map[string][]byte {
	b := profiletest.New(20)
	b.Raw.Rows = slices.DeleteFunc(b.Raw.Rows, func(row []string) bool { return row[b.Raw.Column("requested_clock_mhz")] == "2100" })
	files := b.Files()
	return map[string][]byte{profiletest.RawCSV: files[profiletest.RawCSV], profiletest.TelemetryCSV: files[profiletest.TelemetryCSV]}
}

// TestCalibrateBundleTestdata regenerates the committed bundle inputs and
// compares them (-update rewrites them).
func TestCalibrateBundleTestdata(t *testing.T) {
	t.Parallel()
	for name, generated := range bundleTestdataFiles() {
		testsupport.CheckGolden(t, filepath.Join(bundleTestdata, name), generated)
	}
}

func TestCalibrateBundleFlags(t *testing.T) {
	t.Parallel()
	all := []string{"--bundle-raw", "r.csv", "--bundle-telemetry", "t.csv", "--bundle-metadata", "m.json", "--bundle-out", "out"}
	o, code, stderr := parseCalibrate(t, append(all, "-o", "doc.json")...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "r.csv", o.BundleRaw)
	assert.Equal(t, "t.csv", o.BundleTelemetry)
	assert.Equal(t, "m.json", o.BundleMetadata)
	assert.Equal(t, "out", o.BundleOut)
	assert.Empty(t, o.Bench, "no bench file is needed")
	assert.Equal(t, "doc.json", o.Output.Path)

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"out alone", []string{"--bundle-out", "out"},
			"--bundle-out: needs --bundle-raw, --bundle-telemetry, --bundle-metadata too: a bundle is written from"},
		{"no out", all[:6], "--bundle-raw, --bundle-telemetry, --bundle-metadata: needs --bundle-out too"},
		{"with bench", append([]string{"--bench", "c1.json"}, all...), "--bench: not with --bundle-out: writing a bundle fits nothing"},
		{"with table", append(all, "--format", "table"), "--format: not with --bundle-out"},
		{"with a plant flag", append(all, "--power-limit", "70"), "--power-limit: not with --bundle-out"},
		{"empty name", append(all[:7:7], ""), `--bundle-out "": expected a new folder (an empty value is not "the default"`},
	} {
		t.Run(tt.name, func(t *testing.T) { requireCalibrateUsageError(t, tt.args, tt.wantErr) })
	}
}

// TestCalibrateBundleRun writes the bundle of the testdata run and checks
// the document against the files and the validation of the folder.
func TestCalibrateBundleRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := filepath.Join(dir, "meta.json")
	require.NoError(t, os.WriteFile(meta, []byte(bundleMetadata), 0o644))
	out := filepath.Join(dir, "bundle")
	args := []string{"calibrate", "--bundle-raw", filepath.Join(bundleTestdata, profiletest.RawCSV),
		"--bundle-telemetry", filepath.Join(bundleTestdata, profiletest.TelemetryCSV), "--bundle-metadata", meta, "--bundle-out", out}
	s, stdout, stderr := testStreams("")
	require.Equal(t, exitOK, runCommands(context.Background(), args, s, commands()), stderr.String())
	assert.Empty(t, stderr.String())
	var doc profile.BundleDocument
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc))
	assert.Equal(t, out, doc.Bundle)
	assert.Equal(t, profiletest.ModeledMHz, doc.ModeledClocksMHz)
	assert.Empty(t, doc.ExcludedClocksMHz)
	require.Len(t, doc.Files, 5)
	for _, f := range doc.Files {
		data, err := os.ReadFile(filepath.Join(out, f.Name))
		require.NoError(t, err)
		assert.Equal(t, profiletest.SHA256(data), f.SHA256, f.Name)
		assert.Equal(t, len(data), f.Bytes, f.Name)
	}
	_, failed := profile.NewVerdicts([]string{doc.Profile}, true)
	assert.NoError(t, failed)

	// The same folder again is bad input, and left as it is.
	s, stdout, stderr = testStreams("")
	assert.Equal(t, exitInput, runCommands(context.Background(), args, s, commands()))
	assert.Empty(t, stdout.String())
	assert.Equal(t, "servesim: bundle "+out+": the folder exists and is not empty: write the bundle to a new folder\n", stderr.String())
}

// TestCalibrateCommitsItsOutputsTogether fits two runs saved by bench:
// the figure, the card and the report appear together or not at all.
func TestCalibrateCommitsItsOutputsTogether(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	for _, c := range []string{"1", "8"} {
		code, _, stderr := runCLI(t, "bench", "--max-concurrency", c, "--num-prompts", "20", "--save-result",
			"--result-dir", runs, "--result-filename", "c"+c+".json", "-o", filepath.Join(runs, "c"+c+".txt"))
		require.Equal(t, exitOK, code, stderr)
	}
	args := func(plot, card, out string) func(dir string) []string {
		return func(dir string) []string {
			return []string{"calibrate", "--bench", filepath.Join(runs, "c1.json"), "--bench", filepath.Join(runs, "c8.json"),
				"--plot", filepath.Join(dir, plot), "--out-gpu", filepath.Join(dir, card), "-o", filepath.Join(dir, out)}
		}
	}
	runCommitCases(t, []commitCase{
		{name: "-o fails", args: args("fit.svg", "card.json", "file/r.json"), wantErr: notAFolder("-o", "r.json")},
		{name: "--out-gpu fails", args: args("fit.svg", "file/card.json", "r.json"), wantErr: notAFolder("--out-gpu", "card.json")},
		{name: "--plot fails", args: args("file/fit.svg", "card.json", "r.json"), wantErr: notAFolder("--plot", "fit.svg")},
		{name: "stdout fails", args: func(dir string) []string {
			return []string{"calibrate", "--bench", filepath.Join(runs, "c1.json"), "--bench", filepath.Join(runs, "c8.json"),
				"--plot", filepath.Join(dir, "fit.png"), "--out-gpu", filepath.Join(dir, "card.json"), "--format", "table"}
		}, stdout: fullDevice(), wantErr: func(string) string { return "stdout: no space left on device" }},
		{name: "all written", args: args("fit.svg", "card.json", "r.json"), want: []string{"fit.svg", "card.json", "r.json"}},
	})
}

// requireCalibrateUsageError parses args and checks that they are a usage
// error: exit 2, one stderr line starting with wantErr, no run.
func requireCalibrateUsageError(t *testing.T, args []string, wantErr string) {
	t.Helper()
	o, code, stderr := parseCalibrate(t, args...)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Nil(t, o, "the command did not run")
	assert.True(t, strings.HasPrefix(stderr, "servesim: "+wantErr), "stderr %q, want %q", stderr, wantErr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
}
