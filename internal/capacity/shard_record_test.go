package capacity

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/runparams"
)

// encodeRecord writes a record as a capacity shard does, NaN as null.
func encodeRecord(t testing.TB, r EvaluationRecord) []byte {
	t.Helper()
	number := func(x float64) any {
		if math.IsNaN(x) {
			return nil
		}
		return x
	}
	line, err := json.Marshal(map[string]any{
		"kind": r.Kind, "cell": r.Cell, "grid_sha256": r.GridSHA256, "grid_cells": r.GridCells, "replicas": r.Replicas,
		"attainment": number(r.Attainment), "completed_fraction": number(r.CompletedFraction),
		"p95_ttft_s": number(r.P95TTFTS), "p99_ttft_s": number(r.P99TTFTS),
		"energy_per_output_token_j": number(r.EnergyPerOutputTokenJ), "peak_power_w": number(r.PeakPowerW),
		"energy_per_request_j": number(r.EnergyPerRequestJ), "energy_per_1k_requests_kj": number(r.EnergyPer1kRequestsKJ),
		"energy_kwh": number(r.EnergyKWh), "mean_power_w": number(r.MeanPowerW),
	})
	require.NoError(t, err)
	return line
}

// olderRecord is the line of r as servesim wrote it before the energy
// totals: without their members.
func olderRecord(t testing.TB, r EvaluationRecord) []byte {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(encodeRecord(t, r), &members))
	for _, key := range energyTotalKeys {
		delete(members, key)
	}
	line, err := json.Marshal(members)
	require.NoError(t, err)
	return line
}

// testGrid is a grid of 1, 2, 4 and 6 replicas.
var testGrid = Grid{Sizes: []int{1, 2, 4, 6}, Digest: strings.Repeat("ab", 32)}

func testRecord(cell int) EvaluationRecord {
	size := testGrid.Sizes[cell]
	return testGrid.Record(cell, Evaluation{Replicas: size, Attainment: 0.1 * float64(size), CompletedFraction: 1,
		P95TTFTS: 1.5 / float64(size), P99TTFTS: math.NaN(), EnergyPerOutputTokenJ: 0.3, PeakPowerW: 70.25 * float64(size),
		EnergyPerRequestJ: 30, EnergyPer1kRequestsKJ: 30, EnergyKWh: 0.0025 * float64(size), MeanPowerW: 50.5 * float64(size)})
}

func TestParseEvaluationRecordRoundTrips(t *testing.T) {
	r := testRecord(3)
	line := encodeRecord(t, r)
	got, err := ParseEvaluationRecord(line)
	require.NoError(t, err)
	assert.True(t, got.same(r))
	assert.Equal(t, r.GridSHA256, got.GridSHA256)
	assert.Equal(t, 4, got.GridCells)
	e := got.Evaluation()
	assert.Equal(t, 6, e.Replicas)
	assert.True(t, math.IsNaN(e.P99TTFTS), "null is an undefined number")
	assert.False(t, e.MeetsTarget)
	assert.Equal(t, 30.0, e.EnergyPerRequestJ)
	assert.Equal(t, 30.0, e.EnergyPer1kRequestsKJ)
	assert.Equal(t, 0.015, e.EnergyKWh)
	assert.Equal(t, 303.0, e.MeanPowerW)
	// No request completed: the energy per request is null, and comes back NaN.
	none := testRecord(0)
	none.EnergyPerRequestJ, none.EnergyPer1kRequestsKJ = math.NaN(), math.NaN()
	got, err = ParseEvaluationRecord(encodeRecord(t, none))
	require.NoError(t, err)
	assert.True(t, got.same(none))
	assert.True(t, math.IsNaN(got.Evaluation().EnergyPerRequestJ))
}

