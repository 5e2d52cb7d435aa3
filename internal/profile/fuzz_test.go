package profile

import (
	"testing"

	"servesim/internal/profile/profiletest"
	"servesim/internal/pycompat"
)

// FuzzProfileTable feeds every table the Python-compatible CSV reader
// parses from arbitrary bytes to the profile table readers (aggregate and
// raw schema): no input may panic them. (The reader itself is fuzzed in
// package pycompat.)
func FuzzProfileTable(f *testing.F) {
	f.Add([]byte("clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\r\n900,5200,28,18,48,40\r\n1500,7400,41,20,62,55\r\n"))
	f.Add([]byte("a,b\n\"x,\"\"y\"\"\",2\n\"open\n"))
	f.Add([]byte("\ufeffa,a\r1\x00,2,3\r\n\r\n"))
	raw := profiletest.New(0)
	raw.Raw.Rows = raw.Raw.Rows[:40]
	raw.Profile = raw.Raw
	f.Add(raw.Files()[profiletest.ProfileCSV])
	empty := &pycompat.Object{Values: map[string]any{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := pycompat.ReadTable("fuzz.csv", data, false)
		if err == nil && table.RowCount > 0 {
			var p Profile
			_ = readProfileTable(table, empty, &p)
		}
	})
}

// FuzzManifest feeds every object the json.loads-compatible parser reads
// from arbitrary bytes to the measured bundle checks of a complete
// synthetic bundle: no manifest may panic the validator. (The parser
// itself is fuzzed in package pycompat.)
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
	table, err := pycompat.ReadTable(profiletest.ProfileCSV, tableData, false)
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
		v, err := pycompat.ParseJSON(data)
		if err != nil {
			return
		}
		obj, ok := v.(*pycompat.Object)
		if !ok {
			return
		}
		c := &checkList{report: &Report{Path: path}, failed: map[string]bool{}}
		validateBundle(c, folder, table, obj, given)
	})
}
