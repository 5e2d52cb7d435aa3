package main

import (
	"context"
	"servesim/internal/interrupt"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// panickingCommand returns servesim's subcommands and `probe`, which panics.
func panickingCommand() []subcommand {
	return withTestCommand("probe", func(*streams) *cobra.Command {
		return &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error {
			panic("index out of range [3] with length 3")
		}}
	})
}

func TestRecoveredPanicIsOneLineWithoutDebug(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"", "0", "yes"} {
		s, out, errOut := testStreams("")
		s.Debug = debugRequested(value)
		assert.Equal(t, exitInternal, runCommands(context.Background(), []string{"probe"}, s, panickingCommand()))
		assert.Equal(t, "servesim: internal error: index out of range [3] with length 3\n", errOut.String(), "%s=%q", debugEnv, value)
		assert.Empty(t, out.String())
	}
}

func TestRecoveredPanicShowsItsStackWithDebug(t *testing.T) {
	t.Parallel()
	s, out, errOut := testStreams("")
	s.Debug = debugRequested("1")
	assert.Equal(t, exitInternal, runCommands(context.Background(), []string{"probe"}, s, panickingCommand()))
	first, stack, ok := strings.Cut(errOut.String(), "\n")
	require.True(t, ok)
	assert.Equal(t, "servesim: internal error: index out of range [3] with length 3", first)
	assert.Regexp(t, `^goroutine \d+ \[running\]:\n`, stack)
	assert.Contains(t, stack, "panic(", "the stack goes through the panic")
	assert.Contains(t, stack, "panickingCommand.func", "and names the function that panicked")
	assert.Empty(t, out.String())
}

// TestInterruptedRunEndsWithTheSignal: a run whose context a signal
// cancelled stops its simulation (the loop looks at the context every
// plant.CancelCheckSteps steps) and ends with the signal's one line and
// exit code, writing no result.
func TestInterruptedRunEndsWithTheSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
		name string
		code int
	}{
		{[]string{"simulate", "--max-sim-time", "86400"}, syscall.SIGINT, "SIGINT", 130},
		{[]string{"simulate", "--replicas", "2", "--router", "least-outstanding"}, syscall.SIGTERM, "SIGTERM", 143},
		{[]string{"capacity", "--max-replicas", "4", "--attainment", "0.5"}, syscall.SIGINT, "SIGINT", 130},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(interrupt.New(tc.sig))
		s, out, errOut := testStreams("")
		assert.Equal(t, tc.code, run(ctx, tc.args, s), "%v", tc.args)
		assert.Equal(t, "servesim: interrupted by "+tc.name+"\n", errOut.String(), "%v", tc.args)
		assert.Empty(t, out.String(), "%v", tc.args)
	}
}
