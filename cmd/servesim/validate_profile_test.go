package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/profile/profiletest"
)

func TestValidateProfileFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     validateProfileOptions
	}{
		{"defaults", []string{"a.csv"}, exitOK, validateProfileOptions{Paths: []string{"a.csv"}, Format: "json"}},
		{"all flags", []string{"--format", "text", "--require-measured", "-o", "out.txt", "a", "b"}, exitOK,
			validateProfileOptions{Paths: []string{"a", "b"}, Format: "text", RequireMeasured: true, Output: outputOptions{Path: "out.txt"}}},
		{"no path", nil, exitUsage, validateProfileOptions{}},
		{"bad format", []string{"--format", "xml", "a.csv"}, exitUsage, validateProfileOptions{}},
		{"stdin", []string{"-"}, exitUsage, validateProfileOptions{}},
		{"unknown flag", []string{"--strict", "a.csv"}, exitUsage, validateProfileOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code, out, errOut := parseFlags(t, "validate-profile", newValidateProfileCmd, tt.args...)
			assert.Equal(t, tt.wantCode, code, errOut)
			assert.Empty(t, out)
			if tt.wantCode != exitOK {
				assert.Nil(t, got)
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line on stderr")
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, *got)
		})
	}
}

// writeBundle writes the synthetic measured bundle, changed by edit, into
// a new folder and returns the folder.
func writeBundle(t *testing.T, edit func(b *profiletest.Bundle)) string {
	t.Helper()
	b := profiletest.New(30)
	if edit != nil {
		edit(b)
	}
	dir := t.TempDir()
	_, err := b.Write(dir)
	require.NoError(t, err)
	return dir
}

// runValidate runs servesim validate-profile and decodes its JSON output.
func runValidate(t *testing.T, args ...string) (int, profile.Verdicts, string) {
	t.Helper()
	s, out, errOut := testStreams("")
	code := run(context.Background(), append([]string{"validate-profile"}, args...), s)
	var result profile.Verdicts
	if out.Len() > 0 {
		require.NoError(t, json.Unmarshal(out.Bytes(), &result), out.String())
	}
	return code, result, errOut.String()
}

func checkStatuses(v profile.Verdict) map[string]string {
	out := map[string]string{}
	for _, c := range v.Checks {
		out[c.Name] = string(c.Status)
	}
	return out
}

func TestValidateProfileMeasuredBundle(t *testing.T) {
	t.Parallel()
	dir := writeBundle(t, nil)
	code, result, stderr := runValidate(t, "--require-measured", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stderr)
	require.Len(t, result.Bundles, 1)
	v := result.Bundles[0]
	assert.True(t, v.Valid)
	assert.Nil(t, v.Error)
	assert.Equal(t, filepath.Join(dir, "l4_profile.csv"), v.Path)
	assert.Equal(t, "measured_l4", v.ProfileStatus)
	assert.True(t, v.MeasurementValidated)
	assert.Equal(t, profiletest.ModeledMHz, v.ClockLevelsMHz)
	assert.Equal(t, []float64{1186.25, 1486.25, 1786.25, 2011.25}, v.RealizedClockLevelsMHz)
	csv, err := os.ReadFile(filepath.Join(dir, "l4_profile.csv"))
	require.NoError(t, err)
	assert.Equal(t, profiletest.SHA256(csv), v.ProfileCSVSHA256)
	manifest, err := os.ReadFile(filepath.Join(dir, "profile_manifest.json"))
	require.NoError(t, err)
	assert.Equal(t, profiletest.SHA256(manifest), v.ManifestSHA256)
	for name, status := range checkStatuses(v) {
		assert.Equal(t, "ok", status, name)
	}
	assert.Contains(t, checkStatuses(v), "sha256 l4_telemetry.csv")
	assert.Contains(t, checkStatuses(v), profile.RequireMeasuredCheck)
}

