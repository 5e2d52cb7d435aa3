package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// panickingCommand registers `probe`, which panics.
func panickingCommand(t *testing.T) {
	withTestCommand(t, "probe", func(*streams) *cobra.Command {
		return &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error {
			panic("index out of range [3] with length 3")
		}}
	})
}

func TestRecoveredPanicIsOneLineWithoutDebug(t *testing.T) {
	for _, value := range []string{"", "0", "yes"} {
		t.Setenv(debugEnv, value)
		panickingCommand(t)
		s, out, errOut := testStreams("")
		assert.Equal(t, exitInternal, run([]string{"probe"}, s))
		assert.Equal(t, "servesim: internal error: index out of range [3] with length 3\n", errOut.String(), "%s=%q", debugEnv, value)
		assert.Empty(t, out.String())
	}
}

func TestRecoveredPanicShowsItsStackWithDebug(t *testing.T) {
	t.Setenv(debugEnv, "1")
	panickingCommand(t)
	s, out, errOut := testStreams("")
	assert.Equal(t, exitInternal, run([]string{"probe"}, s))
	first, stack, ok := strings.Cut(errOut.String(), "\n")
	require.True(t, ok)
	assert.Equal(t, "servesim: internal error: index out of range [3] with length 3", first)
	assert.Regexp(t, `^goroutine \d+ \[running\]:\n`, stack)
	assert.Contains(t, stack, "panic(", "the stack goes through the panic")
	assert.Contains(t, stack, "panickingCommand.func", "and names the function that panicked")
	assert.Empty(t, out.String())
}
