package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// TestCompletedValuesAreAccepted keeps the completions and the commands'
// checks in step: every completed --format, --scheduler and --controller
// value parses.
func TestCompletedValuesAreAccepted(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	root := newRootCmd(s, nil, commands())
	for _, cmd := range root.Commands() {
		formats, ok := formatsByCommand[cmd.Name()]
		if !ok {
			continue
		}
		fn, found := cmd.GetFlagCompletionFunc("format")
		require.True(t, found, cmd.Name())
		got, _ := fn(cmd, nil, "")
		assert.Equal(t, formats, got, cmd.Name())
	}
	for _, name := range plant.SchedulerNames {
		_, err := plant.NewScheduler(name)
		assert.NoError(t, err, name)
	}
	simulate, _, err := root.Find([]string{"simulate"})
	require.NoError(t, err)
	fn, found := simulate.GetFlagCompletionFunc("controller")
	require.True(t, found)
	specs, directive := fn(simulate, nil, "")
	assert.Equal(t, cobra.ShellCompDirectiveNoFileComp, directive)
	require.Len(t, specs, len(plant.ControllerNames)+2*7, "the named controllers, fixed: and race-to-idle: at each of the proxy's 7 levels")
	for _, spec := range specs {
		_, err := plant.NewController(spec)
		assert.NoError(t, err, spec)
	}
}

// TestEveryCompletedFormatIsAccepted runs each command's checks on every
// --format value completion offers, and on one it does not offer.
func TestEveryCompletedFormatIsAccepted(t *testing.T) {
	t.Parallel()
	parse := map[string]func(args ...string) (int, string){
		"simulate": func(args ...string) (int, string) {
			_, code, _, stderr := parseFlags(t, "simulate", newSimulateCmd, args...)
			return code, stderr
		},
		"sweep": func(args ...string) (int, string) {
			_, code, _, stderr := parseFlags(t, "sweep", newSweepCmd, args...)
			return code, stderr
		},
		"scenarios": func(args ...string) (int, string) {
			_, code, _, stderr := parseFlags(t, "scenarios", newScenariosCmd, args...)
			return code, stderr
		},
		"diagnose": func(args ...string) (int, string) {
			_, code, _, stderr := parseFlags(t, "diagnose", newDiagnoseCmd, args...)
			return code, stderr
		},
		"validate-profile": func(args ...string) (int, string) {
			_, code, _, stderr := parseFlags(t, "validate-profile", newValidateProfileCmd, append(args, "x.csv")...)
			return code, stderr
		},
	}
	require.Len(t, parse, len(formatsByCommand))
	for name, formats := range formatsByCommand {
		for _, format := range formats {
			code, stderr := parse[name]("--format", format)
			assert.Equal(t, exitOK, code, "%s --format %s: %s", name, format, stderr)
		}
		code, _ := parse[name]("--format", "yaml")
		assert.Equal(t, exitUsage, code, "%s: a format not completed is refused", name)
	}
}

func TestRouterIsCompletedOnlyWhereItExists(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "servesim"}
	with := &cobra.Command{Use: "with", Run: func(*cobra.Command, []string) {}}
	with.Flags().String("router", "round-robin", "")
	without := &cobra.Command{Use: "without", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(with, without)
	registerCompletions(root)
	fn, found := with.GetFlagCompletionFunc("router")
	require.True(t, found)
	got, _ := fn(with, nil, "least")
	assert.Equal(t, []string{"least-outstanding", "least-tokens"}, got)
	_, found = without.GetFlagCompletionFunc("router")
	assert.False(t, found)
}
