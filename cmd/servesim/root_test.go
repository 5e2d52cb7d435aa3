package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/capacity"
	"servesim/internal/diagnose"
	"servesim/internal/fleet"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

func testStreams(stdin string) (*streams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &streams{In: bytes.NewBufferString(stdin), Out: &out, Err: &errOut}, &out, &errOut
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
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
			code := run(context.Background(), tt.args, s)
			assert.Equal(t, tt.wantCode, code)
			if tt.wantErr != "" {
				assert.Equal(t, tt.wantErr, errOut.String())
				assert.Empty(t, out.String())
			}
		})
	}
}

// withTestCommand returns servesim's subcommands and a throw-away one.
func withTestCommand(name string, cmd func(*streams) *cobra.Command) []subcommand {
	return append(commands(), subcommand{name, cmd})
}

// parseFlags runs `servesim name args` with only the command newCmd builds,
// given a runF that captures the parsed options instead of running. It
// returns the options (nil when parsing failed), the exit code, stdout and
// stderr.
func parseFlags[O any](t *testing.T, name string, newCmd func(*streams, func(*O) error) *cobra.Command, args ...string) (*O, int, string, string) {
	t.Helper()
	var got *O
	subs := []subcommand{{name, func(s *streams) *cobra.Command {
		return newCmd(s, func(o *O) error { got = o; return nil })
	}}}
	s, out, errOut := testStreams("")
	code := runCommands(context.Background(), append([]string{name}, args...), s, subs)
	return got, code, out.String(), errOut.String()
}

func TestRunMapsCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		runErr   error
		panicVal any
		wantCode int
		wantErr  string
	}{
		{"plain error is bad input", errors.New("trace x.csv line 3: bad"), nil, exitInput, "servesim: trace x.csv line 3: bad\n"},
		{"usage error", usageErrorf("--scheduler %q: expected static, continuous or chunked", "x"), nil, exitUsage, "servesim: --scheduler \"x\": expected static, continuous or chunked\n"},
		{"internal error", internalError(errors.New("boom")), nil, exitInternal, "servesim: internal error: boom\n"},
		{"panic is recovered", nil, "index out of range\nwith detail", exitInternal, "servesim: internal error: index out of range with detail\n"},
		{"ok", nil, nil, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subs := withTestCommand("probe", func(*streams) *cobra.Command {
				return &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error {
					if tt.panicVal != nil {
						panic(tt.panicVal)
					}
					return tt.runErr
				}}
			})
			s, out, errOut := testStreams("")
			assert.Equal(t, tt.wantCode, runCommands(context.Background(), []string{"probe"}, s, subs))
			assert.Equal(t, tt.wantErr, errOut.String())
			assert.Empty(t, out.String())
		})
	}
}

func TestRootBuildsOnlyTheNamedSubcommand(t *testing.T) {
	t.Parallel()
	var all []string
	for _, sub := range commands() {
		all = append(all, sub.name)
	}
	require.ElementsMatch(t, []string{"simulate", "validate-profile", "diagnose", "scenarios", "sweep", "capacity", "trace", "bench", "calibrate"}, all)
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
		for _, c := range newRootCmd(s, tc.args, commands()).Commands() {
			if c.Name() != "help" && c.Name() != "completion" {
				got = append(got, c.Name())
			}
		}
		assert.ElementsMatch(t, tc.want, got, "%q", tc.args)
	}
}

func TestMistypedSubcommandIsSuggested(t *testing.T) {
	t.Parallel()
	s, out, errOut := testStreams("")
	assert.Equal(t, exitUsage, run(context.Background(), []string{"simulat"}, s))
	assert.Equal(t, "servesim: unknown command \"simulat\" for \"servesim\"; did you mean \"simulate\"?\n", errOut.String())
	assert.Empty(t, out.String())
}

func TestWriteBytesAtomic(t *testing.T) {
	t.Parallel()
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

// TestDocumentsAreStreamed: the large documents (simulate, fleet, capacity,
// diagnose windows, validate-profile) have types jsonout can stream, so
// they are written while they are encoded, never held whole in memory.
func TestDocumentsAreStreamed(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		plant.Report{}, &plant.Report{}, &fleet.Report{}, &capacity.Document{},
		diagnose.Snapshot{}, diagnose.WindowReport{}, diagnose.DemoReport{}, profile.Verdicts{},
	} {
		assert.True(t, jsonout.Streamable(reflect.TypeOf(v)), "%T", v)
	}
}
