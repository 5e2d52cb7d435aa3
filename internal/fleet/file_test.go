package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// fileDefaults are command-line values for the fleet-file tests.
var fileDefaults = GroupDefaults{Profile: profile.Default(), Replicas: 1, Scheduler: "chunked", Controller: "max"}

// fakeLoader loads "good.csv" as the embedded profile and fails otherwise,
// recording the paths asked for.
func fakeLoader(asked *[]string) ProfileLoader {
	return func(path string) (*profile.Profile, error) {
		if asked != nil {
			*asked = append(*asked, path)
		}
		if filepath.Base(path) == "good.csv" {
			return profile.Default(), nil
		}
		return nil, errors.New("profile " + path + ": no such file")
	}
}

func TestParseFileGroups(t *testing.T) {
	var asked []string
	groups, err := ParseFile("/fleets/f.json", []byte(`[
		{"name": "big", "profile": "good.csv", "replicas": 3, "scheduler": "static", "controller": "reactive"},
		{"replicas": 2},
		{"profile": "/abs/good.csv", "controller": "fixed:660"}
	]`), fileDefaults, fakeLoader(&asked))
	require.NoError(t, err)
	require.Len(t, groups, 3)
	assert.Equal(t, Group{Name: "big", Replicas: 3, Profile: profile.Default(), ProfilePath: "/fleets/good.csv", Scheduler: "static", Controller: "reactive"}, groups[0])
	assert.Equal(t, Group{Name: "group1", Replicas: 2, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"}, groups[1])
	assert.Equal(t, Group{Name: "group2", Replicas: 1, Profile: profile.Default(), ProfilePath: "/abs/good.csv", Scheduler: "chunked", Controller: "fixed:660"}, groups[2])
	assert.Equal(t, []string{"/fleets/good.csv", "/abs/good.csv"}, asked, "relative profile paths are taken from the file's folder")
}

func TestParseFileErrorsNameTheGroupAndField(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"not a list", `{"replicas": 2}`, `fleet file f.json: expected a JSON list of groups: json: cannot unmarshal object into Go value of type []json.RawMessage`},
		{"empty list", `[]`, `fleet file f.json: expected a JSON list of at least one group`},
		{"not JSON", `[{"replicas": 2}`, `fleet file f.json: expected a JSON list of groups: unexpected EOF`},
		{"trailing data", `[{"replicas": 2}] []`, `fleet file f.json: expected a JSON list of groups: unexpected data after the value`},
		{"group not an object", `[{"replicas": 2}, 7]`, `fleet file f.json: group 1 ("group1"): expected an object with fields name, profile, replicas, scheduler, controller, role`},
		{"null group", `[null]`, `fleet file f.json: group 0 ("group0"): expected an object with fields name, profile, replicas, scheduler, controller, role`},
		{"unknown field", `[{"name": "a", "gpus": 2}]`, `fleet file f.json: group 0 ("a"): field "gpus": unknown field: expected name, profile, replicas, scheduler, controller or role`},
		{"unknown role", `[{"name": "a", "role": "verify"}]`, `fleet file f.json: group 0 ("a"): field "role": "verify": expected mixed, prefill, decode`},
		{"empty role", `[{"role": ""}]`, `fleet file f.json: group 0 ("group0"): field "role": "": expected mixed, prefill, decode`},
		{"role not a string", `[{"role": 1}]`, `fleet file f.json: group 0 ("group0"): field "role": 1: expected mixed, prefill, decode`},
		{"no decode group", `[{"role": "prefill"}]`, `fleet file f.json: field "role": a disaggregated fleet has no group of role "decode": expected at least one prefill and one decode group`},
		{"no prefill group", `[{"role": "decode"}, {"role": "decode"}]`, `fleet file f.json: field "role": a disaggregated fleet has no group of role "prefill": expected at least one prefill and one decode group`},
		{"mixed in a disaggregated fleet", `[{"role": "prefill"}, {"name": "m"}, {"role": "decode"}]`, `fleet file f.json: group 1 ("m"): field "role": "mixed" in a disaggregated fleet: expected prefill or decode`},
		{"zero replicas", `[{"name": "a"}, {"name": "b", "replicas": 0}]`, `fleet file f.json: group 1 ("b"): field "replicas": 0: expected a whole number from 1 to 4096`},
		{"fractional replicas", `[{"replicas": 1.5}]`, `fleet file f.json: group 0 ("group0"): field "replicas": 1.5: expected a whole number from 1 to 4096`},
		{"string replicas", `[{"replicas": "2"}]`, `fleet file f.json: group 0 ("group0"): field "replicas": "2": expected a whole number from 1 to 4096`},
		{"too many", `[{"replicas": 4000}, {"replicas": 97}]`, `fleet file f.json: group 1 ("group1"): field "replicas": the fleet exceeds 4096 replicas`},
		{"bad profile", `[{"name": "l4", "profile": "missing.csv"}]`, `fleet file f.json: group 0 ("l4"): field "profile": profile missing.csv: no such file`},
		{"empty profile", `[{"profile": ""}]`, `fleet file f.json: group 0 ("group0"): field "profile": "": expected a non-empty string`},
		{"bad scheduler", `[{"scheduler": "fifo"}]`, `fleet file f.json: group 0 ("group0"): field "scheduler": unknown scheduler "fifo": expected static, continuous or chunked`},
		{"bad controller", `[{"controller": "fixed:x"}]`, `fleet file f.json: group 0 ("group0"): field "controller": controller "fixed:x": clock MHz "x" must be a finite positive number`},
		{"bad name", `[{"name": 3}]`, `fleet file f.json: group 0 ("group0"): field "name": 3: expected a non-empty string`},
		{"duplicate name", `[{"name": "a"}, {"name": "a"}]`, `fleet file f.json: group 1 ("a"): field "name": name "a" is taken by group 0`},
		{"a field given twice", `[{"name": "a", "replicas": 2, "replicas": 3}]`, `fleet file f.json: group 0 ("a"): field "replicas": given twice`},
		{"a field given twice, once escaped", `[{"controller": "max", "contr\u006fller": "min"}]`, `fleet file f.json: group 0 ("group0"): field "controller": given twice`},
		{"the name given twice", `[{"name": "a"}, {"name": "b", "name": "c"}]`, `fleet file f.json: group 1 ("group1"): field "name": given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("f.json", []byte(tt.text), fileDefaults, fakeLoader(nil))
			require.Error(t, err)
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadFile(filepath.Join(dir, "missing.json"), fileDefaults, fakeLoader(nil))
	require.ErrorContains(t, err, "fleet file "+filepath.Join(dir, "missing.json")+": open ")
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o644))
	_, err = ReadFile(big, fileDefaults, fakeLoader(nil))
	require.EqualError(t, err, "fleet file "+big+": larger than 1048576 bytes")
	ok := filepath.Join(dir, "ok.json")
	require.NoError(t, os.WriteFile(ok, []byte(`[{"replicas": 2, "profile": "good.csv"}]`), 0o644))
	groups, err := ReadFile(ok, fileDefaults, fakeLoader(nil))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "good.csv"), groups[0].ProfilePath)
}

// FuzzParseFile: any input parses into valid groups or fails with a
// FileError; it never panics.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(`[{"name": "a", "profile": "good.csv", "replicas": 3, "scheduler": "static", "controller": "reactive"}]`))
	f.Add([]byte(`[{"replicas": 0}]`))
	f.Add([]byte(`[{"x": 1}, {}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		groups, err := ParseFile("f.json", data, fileDefaults, fakeLoader(nil))
		if err != nil {
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			return
		}
		n, err := Size(groups)
		require.NoError(t, err)
		require.LessOrEqual(t, n, MaxReplicas)
		for _, g := range groups {
			require.NotEmpty(t, g.Name)
			require.NotNil(t, g.Profile)
		}
	})
}

// TestParseFileRoles: role takes prefill, decode or mixed (the default).
func TestParseFileRoles(t *testing.T) {
	load := func(string) (*profile.Profile, error) { return profile.Default(), nil }
	defaults := GroupDefaults{Profile: profile.Default(), Replicas: 1, Scheduler: "chunked", Controller: "max"}
	groups, err := ParseFile("f.json", []byte(`[{"role": "prefill", "replicas": 2, "controller": "fixed:1500"}, {"role": "decode", "controller": "fixed:900"}]`), defaults, load)
	require.NoError(t, err)
	assert.Equal(t, []string{RolePrefill, RoleDecode}, []string{groups[0].Role, groups[1].Role})
	assert.Equal(t, []string{"fixed:1500", "fixed:900"}, []string{groups[0].Controller, groups[1].Controller})
	assert.True(t, Disaggregated(groups))
	groups, err = ParseFile("f.json", []byte(`[{"role": "mixed"}, {}]`), defaults, load)
	require.NoError(t, err)
	assert.Equal(t, RoleMixed, groups[0].Role)
	assert.Empty(t, groups[1].Role)
	assert.False(t, Disaggregated(groups))
	// An elastic disaggregated fleet scales each pool on its own, each
	// group by --autoscale or its own autoscale (a schedule relative to the
	// fleet file's folder).
	groups, bounds, err := ParseElasticFile("cfg/f.json", []byte(`[{"role": "prefill", "autoscale": "schedule:p.csv"}, {"role": "decode", "autoscale": "queue:target=3", "min_replicas": 0}]`), defaults, load)
	require.NoError(t, err)
	assert.Equal(t, []string{RolePrefill, RoleDecode}, []string{groups[0].Role, groups[1].Role})
	assert.Equal(t, []string{"schedule:cfg/p.csv", "queue:target=3"}, []string{bounds[0].Autoscale, bounds[1].Autoscale})
	_, bounds, err = ParseElasticFile("cfg/f.json", []byte(`[{"role": "prefill", "autoscale": "oracle:/abs/plan.csv"}, {"role": "decode"}]`), defaults, load)
	require.NoError(t, err)
	assert.Equal(t, []string{"oracle:/abs/plan.csv", ""}, []string{bounds[0].Autoscale, bounds[1].Autoscale})
	groups, _, err = ParseElasticFile("f.json", []byte(`[{"role": "mixed", "max_replicas": 3}]`), defaults, load)
	require.NoError(t, err)
	assert.Equal(t, RoleMixed, groups[0].Role)
}
