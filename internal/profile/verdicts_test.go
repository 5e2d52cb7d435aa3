package profile

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile/profiletest"
	"servesim/internal/sharedtest"
)

var bundlesDir = flag.String("bundles-dir", "", "TestWriteBundles writes every synthetic bundle variant into this folder (input of the reference verdict script)")

// referenceVerdict is what the reference's load_profile did with a bundle
// (testdata/reference_verdicts.json, written by a script that runs
// seed003_plant.load_profile on the folders TestWriteBundles writes).
type referenceVerdict struct {
	Valid                bool      `json:"valid"`
	ErrorType            string    `json:"error_type"`
	Error                string    `json:"error"`
	ProfileStatus        string    `json:"profile_status"`
	MeasurementValidated bool      `json:"measurement_validated"`
	SourceLabel          string    `json:"source_label"`
	ClockMHz             []float64 `json:"clock_mhz"`
	PrefillTokensPerS    []float64 `json:"prefill_tokens_per_s"`
	DecodeTokensPerS     []float64 `json:"decode_tokens_per_s"`
	IdlePowerW           []float64 `json:"idle_power_w"`
	PrefillPowerW        []float64 `json:"prefill_power_w"`
	DecodePowerW         []float64 `json:"decode_power_w"`
	RealizedClockMHz     []float64 `json:"realized_clock_levels_mhz"`
	BaselineTTFTS        float64   `json:"baseline_ttft_s"`
	BaselineTPOTS        float64   `json:"baseline_tpot_s"`
	ProfileCSVSHA256     string    `json:"profile_csv_sha256"`
	ManifestSHA256       string    `json:"manifest_sha256"`
}

// writeVariant writes one variant into a new folder of dir.
func writeVariant(t testing.TB, dir string, v bundleVariant) string {
	t.Helper()
	b := profiletest.New(variantTelemetryRows)
	v.edit(b)
	sub := filepath.Join(dir, v.name)
	require.NoError(t, os.MkdirAll(sub, 0o755))
	path, err := b.Write(sub)
	require.NoError(t, err)
	return path
}

// TestWriteBundles writes every variant for the reference verdict script:
// go test ./internal/profile -run TestWriteBundles -args -bundles-dir DIR
func TestWriteBundles(t *testing.T) {
	if *bundlesDir == "" {
		t.Skip("a development tool: set -bundles-dir to write the bundles")
	}
	index := map[string]string{}
	for _, v := range bundleVariants {
		path := writeVariant(t, *bundlesDir, v)
		rel, err := filepath.Rel(*bundlesDir, path)
		require.NoError(t, err)
		index[v.name] = rel
	}
	data, err := json.MarshalIndent(index, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(*bundlesDir, "index.json"), data, 0o644))
}

func TestVariantTable(t *testing.T) {
	loads, rejects := 0, 0
	seen := map[string]bool{}
	for _, v := range bundleVariants {
		require.False(t, seen[v.name], "duplicate variant %s", v.name)
		seen[v.name] = true
		if v.failsAt == "" {
			loads++
		} else {
			rejects++
		}
	}
	assert.GreaterOrEqual(t, rejects, 40, "at least 40 single-change variants that must be rejected")
	assert.GreaterOrEqual(t, loads, 6)
}

func loadVerdicts(t *testing.T, name string) map[string]referenceVerdict {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var golden map[string]referenceVerdict
	require.NoError(t, json.Unmarshal(data, &golden))
	return golden
}

// TestReferenceVerdicts runs every variant through Validate and compares the
// verdict, the failing check and, for bundles that load, every number with
// what the reference's load_profile gave.
func TestReferenceVerdicts(t *testing.T) {
	golden := loadVerdicts(t, "reference_verdicts.json")
	require.Len(t, golden, len(bundleVariants), "every variant has a reference verdict; regenerate the golden file")
	dir := t.TempDir()
	for _, v := range bundleVariants {
		t.Run(v.name, func(t *testing.T) {
			want, ok := golden[v.name]
			require.True(t, ok, "no reference verdict")
			r := Validate(writeVariant(t, dir, v))
			assertMatchesReference(t, r, want, dir)
			if !want.Valid {
				assert.Equal(t, v.failsAt, firstFailed(r), "first failed check; error: %v", r.Err)
				return
			}
			require.Empty(t, v.failsAt, "the reference accepts this variant")
			assert.Equal(t, v.measured, r.Profile.IsMeasured())
		})
	}
}

// TestSharedProfilesMatchReference compares the verdicts and numbers on the
// shared profiles (the published L4 aggregate rows and the reference's own
// profiles) with the reference's.
func TestSharedProfilesMatchReference(t *testing.T) {
	root := sharedtest.Dir(t)
	data, err := os.ReadFile(filepath.Join("testdata", "refgen", "shared_index.json"))
	require.NoError(t, err)
	var index map[string]string
	require.NoError(t, json.Unmarshal(data, &index))
	golden := loadVerdicts(t, "reference_verdicts_shared.json")
	require.Len(t, golden, len(index))
	for name, rel := range index {
		t.Run(name, func(t *testing.T) {
			assertMatchesReference(t, Validate(filepath.Join(root, rel)), golden[name], root)
		})
	}
}

// assertMatchesReference compares a report with the reference's verdict;
// dir is the folder the reference's messages call <dir>.
func assertMatchesReference(t *testing.T, r *Report, want referenceVerdict, dir string) {
	t.Helper()
	require.Equal(t, want.Valid, r.Profile != nil, "verdict differs from the reference (reference error: %s; ours: %v)", want.Error, r.Err)
	if !want.Valid {
		require.Error(t, r.Err)
		if want.ErrorType == "ValueError" {
			got := strings.ReplaceAll(r.Err.Error(), dir+string(filepath.Separator), "<dir>/")
			assert.Contains(t, got, want.Error, "our message carries the reference's")
		}
		return
	}
	require.NoError(t, r.Err)
	p := r.Profile
	assert.Equal(t, want.ProfileStatus, p.Status)
	assert.Equal(t, want.MeasurementValidated, p.MeasurementValid)
	assert.Equal(t, want.SourceLabel, p.SourceLabel)
	assert.Equal(t, want.ProfileCSVSHA256, p.ProfileCSVSHA256)
	assert.Equal(t, want.ManifestSHA256, p.ManifestSHA256)
	for _, c := range []struct {
		name      string
		got, want []float64
	}{
		{"clock_mhz", p.ClockMHz, want.ClockMHz},
		{"prefill_tokens_per_s", p.PrefillTokensPerS, want.PrefillTokensPerS},
		{"decode_tokens_per_s", p.DecodeTokensPerS, want.DecodeTokensPerS},
		{"idle_power_w", p.IdlePowerW, want.IdlePowerW},
		{"prefill_power_w", p.PrefillPowerW, want.PrefillPowerW},
		{"decode_power_w", p.DecodePowerW, want.DecodePowerW},
		{"realized_clock_levels_mhz", p.RealizedClockLevelsMHz(), want.RealizedClockMHz},
		{"baselines", []float64{p.BaselineTTFTS, p.BaselineTPOTS}, []float64{want.BaselineTTFTS, want.BaselineTPOTS}},
	} {
		assert.Equal(t, c.want, c.got, "%s must equal the reference bit for bit", c.name)
	}
}

// firstFailed names the first failed check of a report.
func firstFailed(r *Report) string {
	for _, c := range r.Checks {
		if c.Status == CheckFailed {
			return c.Name
		}
	}
	return ""
}
