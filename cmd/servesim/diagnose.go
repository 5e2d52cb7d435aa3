package main

import (
	"context"
	"errors"
	"math"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/diagnose"
)

// diagnoseOptions are the diagnose command's arguments and flags.
type diagnoseOptions struct {
	// Files are the request logs, concatenated in order; "-" is stdin and
	// no file means stdin.
	Files []string
	// Window names the snapshot; empty means the first file's base name.
	Window string
	// Diagnosis holds the cost proxy and the rule thresholds.
	Diagnosis diagnose.Options
	// ByWindowS, when positive, splits the logs into windows of this many
	// seconds by arrival time.
	ByWindowS float64
	// Demo prints the reference's before/after remediation report.
	Demo bool
	// Format is "json" or "table".
	Format string
	Output outputOptions
	Plot   plotOptions
}

// flagForOption maps the library's option names to the flags that set them.
var flagForOption = map[string]string{
	diagnose.OptionGPUHourlyCost:        "--gpu-hourly-cost",
	diagnose.OptionEffectiveConcurrency: "--effective-concurrency",
	diagnose.OptionKVWatermarkPct:       "--kv-watermark-pct",
	diagnose.OptionHOLTTFTRatio:         "--hol-ttft-ratio",
	diagnose.OptionColdPrefixHitPct:     "--cold-prefix-hit-pct",
	diagnose.OptionColdTTFTMs:           "--cold-ttft-ms",
}

// newDiagnoseCmd builds `servesim diagnose`; runF, when not nil, replaces
// running the command (tests use it to check flag parsing).
func newDiagnoseCmd(s *streams, runF func(*diagnoseOptions) error) *cobra.Command {
	opts := &diagnoseOptions{Diagnosis: diagnose.DefaultOptions(), Format: "json"}
	cmd := &cobra.Command{
		Use:     "diagnose [FILE...|-]",
		Short:   "Name the likely cause of a p99 latency spike from request logs",
		Long:    help("diagnose"),
		Example: help("diagnose.example"),
		Args:    cobra.ArbitraryArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			return opts.check(cmd)
		}, runF, func(_ context.Context, o *diagnoseOptions) error { return runDiagnose(s, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Window, "window", "", "name of the window in the snapshot (default: the first file's base name, or stdin)")
	f.Float64Var(&opts.Diagnosis.GPUHourlyCostUSD, "gpu-hourly-cost", opts.Diagnosis.GPUHourlyCostUSD, "GPU price in USD per hour for the cost proxy")
	f.Float64Var(&opts.Diagnosis.EffectiveConcurrency, "effective-concurrency", opts.Diagnosis.EffectiveConcurrency, "requests sharing one GPU at a time, for the cost proxy")
	f.Float64Var(&opts.Diagnosis.KVWatermarkPct, "kv-watermark-pct", opts.Diagnosis.KVWatermarkPct, "KV-thrashing rule: peak KV occupancy (percent) at or above which preemptions mean thrashing")
	f.Float64Var(&opts.Diagnosis.HOLTTFTRatio, "hol-ttft-ratio", opts.Diagnosis.HOLTTFTRatio, "head-of-line rule: p99 TTFT above this multiple of p50 TTFT")
	f.Float64Var(&opts.Diagnosis.ColdPrefixHitPct, "cold-prefix-hit-pct", opts.Diagnosis.ColdPrefixHitPct, "cold-prefix rule: prefix-cache hit rate (percent) below which the cache is cold")
	f.Float64Var(&opts.Diagnosis.ColdTTFTMs, "cold-ttft-ms", opts.Diagnosis.ColdTTFTMs, "cold-prefix rule: p99 TTFT (ms) above which a cold cache is the cause")
	f.Float64Var(&opts.ByWindowS, "by-window", 0, "split the logs into windows of this many `SECONDS` by arrival_s or timestamp and diagnose each")
	f.BoolVar(&opts.Demo, "demo", false, "print the reference's before/after remediation report on its controlled workload")
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or table", "json", "table")
	addOutputFlag(cmd, &opts.Output)
	addPlotFlag(cmd, &opts.Plot)
	cmd.MarkFlagsMutuallyExclusive("demo", "by-window")
	cmd.MarkFlagsMutuallyExclusive("demo", "window")
	return cmd
}

// check validates the flag values and their combinations (usage errors).
func (o *diagnoseOptions) check(cmd *cobra.Command) error {
	if o.Demo && len(o.Files) > 0 {
		return usageErrorf("--demo reads no files (got %q)", o.Files[0])
	}
	if cmd.Flags().Changed("by-window") && (!(o.ByWindowS > 0) || math.IsInf(o.ByWindowS, 1)) {
		return usageErrorf("--by-window %v: expected a positive number of seconds", o.ByWindowS)
	}
	if err := o.Diagnosis.Validate(); err != nil {
		var oe *diagnose.OptionError
		if errors.As(err, &oe) {
			return usageErrorf("%s %v: %s", flagForOption[oe.Option], oe.Value, oe.Reason)
		}
		return usageError(err)
	}
	return o.Plot.check()
}

// errDiagnoseNeedsInput is diagnose's answer when it is given no log and
// stdin is a terminal: a hint, instead of silently waiting for typing.
var errDiagnoseNeedsInput = usageErrorf("diagnose: no request log given and stdin is a terminal: " +
	"name the log files (servesim diagnose requests.csv), pipe a log in (... | servesim diagnose), " +
	"give - to type it, or run --demo")

// runDiagnose reads the logs (or runs the demo), diagnoses them and
// writes the result.
func runDiagnose(s *streams, o *diagnoseOptions) error {
	var out diagnose.Outcome
	var err error
	if o.Demo {
		if out, err = diagnose.DemoOutcome(o.Diagnosis); err != nil {
			return internalError(err)
		}
	} else {
		files := o.Files
		if len(files) == 0 {
			if s.InIsTerminal {
				return errDiagnoseNeedsInput
			}
			files = []string{"-"}
		}
		if out, err = diagnose.LogsOutcome(files, s.In, o.Window, o.ByWindowS, o.Diagnosis); err != nil {
			return err
		}
	}
	// The figure and the result appear together or not at all (outputSet):
	// the figure is staged, and renamed into place once the result, written
	// last, is written.
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	if err := o.Plot.stage(set, out.Figure); err != nil {
		return err
	}
	return set.finish(o.Output, o.Format, out.Document, out.Table)
}