// TestValidateProfileReportsEveryFailure breaks two files and two fields:
// every one is reported, and the error is the reference's first.
func TestValidateProfileReportsEveryFailure(t *testing.T) {
	t.Parallel()
	dir := writeBundle(t, func(b *profiletest.Bundle) {
		b.Manifest.Set("model", "other/model")
		b.Manifest.Set("measured_on", "")
		b.AfterChecksums = func(files map[string][]byte) {
			files[profiletest.TelemetryCSV] = append(files[profiletest.TelemetryCSV], "1,2,3,4,5,6,7,8,9\r\n"...)
			files[profiletest.RawCSV] = nil
		}
	})
	code, result, stderr := runValidate(t, dir)
	assert.Equal(t, exitInput, code)
	require.Len(t, result.Bundles, 1)
	v := result.Bundles[0]
	assert.False(t, v.Valid)
	statuses := checkStatuses(v)
	for _, name := range []string{"model", "sha256 l4_profile_raw.csv", "sha256 l4_telemetry.csv", "raw_csv", "measured_on"} {
		assert.Equal(t, "failed", statuses[name], name)
	}
	assert.Equal(t, "ok", statuses["sha256 l4_profile.csv"])
	assert.Equal(t, "not_run", statuses["raw_rows"])
	assert.Equal(t, "not_run", statuses["profile_values"])
	require.NotNil(t, v.Error)
	assert.Contains(t, *v.Error, "measured profile model metadata does not match the pinned model")
	assert.Equal(t, "servesim: validation failed: "+*v.Error+"\n", stderr)
}

func TestValidateProfileRequireMeasured(t *testing.T) {
	t.Parallel()
	proxy := writeBundle(t, func(b *profiletest.Bundle) { b.Manifest.Set("profile_status", "engineering_proxy_not_measured") })
	code, result, _ := runValidate(t, proxy)
	assert.Equal(t, exitOK, code)
	assert.True(t, result.Bundles[0].Valid)
	assert.False(t, result.Bundles[0].MeasurementValidated)

	code, result, stderr := runValidate(t, "--require-measured", proxy, writeBundle(t, nil))
	assert.Equal(t, exitInput, code)
	require.Len(t, result.Bundles, 2)
	assert.False(t, result.Bundles[0].Valid)
	assert.Equal(t, "failed", checkStatuses(result.Bundles[0])[profile.RequireMeasuredCheck])
	assert.True(t, result.Bundles[1].Valid)
	assert.Contains(t, stderr, "--require-measured")
}

func TestValidateProfileText(t *testing.T) {
	t.Parallel()
	good := writeBundle(t, nil)
	bad := writeBundle(t, func(b *profiletest.Bundle) { b.Manifest.Set("warmup_batches_per_condition", 2) })
	s, out, errOut := testStreams("")
	code := run(context.Background(), []string{"validate-profile", "--format", "text", good, bad}, s)
	assert.Equal(t, exitInput, code)
	text := out.String()
	goodCSV, badCSV := filepath.Join(good, "l4_profile.csv"), filepath.Join(bad, "l4_profile.csv")
	assert.Contains(t, text, goodCSV+": sha256 l4_profile_raw.csv: OK\n")
	assert.Contains(t, text, goodCSV+": VALID (measured_l4, measurement validated)\n")
	assert.Contains(t, text, badCSV+": warmup: FAILED: measured profile must record one warmup batch per condition")
	assert.Contains(t, text, badCSV+": INVALID: profile "+badCSV+": measured profile must record one warmup batch per condition")
	assert.Equal(t, 1, strings.Count(errOut.String(), "\n"))
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		assert.Regexp(t, `^\S+: (\S+( \S+)?: (OK|FAILED: .+|NOT RUN: .+)|VALID \(.+\)|INVALID: .+)$`, line)
	}
}

func TestValidateProfileOutputFile(t *testing.T) {
	t.Parallel()
	bad := writeBundle(t, func(b *profiletest.Bundle) { b.Manifest.Set("status", "partial") })
	outPath := filepath.Join(t.TempDir(), "verdict.json")
	code, _, _ := runValidate(t, "-o", outPath, bad)
	assert.Equal(t, exitInput, code, "a failed validation still exits 1")
	data, err := os.ReadFile(outPath)
	require.NoError(t, err, "the complete result is written")
	var result profile.Verdicts
	require.NoError(t, json.Unmarshal(data, &result))
	assert.False(t, result.Bundles[0].Valid)

	missingDir := filepath.Join(t.TempDir(), "nosuch", "verdict.json")
	code, _, stderr := runValidate(t, "-o", missingDir, bad)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "nosuch")
	assert.NoFileExists(t, missingDir)
}

func TestValidateProfileMissingPath(t *testing.T) {
	t.Parallel()
	code, result, stderr := runValidate(t, filepath.Join(t.TempDir(), "absent.csv"))
	assert.Equal(t, exitInput, code)
	require.Len(t, result.Bundles, 1)
	assert.Equal(t, "failed", checkStatuses(result.Bundles[0])["profile_csv"])
	assert.Contains(t, stderr, "absent.csv")
	assert.Equal(t, []float64{}, result.Bundles[0].ClockLevelsMHz)
}
