package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryHelpFileIsACommandsHelp builds the whole command tree (which
// reads every help file it names) and checks that every help file is the
// long help or the examples of a command, so none is left unused.
// walkCommands calls visit on cmd and every command under it.
func walkCommands(cmd *cobra.Command, visit func(*cobra.Command)) {
	visit(cmd)
	for _, sub := range cmd.Commands() {
		walkCommands(sub, visit)
	}
}

func TestEveryHelpFileIsACommandsHelp(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	texts := map[string]bool{}
	walkCommands(newRootCmd(s, nil, commands()), func(c *cobra.Command) { texts[c.Long], texts[c.Example] = true, true })
	names, err := fs.Glob(helpFiles, "help/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		text := help(strings.TrimSuffix(strings.TrimPrefix(name, "help/"), ".txt"))
		assert.NotEmpty(t, text, name)
		assert.True(t, texts[text], "%s is no command's help", name)
	}
}
