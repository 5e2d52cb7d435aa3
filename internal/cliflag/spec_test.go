package cliflag

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specSettings are the flags of specCommand, as the command sees them.
type specSettings struct {
	maxSimTime float64
	schedulers []string
	summary    bool
	trace      string
	bench      []string
}

// specCommand is a command with one flag of each kind a spec sets: a
// number, a List, a bool, a path and a repeatable flag.
func specCommand() (*cobra.Command, *specSettings) {
	s := &specSettings{}
	cmd := &cobra.Command{Use: "simulate", RunE: func(*cobra.Command, []string) error { return nil }}
	f := cmd.Flags()
	f.Float64Var(&s.maxSimTime, "max-sim-time", 3600, "")
	AddList(cmd, &s.schedulers, "scheduler", []string{"chunked"}, "schedulers", "")
	f.BoolVar(&s.summary, "summary", false, "")
	f.StringVar(&s.trace, "trace", "", "")
	f.StringArrayVar(&s.bench, "bench", nil, "")
	AddSpec(cmd)
	return cmd, s
}

// specPaths marks trace and bench as path flags.
var specPaths = map[string]PathFlag{"trace": {Expected: "a trace file"}, "bench": {Expected: "a bench file"}}

func TestApplySpec(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		args    []string
		want    specSettings
		wantErr string // "" when it applies
		usage   bool
	}{
		{name: "every kind of flag", spec: "max-sim-time: 100\nscheduler: [static, chunked]\nsummary: true\ntrace: t.csv\nbench: [a.json, /abs/b.json]\n",
			want: specSettings{maxSimTime: 100, schedulers: []string{"static", "chunked"}, summary: true, trace: "DIR/t.csv", bench: []string{"DIR/a.json", "/abs/b.json"}}},
		{name: "snake case keys and JSON", spec: `{"max_sim_time": 5e2, "scheduler": "static"}`,
			want: specSettings{maxSimTime: 500, schedulers: []string{"static"}}},
		{name: "the command line wins", spec: "max-sim-time: 100\nscheduler: [static]\n", args: []string{"--max-sim-time", "7"},
			want: specSettings{maxSimTime: 7, schedulers: []string{"static"}}},
		{name: "an item holding a comma stays one item", spec: "scheduler: ['a,b', c]\n",
			want: specSettings{maxSimTime: 3600, schedulers: []string{"a,b", "c"}}},
		{name: "stdin stays stdin", spec: "trace: '-'\n", want: specSettings{maxSimTime: 3600, schedulers: []string{"chunked"}, trace: "-"}},
		{name: "an unknown key", spec: "max-sim-time: 1\nstride: 2\n", wantErr: `spec DIR/s.yaml line 2: key "stride": expected a flag of simulate (see simulate --help)`, usage: true},
		{name: "spec inside a spec", spec: "spec: other.yaml\n", wantErr: `key "spec": expected a flag of simulate`, usage: true},
		{name: "a key twice", spec: "summary: true\nsummary: false\n", wantErr: `line 2: key "summary": given twice (line 1 too)`, usage: true},
		{name: "a list for one value", spec: "trace: [a.csv, b.csv]\n", wantErr: `key "trace": a list of 2 values: --trace takes one value`, usage: true},
		{name: "a value the flag refuses", spec: "summary: maybe\n", wantErr: `key "summary": invalid argument "maybe" for "--summary" flag`, usage: true},
		{name: "no value", spec: "trace:\n", wantErr: `key "trace": no value: expected a value, or leave the key out`, usage: true},
		{name: "an empty list", spec: "scheduler: []\n", wantErr: `key "scheduler": an empty list: expected at least one value`, usage: true},
		{name: "a list of lists", spec: "scheduler: [[a]]\n", wantErr: `key "scheduler": item 1: expected a value`, usage: true},
		{name: "a mapping value", spec: "trace: {path: a}\n", wantErr: `key "trace": expected a value or a list of values`, usage: true},
		{name: "not a mapping", spec: "- a\n- b\n", wantErr: `spec DIR/s.yaml line 1: expected a mapping of flag names to values`},
		{name: "empty", spec: "", wantErr: `spec DIR/s.yaml: empty: expected a mapping of flag names to values`},
		{name: "not YAML", spec: "a: [b\n", wantErr: `expected YAML or JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.spec), 0o644))
			cmd, got := specCommand()
			require.NoError(t, cmd.ParseFlags(append([]string{"--spec", path}, tt.args...)))
			err := ApplySpec(cmd, specPaths)
			if tt.wantErr != "" {
				var spec *SpecError
				require.True(t, errors.As(err, &spec), "got %v", err)
				assert.Contains(t, err.Error(), replaceDir(tt.wantErr, dir))
				assert.Equal(t, tt.usage, spec.Usage)
				return
			}
			require.NoError(t, err)
			want := tt.want
			want.trace = replaceDir(want.trace, dir)
			for i := range want.bench {
				want.bench[i] = replaceDir(want.bench[i], dir)
			}
			assert.Equal(t, want, *got)
			if want.maxSimTime != 3600 {
				assert.True(t, cmd.Flags().Changed("max-sim-time"), "a flag the spec set counts as given")
			}
		})
	}
}

func TestApplySpecWithoutSpecOrFile(t *testing.T) {
	cmd, got := specCommand()
	require.NoError(t, cmd.ParseFlags(nil))
	require.NoError(t, ApplySpec(cmd, specPaths), "no --spec: nothing to do")
	assert.Equal(t, 3600.0, got.maxSimTime)

	cmd, _ = specCommand()
	require.NoError(t, cmd.ParseFlags([]string{"--spec", filepath.Join(t.TempDir(), "nosuch.yaml")}))
	err := ApplySpec(cmd, specPaths)
	var spec *SpecError
	require.ErrorAs(t, err, &spec)
	assert.False(t, spec.Usage, "a file that cannot be read is bad input")
	assert.Contains(t, err.Error(), "nosuch.yaml: no such file or directory")
}

// replaceDir puts dir in place of DIR.
func replaceDir(s, dir string) string { return strings.ReplaceAll(s, "DIR", dir) }

// FuzzApplySpec: whatever the file holds, ApplySpec returns nil or a
// *SpecError, and never panics.
func FuzzApplySpec(f *testing.F) {
	for _, seed := range []string{"max-sim-time: 1\n", `{"scheduler": ["a", "b"]}`, "- x\n", "a: [b\n", "summary: true\nsummary: true\n", "trace: !!binary aGk=\n", "&a x: *a\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.yaml")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		cmd, _ := specCommand()
		require.NoError(t, cmd.ParseFlags([]string{"--spec", path}))
		if err := ApplySpec(cmd, specPaths); err != nil {
			var spec *SpecError
			require.ErrorAs(t, err, &spec)
		}
	})
}
