package calibrate

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

func TestCalibratedName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, want string }{
		{"L4", "L4-calibrated"},
		{"L4-calibrated", "L4-calibrated"},
		{"A100-80GB", "A100-80GB-calibrated"},
	} {
		assert.Equal(t, tt.want, CalibratedName(tt.name), tt.name)
	}
}

func TestOneModel(t *testing.T) {
	t.Parallel()
	run := func(file, model string) *Run { return &Run{File: file, ModelID: model} }
	for _, tt := range []struct {
		name    string
		runs    []*Run
		wantErr string
	}{
		{"one model", []*Run{run("a.json", "X"), run("b.json", "X")}, ""},
		{"a run without model_id matches any", []*Run{run("a.json", ""), run("b.json", "X"), run("c.json", "")}, ""},
		{"two models", []*Run{run("a.json", ""), run("b.json", "Y"), run("c.json", "X")},
			`bench file c.json: model_id "X": the other runs are of "Y": calibrate one model at a time`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := OneModel(tt.runs)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestInputsRefuseRunsOfTwoModels(t *testing.T) {
	t.Parallel()
	in := Inputs{Bench: []string{"testdata/bench/vllm-0.11.json"}, HeldOut: []string{"testdata/bench/vllm-0.6.json"}, Setup: testSetup(t)}
	_, _, err := in.Calibrate()
	assert.EqualError(t, err, `bench file testdata/bench/vllm-0.6.json: model_id "facebook/opt-125m": the other runs are of "meta-llama/Llama-3.1-8B-Instruct": calibrate one model at a time`)
}

func TestInputsNameTheFileAtFault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		in      Inputs
		wantErr string
	}{
		{"missing bench file", Inputs{Bench: []string{"testdata/none.json"}}, "bench file testdata/none.json: no such file or directory"},
		{"missing held-out file", Inputs{Bench: []string{"testdata/bench/vllm-0.11.json"}, HeldOut: []string{"testdata/none.json"}},
			"bench file testdata/none.json: no such file or directory"},
		{"missing power log", Inputs{Bench: []string{"testdata/bench/vllm-0.11.json"}, PowerLogs: []string{"testdata/none.csv"}},
			"power log testdata/none.csv: open testdata/none.csv: no such file or directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Setup = testSetup(t)
			_, _, err := tt.in.Calibrate()
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestGPUCardReadsBack(t *testing.T) {
	t.Parallel()
	rep := viewReport(t)
	rep.GPU.MemoryEfficiency, rep.GPU.ComputeEfficiency, rep.GPU.IterationOverheadS = 0.7999994230434022, 0.49999997536901386, 0.003999965579799039
	data, err := rep.GPUCard()
	require.NoError(t, err)
	got, err := cards.ParseGPU("fitted.json", data)
	require.NoError(t, err)
	assert.Equal(t, rep.GPU, got)
	assert.Equal(t, "L4-calibrated", got.Name)
}

func TestProfileManifestPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	got, err := ProfileManifestPath(filepath.Join(dir, "fitted.csv"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "fitted.json"), got)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profile_manifest.json"), []byte("{}"), 0o644))
	_, err = ProfileManifestPath(filepath.Join(dir, "fitted.csv"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "profile_manifest.json")
}

// TestProfileFilesRoundTrip fits a study with power logs and writes its
// profile: profile.Load reads it back with the fitted powers at the level
// that ran, the base profile's elsewhere, and the fitted card's baselines.
func TestProfileFilesRoundTrip(t *testing.T) {
	t.Parallel()
	setup := testSetup(t)
	setup.Seeds = []uint64{0}
	truth := setup.GPU
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.Local)
	study := &Study{Setup: setup}
	for i, spec := range []struct {
		name        string
		n           int
		rate        float64
		concurrency int
	}{{"c1.json", 20, math.Inf(1), 1}, {"c8.json", 60, math.Inf(1), 8}, {"r01.json", 20, 0.1, 0}} {
		run, log := loggedRunOf(t, setup, measuredRun(t, setup, truth, spec.name, spec.n, spec.rate, spec.concurrency, uint64(i+1)), truth,
			start.Add(time.Duration(i)*time.Hour))
		study.Runs = append(study.Runs, run)
		study.PowerLogs = append(study.PowerLogs, log)
	}
	rep, err := study.Calibrate()
	require.NoError(t, err)
	require.Len(t, rep.Power, 1)

	csvData, manifestData, err := rep.ProfileFiles(setup)
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "fitted.csv")
	manifestPath, err := ProfileManifestPath(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, csvData, 0o644))
	require.NoError(t, os.WriteFile(manifestPath, manifestData, 0o644))
	got, err := profile.Load(path)
	require.NoError(t, err)

	base := setup.Profile
	top := len(base.ClockMHz) - 1
	assert.Equal(t, base.ClockMHz, got.ClockMHz)
	assert.Equal(t, base.PrefillTokensPerS, got.PrefillTokensPerS)
	assert.Equal(t, base.IdlePowerW[:top], got.IdlePowerW[:top])
	assert.InDelta(t, rep.Power[0].IdleW, got.IdlePowerW[top], 1e-9)
	assert.InDelta(t, rep.Power[0].PrefillW, got.PrefillPowerW[top], 1e-9)
	assert.InDelta(t, rep.Power[0].DecodeW, got.DecodePowerW[top], 1e-9)
	assert.Equal(t, "calibrated_not_validated", got.Status)
	ttft, tpot := plant.NewBatchedService(rep.GPU, rep.Model).Baseline()
	assert.InDelta(t, ttft, got.BaselineTTFTS, 1e-12)
	assert.InDelta(t, tpot, got.BaselineTPOTS, 1e-12)

	// Without fitted powers there is no profile to write.
	rep.Power = nil
	_, _, err = rep.ProfileFiles(setup)
	assert.Error(t, err)
}

func TestDocumentEncodes(t *testing.T) {
	t.Parallel()
	rep := viewReport(t)
	doc := rep.Document(Provenance{BenchFiles: []FileDigest{{File: "c1.json", SHA256: "ab"}}, ServesimVersion: "test"})
	chunks, err := jsonout.Chunks(doc)
	require.NoError(t, err)
	var text string
	for _, c := range chunks {
		text += string(c)
	}
	assert.Contains(t, text, `"gpu": {`)
	assert.Contains(t, text, `"median_absolute_errors": {`)
	assert.Contains(t, text, `"provenance": {`)
	assert.Contains(t, text, `{"file": "c1.json", "sha256": "ab"}`)
}
