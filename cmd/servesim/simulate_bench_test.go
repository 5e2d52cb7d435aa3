package main

import (
	"context"
	"io"
	"testing"

	"servesim/internal/sharedtest"
)

// BenchmarkSimulateCommand is `servesim simulate` on the whole Azure 2023
// code trace with the reference's L4 aggregate profile, as in the timing
// comparison with run_plant.py: trace parsing, simulation and JSON output.
func BenchmarkSimulateCommand(b *testing.B) {
	profile := sharedtest.Reference(b, "data", "l4_proxy", "l4_profile.csv")
	trace := sharedtest.CodeTrace(b)
	for _, mode := range []struct{ name, normalize, output string }{
		{"raw", "", "--stride=50"}, {"normalized", "0.8", "--stride=50"}, {"normalized-summary", "0.8", "--summary"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			args := []string{"simulate", "--profile", profile, "--trace", trace, "--scheduler", "chunked", "--controller", "max", mode.output}
			if mode.normalize != "" {
				args = append(args, "--normalize", mode.normalize)
			}
			b.ReportAllocs()
			for b.Loop() {
				if code := run(context.Background(), args, &streams{Out: io.Discard, Err: io.Discard}); code != exitOK {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
