package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// fuzzedCommands builds each subcommand with a run function that only
// records that it ran, so a fuzzed value exercises parsing and the checks.
var fuzzedCommands = []struct {
	name  string
	build func(*streams) *cobra.Command
	args  []string // positional arguments (or required flags) the command needs
	sub   string   // the subcommand fuzzed, for a command group
}{
	{"simulate", func(s *streams) *cobra.Command {
		return newSimulateCmd(s, func(*simulateOptions) error { return nil })
	}, nil, ""},
	{"sweep", func(s *streams) *cobra.Command { return newSweepCmd(s, func(*sweepOptions) error { return nil }) }, nil, ""},
	{"scenarios", func(s *streams) *cobra.Command {
		return newScenariosCmd(s, func(*scenariosOptions) error { return nil })
	}, nil, ""},
	{"diagnose", func(s *streams) *cobra.Command {
		return newDiagnoseCmd(s, func(*diagnoseOptions) error { return nil })
	}, nil, ""},
	{"capacity", func(s *streams) *cobra.Command {
		return newCapacityCmd(s, func(*capacityOptions) error { return nil })
	}, nil, ""},
	{"validate-profile", func(s *streams) *cobra.Command {
		return newValidateProfileCmd(s, func(*validateProfileOptions) error { return nil })
	}, []string{"x.csv"}, ""},
	{"trace", buildFuzzedTrace, []string{"x.csv"}, "stats"},
	{"trace", buildFuzzedTrace, []string{"x.csv"}, "convert"},
	{"bench", func(s *streams) *cobra.Command { return newBenchCmd(s, func(*benchOptions) error { return nil }) }, nil, ""},
	{"calibrate", func(s *streams) *cobra.Command {
		return newCalibrateCmd(s, func(*calibrateOptions) error { return nil })
	}, []string{"--bench=run.json"}, ""},
}

// requiredFlags are the flags a fuzzed subcommand cannot run without.
var requiredFlags = map[string][]string{"convert": {"--to=azure"}}

// buildFuzzedTrace builds `servesim trace` with runs that do nothing.
func buildFuzzedTrace(s *streams) *cobra.Command {
	return newTraceCmd(s, func(*traceStatsOptions) error { return nil }, func(*traceConvertOptions) error { return nil })
}

// FuzzFlagValues gives one flag of one command a fuzzed value: servesim
// never panics (exit 3), accepts it (exit 0) or refuses it as a usage error
// (exit 2) in one stderr line that names the flag, and writes nothing on
// stdout.
func FuzzFlagValues(f *testing.F) {
	f.Add(uint8(0), "normalize", "abc")
	f.Add(uint8(0), "controller", "fixed:1000")
	f.Add(uint8(0), "stride", "1e3")
	f.Add(uint8(0), "max-active", "2.5")
	f.Add(uint8(0), "plot", "run.bmp")
	f.Add(uint8(0), "summary", "maybe")
	f.Add(uint8(1), "scheduler", `static, "chunked`)
	f.Add(uint8(1), "power-limit", "55,, lots")
	f.Add(uint8(1), "shard", "3/2")
	f.Add(uint8(2), "seed", "-99999999999999999999999")
	f.Add(uint8(2), "requests", "0")
	f.Add(uint8(3), "by-window", "NaN")
	f.Add(uint8(3), "kv-watermark-pct", "Inf")
	f.Add(uint8(4), "format", "yaml")
	f.Add(uint8(0), "trace-columns", "arrival=a,arrival=b")
	f.Add(uint8(6), "trace-filter", "Model=x")
	f.Add(uint8(7), "to", "xml")
	f.Fuzz(func(t *testing.T, which uint8, flag, value string) {
		c := fuzzedCommands[int(which)%len(fuzzedCommands)]
		s, out, errOut := testStreams("")
		probe := c.build(s)
		if c.sub != "" {
			probe, _, _ = probe.Find([]string{c.sub})
		}
		if f := probe.Flags().Lookup(flag); f == nil || f.Name == "help" || strings.HasPrefix(flag, "-") {
			return
		}
		args := append([]string{c.name}, c.sub)
		if c.sub == "" {
			args = args[:1]
		}
		// A required flag is given first, so that its absence is not the
		// error; a fuzzed value of it comes after and wins.
		args = append(args, requiredFlags[c.sub]...)
		args = append(append(args, "--"+flag+"="+value), c.args...)
		code := runCommands(context.Background(), args, s, []subcommand{{c.name, c.build}})
		if out.Len() > 0 {
			t.Fatalf("%q: stdout %q", args, out.String())
		}
		switch code {
		case exitOK:
			if errOut.Len() > 0 {
				t.Fatalf("%q: exit 0 with stderr %q", args, errOut.String())
			}
		case exitUsage:
			msg := errOut.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "servesim: ") {
				t.Fatalf("%q: not one line: %q", args, msg)
			}
			if !strings.Contains(msg, "--"+flag) {
				t.Fatalf("%q: the error does not name --%s: %q", args, flag, msg)
			}
			for _, leak := range []string{"strconv.", "invalid argument", "invalid syntax"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("%q: Go's or pflag's wording: %q", args, msg)
				}
			}
		default:
			t.Fatalf("%q: exit %d: %q", args, code, errOut.String())
		}
	})
}

// TestFuzzedCommandsAreEveryCommand keeps FuzzFlagValues covering every
// subcommand.
func TestFuzzedCommandsAreEveryCommand(t *testing.T) {
	t.Parallel()
	var want, got []string
	for _, sub := range commands() {
		want = append(want, sub.name)
	}
	for _, c := range fuzzedCommands {
		got = append(got, c.name)
	}
	slices.Sort(want)
	slices.Sort(got)
	got = slices.Compact(got) // a command group is fuzzed once per subcommand
	if !slices.Equal(want, got) {
		t.Fatalf("fuzzed %v, commands %v", got, want)
	}
}
