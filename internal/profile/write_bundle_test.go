package profile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/profile/profiletest"
)

// bundleInput is the input of the default synthetic bundle: its raw rows,
// telemetry and, as run metadata, its manifest's fields (plus the power
// cap and thermal limit, which it does not record).
func bundleInput(t testing.TB, b *profiletest.Bundle) profile.BundleInput {
	t.Helper()
	files := b.Files()
	var meta profile.BundleMetadata
	require.NoError(t, json.Unmarshal(b.Manifest.Bytes(), &meta))
	meta.PowerCapW, meta.ThermalLimitC = 72, 80
	return profile.BundleInput{Raw: files[profiletest.RawCSV], Telemetry: files[profiletest.TelemetryCSV], Metadata: meta}
}

func TestWriteBundleIsValidMeasuredBundle(t *testing.T) {
	t.Parallel()
	in := bundleInput(t, profiletest.New(40))
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, profile.WriteBundle(dir, in))

	verdicts, failed := profile.NewVerdicts([]string{dir}, true)
	require.NoError(t, failed)
	v := verdicts.Bundles[0]
	assert.True(t, v.MeasurementValidated)
	for _, c := range v.Checks {
		assert.Equal(t, profile.CheckOK, c.Status, "%s: %s", c.Name, c.Detail)
	}
	assert.Contains(t, v.Checks, profile.Check{Name: "realized_medians_match", Status: profile.CheckOK, Detail: "within 1e-9 MHz"})

	got, err := profile.Load(filepath.Join(dir, profile.BundleProfileCSV))
	require.NoError(t, err)
	assert.Equal(t, profiletest.ModeledMHz, got.ClockMHz, "the plateau's upper clock is excluded")
	assert.Equal(t, []float64{1186.25, 1486.25, 1786.25, 2011.25}, got.RealizedClockLevelsMHz())

	for name, want := range map[string][]byte{profiletest.RawCSV: in.Raw, profiletest.TelemetryCSV: in.Telemetry} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, data, "%s is written as given", name)
	}
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary folder is left")
}

// withoutClock drops the raw rows of a requested clock.
func withoutClock(b *profiletest.Bundle, clock string) *profiletest.Bundle {
	b.Raw.Rows = slices.DeleteFunc(b.Raw.Rows, func(row []string) bool { return row[b.Raw.Column("requested_clock_mhz")] == clock })
	return b
}

// TestWriteBundleAggregatesAsReference compares the written profile with
// the reference's aggregation of the raw rows alone (a raw-schema profile
// without manifest): the same rates and powers, there indexed by realized
// clock. The plateau's clock is dropped so that both have increasing
// clocks.
func TestWriteBundleAggregatesAsReference(t *testing.T) {
	t.Parallel()
	in := bundleInput(t, withoutClock(profiletest.New(10), "2100"))
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, profile.WriteBundle(dir, in))
	got, err := profile.Load(filepath.Join(dir, profile.BundleProfileCSV))
	require.NoError(t, err)
	assert.Equal(t, profiletest.ModeledMHz, got.ClockMHz)
	rawOnly := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rawOnly, "raw.csv"), in.Raw, 0o644))
	ref, err := profile.Load(filepath.Join(rawOnly, "raw.csv"))
	require.NoError(t, err)
	n := len(got.ClockMHz)
	assert.Equal(t, ref.PrefillTokensPerS[:n], got.PrefillTokensPerS)
	assert.Equal(t, ref.DecodeTokensPerS[:n], got.DecodeTokensPerS)
	assert.Equal(t, ref.IdlePowerW[:n], got.IdlePowerW)
	assert.Equal(t, ref.PrefillPowerW[:n], got.PrefillPowerW)
	assert.Equal(t, ref.DecodePowerW[:n], got.DecodePowerW)
	assert.Equal(t, in.Metadata.BaselineTTFTS, got.BaselineTTFTS)
	assert.Equal(t, in.Metadata.BaselineTPOTS, got.BaselineTPOTS)
}