func TestParseEvaluationRecordRefuses(t *testing.T) {
	good := string(encodeRecord(t, testRecord(1)))
	set := func(key, value string) string {
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(good), &members))
		if value == "" {
			delete(members, key)
		} else {
			members[key] = json.RawMessage(value)
		}
		line, err := json.Marshal(members)
		require.NoError(t, err)
		return string(line)
	}
	tests := []struct{ line, err string }{
		{"", "expected a capacity evaluation record, a JSON object with the members kind, cell,"},
		{"[1]", "expected a capacity evaluation record"},
		{"null", "expected a capacity evaluation record"},
		{good + " {}", "expected a capacity evaluation record"},
		{`{"kind":"run","cell":0}`, `kind "run": expected "capacity_evaluation" (a record of servesim capacity shard)`},
		{set("kind", ""), `kind (missing): expected "capacity_evaluation"`},
		{set("extra", "1"), `unknown member "extra": expected only kind, cell,`},
		{set("cell", ""), "cell (missing): expected a whole number of at least 0"},
		{set("cell", "-1"), "cell -1: expected a whole number of at least 0"},
		{set("cell", "1.5"), "cell 1.5: expected a whole number"},
		{set("cell", "4"), "cell 4: expected a cell below grid_cells 4"},
		{set("grid_cells", "0"), "grid_cells 0: expected a whole number of at least 1"},
		{set("replicas", "0"), "replicas 0: expected a whole number of at least 1"},
		{set("replicas", `"2"`), `replicas "2": expected a whole number`},
		{set("grid_sha256", `"ABAB"`), `grid_sha256 "ABAB": expected a SHA-256 in hex`},
		{set("grid_sha256", `"`+strings.Repeat("AB", 32)+`"`), "expected a SHA-256 in hex"},
		{set("attainment", "null"), "attainment null: expected a share from 0 to 1"},
		{set("attainment", "1.5"), "attainment 1.5: expected a share from 0 to 1"},
		{set("peak_power_w", `"70"`), `peak_power_w "70": expected a number or null`},
		{set("p95_ttft_s", ""), "p95_ttft_s (missing): expected a number or null"},
		{set("energy_per_output_token_j", "1e999"), "energy_per_output_token_j 1e999: expected a number or null"},
		{set("energy_kwh", ""), "energy_kwh (missing): expected a number or null"},
		{set("mean_power_w", `"50"`), `mean_power_w "50": expected a number or null`},
		{set("energy_per_1k_requests_kj", "true"), "energy_per_1k_requests_kj true: expected a number or null"},
		// A record of servesim before the energy totals: refused as such.
		{string(olderRecord(t, testRecord(1))),
			"no energy_per_request_j, energy_per_1k_requests_kj, energy_kwh, mean_power_w: a record of an older servesim capacity shard, " +
				"without the energy totals; run that shard again with this servesim"},
	}
	for _, tt := range tests {
		_, err := ParseEvaluationRecord([]byte(tt.line))
		assert.ErrorContains(t, err, tt.err, "%s", tt.line)
		if err != nil {
			assert.NotContains(t, err.Error(), "\n")
			// The settings it names read bare here, as the command's
			// flags once it names them.
			named := runparams.Named(err, func(s runparams.Setting) string { return "--" + string(s) })
			assert.Equal(t, strings.ReplaceAll(err.Error(), "capacity shard", "capacity --shard"), named.Error())
		}
	}
}

// writeLines writes the records, one per line, to dir/name.
func writeLines(t *testing.T, dir, name string, lines ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644))
	return path
}

