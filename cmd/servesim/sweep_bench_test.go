package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

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

// scaleGridArgs is a grid of 25 x powerLimits runs: 5 controllers x 5
// loads x powerLimits power limits from 40 W up in steps of 0.1 W (1,000
// runs for 40 limits), as make sweep-scale runs it.
func scaleGridArgs(powerLimits int) []string {
	limits := make([]string, powerLimits)
	for i := range limits {
		limits[i] = strconv.FormatFloat(40+float64(i)/10, 'f', 1, 64)
	}
	return []string{
		"--controller", "max,min,fixed:1125,reactive,sampled-reactive",
		"--normalize", "none,0.3,0.5,0.7,0.9",
		"--power-limit", strings.Join(limits, ","),
	}
}

// BenchmarkSweep1000 runs a 1,000-run grid on the first five minutes of the
// Azure 2023 code trace with every core, writing the records to nowhere,
// and reports records per second. Memory: the records are not kept (see
// make sweep-scale for the peak RSS at 1,000 and 10,000 runs).
func BenchmarkSweep1000(b *testing.B) {
	trace := sharedtest.CodeTrace(b)
	args := append([]string{"sweep", "--quiet", "--trace", trace, "--max-elapsed", "300"}, scaleGridArgs(40)...)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		s, _, errOut := testStreams("")
		s.Out = io.Discard
		if code := run(context.Background(), args, s); code != exitOK {
			b.Fatalf("exit %d: %s", code, errOut)
		}
	}
	b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "records/s")
}
