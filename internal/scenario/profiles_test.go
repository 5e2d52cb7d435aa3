package scenario

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

const validProfiles = `[
  {
    "name": "fast",
    "prefill_tokens_per_ms": 40,
    "prefix_cache_hit_efficiency": 1.0,
    "base_tpot_ms": 10.5,
    "batch_tpot_slope_ms": 0,
    "max_batch_slots": 4
  },
  {"max_batch_slots": 1, "name": "slow", "prefill_tokens_per_ms": 0.5, "prefix_cache_hit_efficiency": 0, "base_tpot_ms": 30, "batch_tpot_slope_ms": 1e-1}
]`

func TestParseProfiles(t *testing.T) {
	got, err := ParseProfiles(strings.NewReader(validProfiles), "p.json")
	require.NoError(t, err)
	assert.Equal(t, []EngineProfile{
		{Name: "fast", PrefillTokensPerMS: 40, PrefixCacheHitEfficiency: 1, BaseTPOTMS: 10.5, BatchTPOTSlopeMS: 0, MaxBatchSlots: 4},
		{Name: "slow", PrefillTokensPerMS: 0.5, PrefixCacheHitEfficiency: 0, BaseTPOTMS: 30, BatchTPOTSlopeMS: 0.1, MaxBatchSlots: 1},
	}, got)
}

func TestParseProfilesBuiltinsRoundTrip(t *testing.T) {
	data, err := json.Marshal(BuiltinProfiles())
	require.NoError(t, err)
	got, err := ParseProfiles(strings.NewReader(string(data)), "builtin.json")
	require.NoError(t, err)
	assert.Equal(t, BuiltinProfiles(), got)
}

// profileJSON is one valid profile object with field replaced by value
// (or removed when value is empty).
func profileJSON(field, value string) string {
	fields := []struct{ k, v string }{
		{"name", `"x"`}, {"prefill_tokens_per_ms", "26"}, {"prefix_cache_hit_efficiency", "0.45"},
		{"base_tpot_ms", "17.5"}, {"batch_tpot_slope_ms", "0.62"}, {"max_batch_slots", "16"},
	}
	var parts []string
	for _, f := range fields {
		v := f.v
		if f.k == field {
			if value == "" {
				continue
			}
			v = value
		}
		parts = append(parts, "\n    \""+f.k+"\": "+v)
	}
	return "{" + strings.Join(parts, ",") + "\n  }"
}