func TestReadEvaluations(t *testing.T) {
	dir := t.TempDir()
	a := writeLines(t, dir, "a.jsonl", encodeRecord(t, testRecord(3)), encodeRecord(t, testRecord(0)))
	b := writeLines(t, dir, "b.jsonl", encodeRecord(t, testRecord(1)))
	// A partial file: its last line cut short.
	partial := filepath.Join(dir, "c.jsonl.partial")
	cut := encodeRecord(t, testRecord(2))
	require.NoError(t, os.WriteFile(partial, append(append(encodeRecord(t, testRecord(3)), '\n'), cut[:len(cut)/2]...), 0o644))
	empty := writeLines(t, dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))

	var warn bytes.Buffer
	known, err := testGrid.ReadEvaluations([]string{a, b, partial, empty}, &warn)
	require.NoError(t, err)
	assert.Equal(t, 4, known.Records, "a repeat with the same numbers counts as read")
	assert.Equal(t, []int{1, 2, 6}, sizesOf(known.Evaluations), "by size; the cut line is left out")
	assert.Equal(t, testRecord(0).Evaluation().PeakPowerW, known.Evaluations[0].PeakPowerW)
	assert.Equal(t, "servesim: warning: "+partial+" line 2: the last line has no newline (its process was stopped while it wrote it); it is left out\n", warn.String())

	other := testGrid
	other.Digest = strings.Repeat("cd", 32)
	changed := testRecord(0)
	changed.Attainment = 0.2
	changedEnergy := testRecord(0)
	changedEnergy.EnergyKWh = 1
	wrongSize := testRecord(2)
	wrongSize.Replicas = 5
	tests := []struct {
		name  string
		lines [][]byte
		err   string
	}{
		{"other.jsonl", [][]byte{encodeRecord(t, testRecord(0)), encodeRecord(t, other.Record(1, testRecord(1).Evaluation()))},
			"other.jsonl line 2: the record is of another capacity study (grid_sha256 cdcdcdcdcdcd..., this study's abababababab...): another trace,"},
		{"cells.jsonl", [][]byte{encodeRecord(t, Grid{Sizes: []int{1, 2, 4}, Digest: testGrid.Digest}.Record(0, testRecord(0).Evaluation()))},
			"cells.jsonl line 1: grid_cells 3: this study's grid has 4 cells"},
		{"size.jsonl", [][]byte{encodeRecord(t, wrongSize)}, "size.jsonl line 1: cell 2 has 5 replicas: this study's cell 2 is 4 replicas"},
		{"twice.jsonl", [][]byte{encodeRecord(t, changed)}, "twice.jsonl line 1: cell 0 (1 replicas) has other numbers than at " + a + " line 2"},
		{"energy.jsonl", [][]byte{encodeRecord(t, changedEnergy)}, "energy.jsonl line 1: cell 0 (1 replicas) has other numbers than at " + a + " line 2"},
		{"sweep.jsonl", [][]byte{[]byte(`{"kind":"run","cell":0,"grid_sha256":"x"}`)}, `sweep.jsonl line 1: kind "run": expected "capacity_evaluation"`},
		{"older.jsonl", [][]byte{olderRecord(t, testRecord(0))}, "older.jsonl line 1: no energy_per_request_j, energy_per_1k_requests_kj, " +
			"energy_kwh, mean_power_w: a record of an older servesim capacity shard, without the energy totals; run that shard again with this servesim"},
		{"blank.jsonl", [][]byte{encodeRecord(t, testRecord(0)), nil}, "blank.jsonl line 2: expected a capacity evaluation record"},
		{"long.jsonl", [][]byte{bytes.Repeat([]byte(" "), 5000)}, "long.jsonl line 1: a line of more than 4096 bytes: not a capacity evaluation record"},
	}
	for _, tt := range tests {
		path := writeLines(t, dir, tt.name, tt.lines...)
		_, err := testGrid.ReadEvaluations([]string{a, path}, &warn)
		require.Error(t, err, tt.name)
		assert.True(t, strings.HasPrefix(err.Error(), path+strings.TrimPrefix(tt.err, tt.name)), "%s: %v", tt.name, err)
	}
	_, err = testGrid.ReadEvaluations([]string{filepath.Join(dir, "none.jsonl")}, &warn)
	assert.EqualError(t, err, filepath.Join(dir, "none.jsonl")+": no such file or directory")
}

// FuzzParseEvaluationRecord checks that a record that parses is what its
// own encoding parses to, and that refusals are one line.
func FuzzParseEvaluationRecord(f *testing.F) {
	f.Add(encodeRecord(f, testRecord(0)))
	f.Add(encodeRecord(f, testRecord(3)))
	f.Add([]byte(`{"kind":"capacity_evaluation","cell":0,"grid_sha256":"` + strings.Repeat("0", 64) + `","grid_cells":1,"replicas":1,` +
		`"attainment":0,"completed_fraction":null,"p95_ttft_s":null,"p99_ttft_s":null,"energy_per_output_token_j":null,"peak_power_w":null,` +
		`"energy_per_request_j":null,"energy_per_1k_requests_kj":null,"energy_kwh":0,"mean_power_w":0}`))
	f.Add([]byte(`{"kind":"run"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseEvaluationRecord(line)
		if err != nil {
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		again, err := ParseEvaluationRecord(encodeRecord(t, r))
		require.NoError(t, err)
		assert.True(t, again.same(r))
		assert.Equal(t, r.GridSHA256, again.GridSHA256)
		assert.Equal(t, r.GridCells, again.GridCells)
	})
}