func TestBuildBundleDocument(t *testing.T) {
	t.Parallel()
	b, err := profile.BuildBundle(bundleInput(t, profiletest.New(10)))
	require.NoError(t, err)
	doc := b.Document("out")
	assert.Equal(t, filepath.Join("out", "l4_profile.csv"), doc.Profile)
	assert.Equal(t, profiletest.ModeledMHz, doc.ModeledClocksMHz)
	assert.Equal(t, []float64{2100}, doc.ExcludedClocksMHz)
	var names []string
	for _, f := range doc.Files {
		names = append(names, f.Name)
		assert.Len(t, f.SHA256, 64)
		assert.Positive(t, f.Bytes)
	}
	assert.Equal(t, append(append([]string{}, profiletest.CSVFiles...), profiletest.ManifestJSON), names)
}

func TestWriteBundleModeledClocksAndIdlePower(t *testing.T) {
	t.Parallel()
	in := bundleInput(t, profiletest.New(10))
	idle := 17.5
	in.Metadata.IdlePowerW = &idle
	in.Metadata.ModeledClocksMHz = []float64{1200, 1500, 1800, 2100}
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, profile.WriteBundle(dir, in))
	got, err := profile.Load(dir + "/l4_profile.csv")
	require.NoError(t, err)
	assert.Equal(t, []float64{1200, 1500, 1800, 2100}, got.ClockMHz)
	assert.Equal(t, []float64{idle, idle, idle, idle}, got.IdlePowerW)
}

// TestWriteBundleRefusals changes one input at a time: each is refused in
// one line, and no folder is left behind.
func TestWriteBundleRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		change  func(b *profiletest.Bundle, in *profile.BundleInput)
		wantErr string
	}{
		{"negative realized clock", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Set(3, "realized_clock_mhz", "-5") },
			"l4_profile_raw.csv line 5: measured requested/realized clocks must be finite and positive"},
		{"condition outside the matrix", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Set(0, "prompt_tokens", "100") },
			"l4_profile_raw.csv line 2: raw profile contains a condition outside the fixed matrix"},
		{"missing repeat", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Rows = b.Raw.Rows[1:] },
			"l4_profile_raw.csv: raw profile repetition matrix is incomplete (1200 MHz prefill prompt=128 output=1 concurrency=1: repeats [1, 2, 3, 4])"},
		{"not a number", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Set(7, "repeat", "two") },
			"l4_profile_raw.csv line 9: repeat: "},
		{"fallback changes in a batch", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Set(6, "telemetry_sample_count", "99") },
			"l4_profile_raw.csv line 8: raw profile telemetry fallback metadata must be constant within a batch"},
		{"raw schema", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Header[7] = "ttft" },
			"l4_profile_raw.csv: expected the columns phase,prompt_tokens,"},
		{"three clocks", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Raw.Rows = b.Raw.Rows[:3*390] },
			"l4_profile_raw.csv: the rows hold 3 requested clocks [1200, 1500, 1800]: a measured bundle needs at least four"},
		{"telemetry schema", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Telemetry.Header[0] = "t" },
			"l4_telemetry.csv: expected the columns elapsed_s,"},
		{"telemetry empty", func(b *profiletest.Bundle, _ *profile.BundleInput) { b.Telemetry.Rows = nil }, "l4_telemetry.csv: no rows"},
		{"missing model", func(_ *profiletest.Bundle, in *profile.BundleInput) { in.Metadata.Model = " " },
			"bundle metadata: model: expected a non-empty string"},
		{"no power cap", func(_ *profiletest.Bundle, in *profile.BundleInput) { in.Metadata.PowerCapW = 0 },
			"bundle metadata: power_cap_w 0: expected a positive, finite number (W)"},
		{"modeled clock not requested", func(_ *profiletest.Bundle, in *profile.BundleInput) {
			in.Metadata.ModeledClocksMHz = []float64{1200, 1500, 1800, 2000}
		}, "bundle metadata: modeled_clocks_mhz: 2000 MHz is not a requested clock of the raw rows [1200, 1500, 1800, 2040, 2100]"},
		{"modeled plateau", func(_ *profiletest.Bundle, in *profile.BundleInput) {
			in.Metadata.ModeledClocksMHz = []float64{1200, 1500, 1800, 2040, 2100}
		}, "bundle metadata: modeled_clocks_mhz: at 2100 MHz the batch-balanced realized median or a rate does not increase"},
		// Pinned metadata is judged by the validation of the written bundle.
		{"other model", func(_ *profiletest.Bundle, in *profile.BundleInput) { in.Metadata.Model = "Qwen/Qwen2.5-72B" },
			"not written: the bundle fails validation check model: measured profile model metadata does not match the pinned model (model is 'Qwen/Qwen2.5-72B')"},
		{"prefix caching", func(_ *profiletest.Bundle, in *profile.BundleInput) {
			in.Metadata.VLLMServerArguments = append(in.Metadata.VLLMServerArguments, "--enable-prefix-caching")
		}, "not written: the bundle fails validation check prefix_caching_disabled: "},
		{"not an L4", func(_ *profiletest.Bundle, in *profile.BundleInput) { in.Metadata.GPU.Name = "NVIDIA A10G" },
			"not written: the bundle fails validation check gpu: "},
		{"warmup", func(_ *profiletest.Bundle, in *profile.BundleInput) { in.Metadata.WarmupBatches = 2 },
			"not written: the bundle fails validation check warmup: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := profiletest.New(10)
			in := bundleInput(t, b)
			tt.change(b, &in)
			files := b.Files()
			in.Raw, in.Telemetry = files[profiletest.RawCSV], files[profiletest.TelemetryCSV]
			parent := t.TempDir()
			err := profile.WriteBundle(filepath.Join(parent, "bundle"), in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n", "one line")
			entries, err := os.ReadDir(parent)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing is left behind")
		})
	}
}

