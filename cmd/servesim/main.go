// Command servesim answers capacity, latency, energy and thermal questions
// about large-language-model inference serving before GPU hours are spent.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"servesim/internal/interrupt"
	"servesim/internal/outfile"
)

func main() {
	// servesim runs one job and exits: collecting garbage less often (the
	// heap may grow to five times the live data) saves a third of the time
	// of a large simulate document at a few megabytes of memory.
	debug.SetGCPercent(400)
	// ... until the heap nears SoftMemoryLimit: then the collector runs
	// as often as it must to stay under it, so that a large run's peak is
	// its live data and not five times it. GOMEMLIMIT, when set, rules.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(SoftMemoryLimit)
	}
	ctx := exitOnSignal(os.Stderr)
	os.Exit(run(ctx, os.Args[1:], newStreams()))
}

// SoftMemoryLimit is the heap size past which the garbage collector works
// to keep servesim's memory down (runtime/debug.SetMemoryLimit); the
// README's "Memory limits" table gives the peaks it keeps runs under.
const SoftMemoryLimit = 2 << 30

// interruptGrace is how long an interrupted run may take to stop by itself
// (its loops look at the context every few thousand steps) before
// servesim ends it.
const interruptGrace = time.Second

// exitOnSignal makes SIGINT (Ctrl-C) and SIGTERM end servesim cleanly
// (interrupt.OnSignal): the temporary file of an unfinished -o or --plot
// write is removed at once (no file is replaced by it: a write still under
// way waits), the long loops stop, and the run ends with one line on
// stderr naming the signal and the exit code 128 plus its number (130,
// 143). A run that has not ended interruptGrace later (a write blocked on
// a full pipe), or a second signal, ends the process the same way at once.
// A write to a closed stdout pipe (`| head`) ends servesim quietly.
func exitOnSignal(stderr io.Writer) context.Context {
	return interrupt.OnSignal(interruptGrace, outfile.Abort, func(in *interrupt.Interruption) {
		in.End()
		fmt.Fprintf(stderr, "servesim: %v\n", in)
		os.Exit(in.ExitCode())
	})
}
