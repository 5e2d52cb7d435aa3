package main

import (
	"context"
	"strconv"
	"testing"

	"servesim/internal/sharedtest"
)

// sweepGridArgs is the grid of the sweep benchmark and of `make sweep-demo`:
// 3 schedulers x 5 controllers x 4 loads = 60 runs.
var sweepGridArgs = []string{
	"--scheduler", "static,continuous,chunked",
	"--controller", "max,min,fixed:1125,reactive,sampled-reactive",
	"--normalize", "none,0.5,0.7,0.9",
}

// BenchmarkSweep runs the 60-run grid on the first five minutes of the Azure
// 2023 code trace with one and with two workers; the ratio of the two is the
// parallel speed-up (the whole trace: make sweep-demo).
func BenchmarkSweep(b *testing.B) {
	trace := sharedtest.CodeTrace(b)
	for _, jobs := range []int{1, 2} {
		b.Run("jobs="+strconv.Itoa(jobs), func(b *testing.B) {
			b.ReportAllocs()
			args := append([]string{"sweep", "--quiet", "--trace", trace, "--max-elapsed", "300", "--jobs", strconv.Itoa(jobs)}, sweepGridArgs...)
			for b.Loop() {
				s, _, errOut := testStreams("")
				if code := run(context.Background(), args, s); code != exitOK {
					b.Fatalf("exit %d: %s", code, errOut)
				}
			}
		})
	}
}
