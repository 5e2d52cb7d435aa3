package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"servesim/internal/outfile"
)

// streams are the standard streams a command reads and writes.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrIsTerminal reports whether Err is a terminal, so progress may be drawn.
	ErrIsTerminal bool
	// InIsTerminal reports whether In is an interactive terminal (a tty,
	// not merely a character device such as /dev/null), where a command
	// that would read stdin says what it expects instead of waiting.
	InIsTerminal bool
	// OutClosed reports that stdout was closed when servesim started
	// (`servesim simulate >&-`), so a result written there would be lost.
	OutClosed bool
	// Debug adds the stack of a recovered panic to its message
	// (SERVESIM_DEBUG=1).
	Debug bool
	// Getenv reads the environment (sweep --shard auto); nil reads the
	// process's.
	Getenv func(string) string
}

// env returns the environment variable name, as Getenv reads it.
func (s *streams) env(name string) string {
	if s.Getenv == nil {
		return os.Getenv(name)
	}
	return s.Getenv(name)
}

// newStreams returns the process's standard streams.
func newStreams() *streams {
	return &streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		ErrIsTerminal: isTerminal(os.Stderr),
		InIsTerminal:  term.IsTerminal(int(os.Stdin.Fd())),
		OutClosed:     outfile.ClosedAtStart(os.Stdout),
		Debug:         debugRequested(os.Getenv(debugEnv)),
	}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
