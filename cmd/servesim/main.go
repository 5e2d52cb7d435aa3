// Command servesim answers capacity, latency, energy and thermal questions
// about large-language-model inference serving before GPU hours are spent.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"servesim/internal/outfile"
)

func main() {
	// servesim runs one job and exits: collecting garbage less often (the
	// heap may grow to five times the live data) saves a third of the time
	// of a large simulate document at a few megabytes of memory.
	debug.SetGCPercent(400)
	exitOnSignal(os.Stderr)
	os.Exit(run(os.Args[1:], newStreams()))
}

// signalNames are the signals servesim ends on by itself, with their names.
var signalNames = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}

// exitOnSignal makes SIGINT (Ctrl-C) and SIGTERM end servesim cleanly: the
// temporary file of an unfinished -o or --plot write is removed (no file is
// replaced by it), one line on stderr names the signal, and the exit code
// is 128 plus the signal's number, as a shell reports a process a signal
// killed (130, 143). SIGPIPE keeps the Go runtime's default: a write to a
// closed stdout pipe (`| head`) ends servesim quietly.
func exitOnSignal(stderr io.Writer) {
	signals := make(chan os.Signal, 1)
	for sig := range signalNames {
		signal.Notify(signals, sig)
	}
	go func() {
		sig := <-signals
		outfile.Abort()
		fmt.Fprintf(stderr, "servesim: interrupted by %s\n", signalNames[sig])
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
}