func TestWriteBundleTarget(t *testing.T) {
	t.Parallel()
	in := bundleInput(t, profiletest.New(10))
	parent := t.TempDir()
	full := filepath.Join(parent, "full")
	require.NoError(t, os.Mkdir(full, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644))
	file := filepath.Join(parent, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	empty := filepath.Join(parent, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	for _, tt := range []struct {
		name, dir, wantErr string
	}{
		{"non-empty folder", full, "bundle " + full + ": the folder exists and is not empty: write the bundle to a new folder"},
		{"a file", file, "bundle " + file + ": exists and is not a folder"},
		{"no parent", filepath.Join(parent, "none", "b"), "bundle " + filepath.Join(parent, "none", "b") + ": cannot create a folder beside it: "},
		{"empty folder", empty, ""},
		{"trailing slash", filepath.Join(parent, "new") + "/", ""},
	} {
		err := profile.WriteBundle(tt.dir, in)
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.name)
			_, err := profile.Load(profile.ResolvePath(tt.dir))
			assert.NoError(t, err, tt.name)
			continue
		}
		require.Error(t, err, tt.name)
		assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "%s: %q, want %q", tt.name, err, tt.wantErr)
	}
	data, err := os.ReadFile(filepath.Join(full, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data), "an existing folder is left alone")
}

