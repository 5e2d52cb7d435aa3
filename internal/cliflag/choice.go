package cliflag

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// choice is a string flag value that must be one of a fixed set.
type choice struct {
	value   *string
	choices []string
}

// AddChoice defines a string flag on cmd whose value must be one of
// choices (for example --format json|table), with def as its default, and
// completes it from choices. A value outside them is a flag error that
// names them ("--format "xml": expected json or table").
func AddChoice(cmd *cobra.Command, value *string, name, def, usage string, choices ...string) {
	*value = def
	cmd.Flags().Var(&choice{value: value, choices: choices}, name, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, Choices(choices))
}

// Set accepts one of the choices.
func (c *choice) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("expected %s", c.Expected())
	}
	*c.value = s
	return nil
}

// String returns the value.
func (c *choice) String() string { return *c.value }

// Type names the value's kind in help, as for a plain string flag.
func (c *choice) Type() string { return "string" }

// Expected lists the choices: "json, table or vllm-bench".
func (c *choice) Expected() string { return OrList(c.choices) }
