package profile

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"servesim/internal/profile/profiletest"
)

// FuzzCSVTable feeds arbitrary bytes to the Python-compatible CSV reader
// and to the profile table readers (aggregate and raw schema): no input may
// panic, and a parsed table must be consistent.
func FuzzCSVTable(f *testing.F) {
	f.Add([]byte("clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\r\n900,5200,28,18,48,40\r\n1500,7400,41,20,62,55\r\n"))
	f.Add([]byte("a,b\n\"x,\"\"y\"\"\",2\n\"open\n"))
	f.Add([]byte("\ufeffa,a\r1\x00,2,3\r\n\r\n"))
	raw := profiletest.New(0)
	raw.Raw.Rows = raw.Raw.Rows[:40]
	raw.Profile = raw.Raw
	f.Add(raw.Files()[profiletest.ProfileCSV])
	empty := &jsonObject{values: map[string]any{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := readCSVTable("fuzz.csv", data, false)
		if err != nil {
			return
		}
		if table.RowCount != len(table.Rows) || len(table.Rows) != len(table.RowLines) {
			t.Fatalf("inconsistent table: %d rows counted, %d kept, %d lines", table.RowCount, len(table.Rows), len(table.RowLines))
		}
		counted, err := readCSVTable("fuzz.csv", data, true)
		if err != nil || counted.RowCount != table.RowCount {
			t.Fatalf("counting mode disagrees: %v", err)
		}
		if table.RowCount > 0 {
			var p Profile
			_ = readProfileTable(table, empty, &p)
		}
	})
}

// FuzzManifest feeds arbitrary bytes to the json.loads-compatible parser
// and every parsed object to the measured bundle checks of a complete
// synthetic bundle: no manifest may panic the validator, and every
// document Go's encoding/json accepts must parse.
func FuzzManifest(f *testing.F) {
	b := profiletest.New(5)
	dir := f.TempDir()
	path, err := b.Write(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b.Files()[profiletest.ManifestJSON])
	f.Add([]byte(`{"a": NaN, "b": [1, -Infinity, {"c": 1e400}], "sha256": {"../x": 1}}`))
	f.Add([]byte(`{"gpu": {"name": ["nvidia l4"]}, "conditions": [{"phase": 1, "prompt_tokens": "1_2"}], "row_count": 1e300}`))
	f.Add([]byte(`{"selected_graphics_clocks_mhz": [[1], null, "x"], "clock_profile_selection": {"realized_clock_median_mhz_by_requested": {"nan": "1"}}}`))
	tableData, _ := b.Files()[profiletest.ProfileCSV]
	table, err := readCSVTable(profiletest.ProfileCSV, tableData, false)
	if err != nil {
		f.Fatal(err)
	}
	folder := openProfileFolder(dir)
	defer folder.close()
	info, err := folder.stat(profiletest.ProfileCSV, MaxProfileBytes)
	if err != nil {
		f.Fatal(err)
	}
	given := profileFile{name: profiletest.ProfileCSV, info: info, sha256: profiletest.SHA256(tableData)}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parsePyJSON(data)
		if err != nil {
			if json.Valid(data) && utf8.Valid(data) && !strings.HasPrefix(string(data), "\ufeff") && strings.Count(string(data), "[")+strings.Count(string(data), "{") < maxJSONDepth {
				t.Fatalf("encoding/json accepts what we reject: %v", err)
			}
			return
		}
		obj, ok := v.(*jsonObject)
		if !ok {
			return
		}
		c := &checkList{report: &Report{Path: path}, failed: map[string]bool{}}
		validateBundle(c, folder, table, obj, given)
		_ = pyReprOf(obj)
		_ = plainJSON(obj)
	})
}

// FuzzPyNumbers checks Python's float() and int() ports against Go's
// parsers on the inputs both define: no panic, and the same value.
func FuzzPyNumbers(f *testing.F) {
	for _, s := range []string{"1", " 1_000 ", "1e3", "-0.5", "inf", "+nan", "٣", "\u00a07\u2000", "1__0", "0x10", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fv, ferr := pyFloat(s)
		iv, ierr := pyInt(s)
		if ierr == nil {
			want, err := iv.float()
			if ferr != nil || (err == nil && want != fv) {
				t.Fatalf("int(%q) = %s but float() = %v, %v", s, iv, fv, ferr)
			}
		}
		plain := strings.TrimSpace(s)
		if plain == "" || strings.ContainsAny(plain, "_xXpP") || !utf8.ValidString(s) {
			return
		}
		if want, err := strconv.ParseFloat(plain, 64); err == nil && ferr == nil && want != fv && !(want != want && fv != fv) {
			t.Fatalf("float(%q) = %v, strconv says %v", s, fv, want)
		}
	})
}
