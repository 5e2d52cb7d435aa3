package main

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testStreams(stdin string) (*streams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &streams{In: bytes.NewBufferString(stdin), Out: &out, Err: &errOut}, &out, &errOut
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"version", []string{"--version"}, exitOK, ""},
		{"unknown command", []string{"nosuch"}, exitUsage, "servesim: unknown command \"nosuch\" for \"servesim\"\n"},
		{"unknown flag", []string{"--nosuch"}, exitUsage, "servesim: unknown flag: --nosuch\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams("")
			code := run(tt.args, s)
			assert.Equal(t, tt.wantCode, code)
			if tt.wantErr != "" {
				assert.Equal(t, tt.wantErr, errOut.String())
				assert.Empty(t, out.String())
			}
		})
	}
}

// withTestCommand registers a throw-away subcommand for the duration of a test.
func withTestCommand(t *testing.T, name string, cmd func(*streams) *cobra.Command) {
	saved := subcommands
	subcommands = append(append([]subcommand{}, saved...), subcommand{name, cmd})
	t.Cleanup(func() { subcommands = saved })
}

// parseFlags runs `servesim name args` with only the command newCmd builds,
// given a runF that captures the parsed options instead of running. It
// returns the options (nil when parsing failed), the exit code, stdout and
// stderr.
func parseFlags[O any](t *testing.T, name string, newCmd func(*streams, func(*O) error) *cobra.Command, args ...string) (*O, int, string, string) {
	t.Helper()
	var got *O
	saved := subcommands
	subcommands = []subcommand{{name, func(s *streams) *cobra.Command {
		return newCmd(s, func(o *O) error { got = o; return nil })
	}}}
	t.Cleanup(func() { subcommands = saved })
	s, out, errOut := testStreams("")
	code := run(append([]string{name}, args...), s)
	return got, code, out.String(), errOut.String()
}

func TestRunMapsCommandErrors(t *testing.T) {
	tests := []struct {
		name     string
		runErr   error
		panicVal any
		wantCode int
		wantErr  string
	}{
		{"plain error is bad input", errors.New("trace x.csv line 3: bad"), nil, exitInput, "servesim: trace x.csv line 3: bad\n"},
		{"usage error", usageErrorf("--scheduler %q: expected static, continuous or chunked", "x"), nil, exitUsage, "servesim: --scheduler \"x\": expected static, continuous or chunked\n"},
		{"internal error", internalError{errors.New("boom")}, nil, exitInternal, "servesim: internal error: boom\n"},
		{"panic is recovered", nil, "index out of range\nwith detail", exitInternal, "servesim: internal error: index out of range with detail\n"},
		{"ok", nil, nil, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withTestCommand(t, "probe", func(*streams) *cobra.Command {
				return &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error {
					if tt.panicVal != nil {
						panic(tt.panicVal)
					}
					return tt.runErr
				}}
			})
			s, out, errOut := testStreams("")
			assert.Equal(t, tt.wantCode, run([]string{"probe"}, s))
			assert.Equal(t, tt.wantErr, errOut.String())
			assert.Empty(t, out.String())
		})
	}
}

func TestRootBuildsOnlyTheNamedSubcommand(t *testing.T) {
	var all []string
	for _, sub := range subcommands {
		all = append(all, sub.name)
	}
	require.ElementsMatch(t, []string{"simulate", "validate-profile", "diagnose", "scenarios", "sweep", "capacity", "trace"}, all)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"simulate", "--summary"}, []string{"simulate"}},
		{[]string{"validate-profile", "x"}, []string{"validate-profile"}},
		{[]string{"trace", "stats", "x"}, []string{"trace"}},
		{[]string{"help", "simulate"}, all},
		{[]string{"--version"}, all},
		{[]string{"simulat"}, all},
		{nil, all},
	} {
		s, _, _ := testStreams("")
		var got []string
		for _, c := range newRootCmd(s, tc.args).Commands() {
			if c.Name() != "help" && c.Name() != "completion" {
				got = append(got, c.Name())
			}
		}
		assert.ElementsMatch(t, tc.want, got, "%q", tc.args)
	}
}

func TestMistypedSubcommandIsSuggested(t *testing.T) {
	s, out, errOut := testStreams("")
	assert.Equal(t, exitUsage, run([]string{"simulat"}, s))
	assert.Equal(t, "servesim: unknown command \"simulat\" for \"servesim\"; did you mean \"simulate\"?\n", errOut.String())
	assert.Empty(t, out.String())
}

func TestMarshalJSON(t *testing.T) {
	type inner struct {
		B float64 `json:"b"`
	}
	type embedded struct {
		E int `json:"e"`
	}
	type result struct {
		embedded
		Name    string             `json:"name"`
		NaN     float64            `json:"nan"`
		Inf     float64            `json:"inf"`
		Small   float64            `json:"small"`
		Whole   float64            `json:"whole"`
		Opt     *float64           `json:"opt"`
		Omitted string             `json:"omitted,omitempty"`
		Skip    int                `json:"-"`
		List    []float64          `json:"list"`
		Nil     []int              `json:"nil"`
		Map     map[string]float64 `json:"map"`
		Inner   inner              `json:"inner"`
		HTML    string             `json:"html"`
		Raw     any                `json:"raw"`
	}
	v := result{
		embedded: embedded{E: 7}, Name: "x", NaN: math.NaN(), Inf: math.Inf(-1), Small: 1e-7, Whole: 5,
		List: []float64{1.5, math.Inf(1)}, Map: map[string]float64{"z": 1, "a": math.NaN()},
		Inner: inner{B: 0.1}, HTML: "<a&b>", Raw: map[string]any{"k": []any{1.0, "s"}},
	}
	chunks, err := encodeJSONChunks(v)
	require.NoError(t, err)
	got := bytes.Join(chunks, nil)
	want := `{
  "e": 7,
  "name": "x",
  "nan": null,
  "inf": null,
  "small": 1e-7,
  "whole": 5,
  "opt": null,
  "list": [1.5, null],
  "nil": [],
  "map": {
    "a": null,
    "z": 1
  },
  "inner": {
    "b": 0.1
  },
  "html": "<a&b>",
  "raw": {
    "k": [1, "s"]
  }
}
`
	assert.Equal(t, want, string(got))
}

func TestWriteBytesAtomic(t *testing.T) {
	dir := t.TempDir()
	s, out, _ := testStreams("")
	path := filepath.Join(dir, "result.json")
	require.NoError(t, writeBytes(s, outputOptions{Path: path}, []byte("{}\n")))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{}\n", string(data))
	assert.Empty(t, out.String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	err = writeBytes(s, outputOptions{Path: filepath.Join(dir, "missing", "x.json")}, []byte("{}"))
	require.Error(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "missing", "x.json"))

	require.NoError(t, writeBytes(s, outputOptions{Path: "-"}, []byte("{}\n")))
	assert.Equal(t, "{}\n", out.String())
}
