// Command servesim answers capacity, latency, energy and thermal questions
// about large-language-model inference serving before GPU hours are spent.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// servesim runs one job and exits: collecting garbage less often (the
	// heap may grow to five times the live data) saves a third of the time
	// of a large simulate document at a few megabytes of memory.
	debug.SetGCPercent(400)
	os.Exit(run(os.Args[1:], newStreams()))
}
