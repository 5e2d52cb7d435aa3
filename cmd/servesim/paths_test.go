package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathFlagUse is one path flag of one command of the tree: the command's
// words (servesim's first), whether it needs an argument, and the flag.
type pathFlagUse struct {
	words   []string
	needArg bool
	flag    *pflag.Flag
}

// commandPathFlags walks servesim's whole command tree and returns every
// flag of every runnable command that pathFlags names.
func commandPathFlags() []pathFlagUse {
	var uses []pathFlagUse
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Runnable() {
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if _, ok := pathFlags[f.Name]; ok {
					uses = append(uses, pathFlagUse{strings.Fields(cmd.CommandPath()), cmd.ValidateArgs(nil) != nil, f})
				}
			})
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&streams{}, nil, commands()))
	return uses
}

// TestPathFlagsRefuseEmptyAndDash gives every path flag of every command
// an empty value (a script's unset variable: `--trace=` and `--trace ""`),
// and "-" where it is not stdin or stdout: each is a usage error naming the
// flag, before anything is read or run.
func TestPathFlagsRefuseEmptyAndDash(t *testing.T) {
	t.Parallel()
	uses := commandPathFlags()
	seen := map[string]bool{}
	for _, use := range uses {
		seen[use.flag.Name] = true
	}
	for name := range pathFlags {
		assert.True(t, seen[name], "pathFlags lists --%s, which no command has", name)
	}
	for _, use := range uses {
		p := pathFlags[use.flag.Name]
		name := "--" + use.flag.Name
		if use.flag.Shorthand != "" {
			name = "-" + use.flag.Shorthand
		}
		empty := fmt.Sprintf(`servesim: %s "": expected %s (an empty value is not "the default": leave the flag out for it)`+"\n", name, p.Expected)
		tries := []struct {
			args []string
			want string
		}{
			{[]string{"--" + use.flag.Name + "="}, empty},
			{[]string{"--" + use.flag.Name, ""}, empty},
		}
		if use.flag.Shorthand != "" {
			tries = append(tries, struct {
				args []string
				want string
			}{[]string{"-" + use.flag.Shorthand + "="}, fmt.Sprintf(`servesim: %s "=": expected %s (%s= gives the value "=", not an empty one: leave the flag out for the default)`+"\n", name, p.Expected, name)})
		}
		if !p.Stdio {
			tries = append(tries, struct {
				args []string
				want string
			}{[]string{"--" + use.flag.Name, "-"}, fmt.Sprintf(`servesim: %s "-": %s`+"\n", name, p.NotStdio)})
		}
		for _, try := range tries {
			args := append(append([]string{}, use.words[1:]...), try.args...)
			if use.needArg {
				args = append(args, "in.txt") // never read
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				s, out, errOut := testStreams("")
				code := run(context.Background(), args, s)
				assert.Equal(t, exitUsage, code)
				assert.Equal(t, try.want, errOut.String())
				assert.Empty(t, out.String())
			})
		}
	}
}

// TestPathFlagsCoverEveryCommand pins the path flags each command has, so
// that a command losing the check (or a new path flag) is seen.
func TestPathFlagsCoverEveryCommand(t *testing.T) {
	t.Parallel()
	got := map[string][]string{}
	for _, use := range commandPathFlags() {
		cmd := strings.Join(use.words[1:], " ")
		got[cmd] = append(got[cmd], use.flag.Name)
	}
	assert.Equal(t, map[string][]string{
		"bench":            {"dataset-path", "fleet", "gpu", "model", "output", "profile", "result-dir", "result-filename"},
		"calibrate":        {"bench", "bundle-metadata", "bundle-out", "bundle-raw", "bundle-telemetry", "gpu", "holdout", "model", "out-gpu", "out-profile", "output", "plot", "power-log", "profile"},
		"capacity":         {"evaluations", "fleet", "gpu", "model", "out-plan", "output", "profile", "resume", "spec", "trace"},
		"diagnose":         {"output", "plot"},
		"scenarios":        {"output", "plot", "profiles", "trace"},
		"simulate":         {"fleet", "gpu", "model", "output", "plot", "profile", "request-log", "spec", "trace"},
		"sweep":            {"gpu", "model", "output", "profile", "resume", "spec", "trace"},
		"sweep merge":      {"output"},
		"trace convert":    {"output"},
		"trace stats":      {"output"},
		"trace synth":      {"output"},
		"validate-profile": {"output"},
	}, got)
}

// notPathFlags are the string and list flags whose help speaks of files or
// paths without naming one.
var notPathFlags = map[string]string{
	"window":        "a window's name (its default is a file's base name)",
	"dataset-name":  "a dataset's kind",
	"trace-format":  "a format's name",
	"trace-columns": "column names",
	"trace-filter":  "filter terms",
	"time-unit":     "a unit",
	"autoscale":     "a policy (schedule:FILE and oracle:FILE name a schedule, read when the run starts)",
}

// TestPathFlagsListed fails for a flag that names a file or folder (its
// help says FILE, FOLDER, file, folder or path) but is missing from
// pathFlags, so that it would take an empty value for "not given".
func TestPathFlagsListed(t *testing.T) {
	t.Parallel()
	pathWords := regexp.MustCompile(`(?i)\bfiles?\b|\bfolders?\b|\bpaths?\b|\bdir\b`)
	root := newRootCmd(&streams{}, nil, commands())
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "string", "list", "stringSlice", "stringArray":
			default:
				return
			}
			if _, ok := pathFlags[f.Name]; ok || notPathFlags[f.Name] != "" {
				return
			}
			assert.False(t, pathWords.MatchString(f.Name+" "+f.Usage), "%s --%s names a file (%q): add it to pathFlags (or notPathFlags)", cmd.CommandPath(), f.Name, f.Usage)
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	require.NotEmpty(t, pathFlags)
}
