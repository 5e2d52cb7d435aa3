package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
)

// TestCompletedValuesAreAccepted keeps the completions and the commands'
// checks in step: every completed --scheduler and --controller
// value parses.
func TestCompletedValuesAreAccepted(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	root := newRootCmd(s, nil, commands())
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

// TestEveryCompletedFormatIsAccepted sets each command's --format to every
// value completion offers, and to one it does not offer.
func TestEveryCompletedFormatIsAccepted(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	var checked []string
	walkCommands(newRootCmd(s, nil, commands()), func(cmd *cobra.Command) {
		if cmd.Flags().Lookup("format") == nil {
			return
		}
		fn, found := cmd.GetFlagCompletionFunc("format")
		require.True(t, found, cmd.CommandPath())
		formats, _ := fn(cmd, nil, "")
		require.NotEmpty(t, formats, cmd.CommandPath())
		for _, format := range formats {
			assert.NoError(t, cmd.Flags().Set("format", format), "%s --format %s", cmd.CommandPath(), format)
		}
		assert.Error(t, cmd.Flags().Set("format", "yaml"), "%s: a format not completed is refused", cmd.CommandPath())
		checked = append(checked, cmd.Name())
	})
	assert.ElementsMatch(t, []string{"calibrate", "capacity", "diagnose", "scenarios", "simulate", "sweep", "stats", "synth", "validate-profile"}, checked)
}

func TestRouterIsCompletedOnlyWhereItExists(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "servesim"}
	with := &cobra.Command{Use: "with", Run: func(*cobra.Command, []string) {}}
	with.Flags().String("router", "round-robin", "")
	without := &cobra.Command{Use: "without", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(with, without)
	cliflag.RegisterCompletions(root, flagCompletions, pathFlags)
	fn, found := with.GetFlagCompletionFunc("router")
	require.True(t, found)
	got, _ := fn(with, nil, "least")
	assert.Equal(t, []string{"least-outstanding", "least-tokens"}, got)
	_, found = without.GetFlagCompletionFunc("router")
	assert.False(t, found)
}
