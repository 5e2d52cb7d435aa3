package main

import (
	"context"
	"io"
	"testing"

	"servesim/internal/sharedtest"
)

// BenchmarkSimulateCommandMPC is a whole `servesim simulate` run with the
// mpc controller and, for comparison, with max: the first 900 s of the
// Azure code and conversation traces at moderate load (--normalize 0.4) on
// the L4 rows and the embedded proxy, the document without trajectory
// (--summary) and with it (--stride 10).
func BenchmarkSimulateCommandMPC(b *testing.B) {
	l4 := sharedtest.Reference(b, "data", "l4_proxy", "l4_profile.csv")
	for _, trace := range []struct{ name, path string }{{"code", sharedtest.CodeTrace(b)}, {"conv", sharedtest.ConvTrace(b)}} {
		for _, prof := range []struct{ name, flag string }{{"l4", "--profile=" + l4}, {"proxy", "--scheduler=chunked"}} {
			for _, output := range []string{"--summary", "--stride=10"} {
				for _, ctrl := range []string{"max", "mpc"} {
					b.Run(trace.name+"/"+prof.name+"/"+output[2:]+"/"+ctrl, func(b *testing.B) {
						args := []string{"simulate", prof.flag, "--trace", trace.path, "--max-elapsed", "900",
							"--normalize", "0.4", "--max-sim-time", "100000", "--controller", ctrl, output}
						b.ReportAllocs()
						for b.Loop() {
							if code := run(context.Background(), args, &streams{Out: io.Discard, Err: io.Discard}); code != exitOK {
								b.Fatalf("exit %d", code)
							}
						}
					})
				}
			}
		}
	}
}