func TestParseProfilesErrors(t *testing.T) {
	ok := profileJSON("", "")
	tests := []struct {
		name, input, want string
	}{
		{"zero capacity", "[\n  " + profileJSON("max_batch_slots", "0") + "]",
			`profiles p.json line 8: profile 1 "x": max_batch_slots 0: capacity must be at least 1`},
		{"negative rate", "[" + ok + ",\n  " + profileJSON("prefill_tokens_per_ms", "-2") + "]",
			`profiles p.json line 11: profile 2 "x": prefill_tokens_per_ms -2: prefill rate must be positive and finite`},
		{"zero rate", "[" + profileJSON("prefill_tokens_per_ms", "0") + "]",
			`profiles p.json line 3: profile 1 "x": prefill_tokens_per_ms 0: prefill rate must be positive and finite`},
		{"missing field", "[" + profileJSON("base_tpot_ms", "") + "]",
			`profiles p.json line 1: profile 1 "x": missing field "base_tpot_ms"`},
		{"missing name", "[" + profileJSON("name", "") + "]",
			`profiles p.json line 1: profile 1: missing field "name"`},
		{"unknown field", `[{"name": "x", "max_batch": 3}]`,
			`profiles p.json line 1: profile 1: unknown field "max_batch": expected name, prefill_tokens_per_ms, prefix_cache_hit_efficiency, base_tpot_ms, batch_tpot_slope_ms, max_batch_slots`},
		{"repeated field", `[{"name": "x", "name": "y"}]`, `profiles p.json line 1: profile 1: field "name" given twice`},
		{"null number", "[" + profileJSON("base_tpot_ms", "null") + "]", `profile 1 "x": base_tpot_ms null: expected a finite number`},
		{"string number", "[" + profileJSON("base_tpot_ms", `"17"`) + "]", `profile 1 "x": base_tpot_ms "17": expected a finite number`},
		{"huge number", "[" + profileJSON("base_tpot_ms", "1e999") + "]", `profile 1 "x": base_tpot_ms 1e999: expected a finite number`},
		{"fractional slots", "[" + profileJSON("max_batch_slots", "16.5") + "]", `profile 1 "x": max_batch_slots 16.5: expected a whole number of slots (at least 1)`},
		{"efficiency above 1", "[" + profileJSON("prefix_cache_hit_efficiency", "1.2") + "]", `profile 1 "x": prefix_cache_hit_efficiency 1.2: must be between 0 and 1`},
		{"null name", "[" + profileJSON("name", "null") + "]", `profile 1: name null: expected a string`},
		{"blank name", "[" + profileJSON("name", `" "`) + "]", `profile 1: name " ": expected a non-blank name`},
		{"duplicate name", "[" + ok + ",\n" + ok + "]", `profiles p.json line 10: profile 2 "x": name: already used by profile 1`},
		{"not a list", `{"name": "x"}`, `profiles p.json line 1: expected a JSON list of engine profiles`},
		{"not an object", `[1]`, `profiles p.json line 1: profile 1: expected an object`},
		{"empty list", `[]`, `profiles p.json: no engine profiles in the list`},
		{"empty input", ``, `profiles p.json line 1: invalid JSON: unexpected end of input`},
		{"syntax error", "[\n{\"name\" \"x\"}]", `profiles p.json line 2: invalid JSON`},
		{"trailing data", "[" + ok + "] []", `profiles p.json line 8: unexpected data after the list of profiles`},
		{"truncated", "[" + ok, `profiles p.json line 8: invalid JSON: unexpected end of input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfiles(strings.NewReader(tt.input), "p.json")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestParseProfilesCapsWhatItReads(t *testing.T) {
	z := &testsupport.CountingReader{R: testsupport.Endless("\x00")}
	_, err := ParseProfiles(z, "/dev/zero")
	require.EqualError(t, err, "profiles /dev/zero line 1: contains a NUL byte: expected text")
	assert.LessOrEqual(t, z.N, int64(64<<10))

	_, err = ParseProfiles(io.LimitReader(testsupport.Endless(" \n"), MaxProfilesBytes+1), "spaces.json")
	require.EqualError(t, err, "profiles spaces.json: larger than the 16 MiB cap")

	path := filepath.Join(t.TempDir(), "sparse.json")
	testsupport.SparseFile(t, path, nil, 30<<30)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = ParseProfiles(f, path)
	require.EqualError(t, err, "profiles "+path+": 30 GiB: larger than the 16 MiB cap")
}

// FuzzParseProfiles checks that any input either fails with a one-line
// error or yields valid, uniquely named profiles that survive a round trip.
func FuzzParseProfiles(f *testing.F) {
	f.Add(validProfiles)
	f.Add("[" + profileJSON("max_batch_slots", "0") + "]")
	f.Add(`[{"name": "x", "max_batch": 3}]`)
	f.Add(`[]`)
	f.Add(`[{"name":"a","prefill_tokens_per_ms":1,"prefix_cache_hit_efficiency":0,"base_tpot_ms":0,"batch_tpot_slope_ms":0,"max_batch_slots":1}]`)
	f.Fuzz(func(t *testing.T, input string) {
		profiles, err := ParseProfiles(strings.NewReader(input), "fuzz.json")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if len(profiles) == 0 {
			t.Fatal("no error and no profiles")
		}
		names := map[string]bool{}
		for _, p := range profiles {
			if err := p.Validate(); err != nil {
				t.Fatalf("accepted an invalid profile: %v", err)
			}
			if names[p.Name] {
				t.Fatalf("accepted a repeated name %q", p.Name)
			}
			names[p.Name] = true
		}
		data, err := json.Marshal(profiles)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseProfiles(strings.NewReader(string(data)), "again.json")
		if err != nil {
			t.Fatalf("round trip failed: %v", err)
		}
		if len(again) != len(profiles) {
			t.Fatal("round trip changed the count")
		}
		for i := range again {
			if again[i] != profiles[i] {
				t.Fatalf("round trip changed %+v to %+v", profiles[i], again[i])
			}
		}
	})
}
