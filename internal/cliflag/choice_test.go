package cliflag

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// command is a command with --format json|table|text and a number flag,
// whose flag errors go through ParseError.
func command(format *string) *cobra.Command {
	cmd := &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { return nil }, SilenceErrors: true, SilenceUsage: true}
	AddChoice(cmd, format, "format", "json", "output format", "json", "table", "text")
	cmd.Flags().Float64("rate", 1, "a rate")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return ParseError(c, err, map[string]string{"rate": "a positive rate"})
	})
	return cmd
}

func TestChoiceAcceptsOnlyItsChoices(t *testing.T) {
	t.Parallel()
	var format string
	cmd := command(&format)
	assert.Equal(t, "json", format, "the default")
	f := cmd.Flags().Lookup("format")
	assert.Equal(t, "json", f.DefValue)
	assert.Equal(t, "string", f.Value.Type())
	cmd.SetArgs([]string{"--format", "table"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "table", format)

	fn, ok := cmd.GetFlagCompletionFunc("format")
	require.True(t, ok)
	got, _ := fn(cmd, nil, "t")
	assert.Equal(t, []string{"table", "text"}, got)
}

func TestParseErrorNamesTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, `--format "xml": expected json, table or text`},
		{[]string{"--rate", "abc"}, `--rate "abc": expected a positive rate`},
		{[]string{"--rate"}, "--rate needs a value: a positive rate"},
		{[]string{"--formt", "json"}, "unknown flag: --formt; did you mean --format?"},
		{[]string{"--zzzzzzzz"}, "unknown flag: --zzzzzzzz"},
	}
	for _, tt := range tests {
		var format string
		cmd := command(&format)
		cmd.SetArgs(tt.args)
		assert.EqualError(t, cmd.Execute(), tt.want, "%v", tt.args)
	}
	other := errors.New("other")
	assert.Equal(t, other, ParseError(&cobra.Command{}, other, nil))
}

func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "servesim"}
	root.AddCommand(&cobra.Command{Use: "stats", Run: func(*cobra.Command, []string) {}})
	assert.EqualError(t, UnknownCommand(root, "stat", ""), `unknown command "stat" for "servesim"; did you mean "stats"?`)
	assert.EqualError(t, UnknownCommand(root, "convert", ": expected stats"), `unknown command "convert" for "servesim": expected stats`)
}
