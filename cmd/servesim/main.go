// Command servesim answers capacity, latency, energy and thermal questions
// about large-language-model inference serving before GPU hours are spent.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], newStreams()))
}