func TestParseBundleMetadata(t *testing.T) {
	t.Parallel()
	const valid = `{"gpu": {"name": "NVIDIA L4", "driver": "570.124.06", "memory_mib": 23034},
		"model": "Qwen/Qwen2.5-7B-Instruct", "model_revision": "acbd96531cda22292a3ceaa67e984955d3965282",
		"vllm_image": "vllm/vllm-openai:v0.28.0", "vllm_image_digest": "sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `",
		"vllm_server_arguments": ["--no-enable-prefix-caching"], "power_cap_w": 72, "thermal_limit_c": 80,
		"warmup_batches_per_condition": 1, "baseline_ttft_s": 0.2, "baseline_tpot_s": 0.021,
		"measured_on": "2026-03-14", "completed_utc": "2026-03-14T22:41:07Z"`
	m, err := profile.ParseBundleMetadata("meta.json", []byte(valid+"}"))
	require.NoError(t, err)
	assert.Equal(t, "NVIDIA L4", m.GPU.Name)
	assert.Equal(t, int64(23034), m.GPU.MemoryMiB)
	assert.Equal(t, 72.0, m.PowerCapW)
	assert.Nil(t, m.IdlePowerW)
	m, err = profile.ParseBundleMetadata("meta.json", []byte(valid+`, "idle_power_w": 16, "modeled_clocks_mhz": [1, 2]}`))
	require.NoError(t, err)
	require.NotNil(t, m.IdlePowerW)
	assert.Equal(t, 16.0, *m.IdlePowerW)
	assert.Equal(t, []float64{1, 2}, m.ModeledClocksMHz)

	for _, tt := range []struct {
		name, text, wantErr string
	}{
		{"unknown key", valid + `, "gpu_name": "L4"}`, `bundle metadata meta.json: unknown key "gpu_name"`},
		{"wrong type", valid + `, "power_cap_w": "72"}`, "bundle metadata meta.json: power_cap_w: expected a number, not string"},
		{"nested type", strings.Replace(valid, `"memory_mib": 23034`, `"memory_mib": 1.5`, 1) + "}", "bundle metadata meta.json: gpu.memory_mib: expected a whole number, not number 1.5"},
		{"not JSON", valid, "bundle metadata meta.json: not valid JSON: unexpected end of input"},
		{"syntax", `{"model" 3}`, "bundle metadata meta.json: not valid JSON at byte 10: "},
		{"a list", `[]`, "bundle metadata meta.json: expected a JSON object, not array"},
		{"two values", valid + `} {}`, "bundle metadata meta.json: more than one JSON value"},
		{"missing key", strings.Replace(valid, `"completed_utc"`, `"source_label"`, 1) + "}", "bundle metadata meta.json: completed_utc: expected a non-empty string"},
		{"no arguments", strings.Replace(valid, `["--no-enable-prefix-caching"]`, `[]`, 1) + "}", "bundle metadata meta.json: vllm_server_arguments: expected the list"},
		{"negative idle", valid + `, "idle_power_w": -1}`, "bundle metadata meta.json: idle_power_w -1: expected a positive, finite number (W)"},
		{"negative warmup", valid + `, "warmup_batches_per_condition": -1}`, "bundle metadata meta.json: warmup_batches_per_condition -1: expected a whole number, 0 or more"},
	} {
		_, err := profile.ParseBundleMetadata("meta.json", []byte(tt.text))
		require.Error(t, err, tt.name)
		assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "%s: %q, want %q", tt.name, err, tt.wantErr)
		assert.NotContains(t, err.Error(), "\n", tt.name)
	}
}

func TestReadBundleInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := profile.ReadBundleInput(filepath.Join(dir, "raw.csv"), "t.csv", "m.json")
	require.Error(t, err)
	assert.Equal(t, "bundle raw rows "+filepath.Join(dir, "raw.csv")+": no such file or directory", err.Error())

	in := bundleInput(t, profiletest.New(10))
	meta, err := json.Marshal(in.Metadata)
	require.NoError(t, err)
	paths := map[string][]byte{"raw.csv": in.Raw, "tel.csv": in.Telemetry, "meta.json": meta}
	for name, data := range paths {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	got, err := profile.ReadBundleInput(filepath.Join(dir, "raw.csv"), filepath.Join(dir, "tel.csv"), filepath.Join(dir, "meta.json"))
	require.NoError(t, err)
	assert.Equal(t, in.Metadata, got.Metadata, "the metadata's JSON round-trips")
	assert.Equal(t, in.Raw, got.Raw)
	assert.Equal(t, filepath.Join(dir, "raw.csv"), got.RawName, "messages name the file given")
}

// FuzzParseBundleMetadata checks that any metadata file parses or fails in
// one line, and that what parses passes Check.
func FuzzParseBundleMetadata(f *testing.F) {
	f.Add([]byte(`{"gpu": {"name": "NVIDIA L4"}, "model": "m", "power_cap_w": 72}`))
	f.Add([]byte(`{"idle_power_w": null, "modeled_clocks_mhz": [1e400]}`))
	f.Add([]byte(`[1, {"x": "\ud800"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := profile.ParseBundleMetadata("meta.json", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if err := m.Check(); err != nil {
			t.Fatalf("parsed metadata fails Check: %v", err)
		}
	})
}

// FuzzBuildBundleRaw builds bundles from changed raw rows: every one is
// built or refused in one line, never a panic.
func FuzzBuildBundleRaw(f *testing.F) {
	in := bundleInput(f, profiletest.New(5))
	f.Add(in.Raw[:4096])
	f.Add([]byte(strings.Join(profiletest.RawColumns, ",") + "\nprefill,128,1,1,nan,1,0,1,1,1,1,1,1,1,1,false,0,1,128\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in := in
		in.Raw = raw
		if _, err := profile.BuildBundle(in); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of more than one line: %q", err)
		}
	})
}
