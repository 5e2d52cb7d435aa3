package main

import (
	"context"
	"io"
	"math/big"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/scenario"
	"servesim/internal/trace"
)

// scenariosOptions are the scenarios command's flags.
type scenariosOptions struct {
	// Requests, Seed and RPS shape the synthetic agent trace.
	Requests int
	Seed     cliflag.BigInt
	RPS      float64
	// TracePath, when set, replays an Azure-format trace instead; each
	// context's first SharedPrefixTokens tokens are the shared prefix.
	TracePath          string
	Trace              trace.Flags // how to read --trace
	SharedPrefixTokens int
	// ProfilesPath, when set, is a JSON list of engine profiles replacing
	// the built-in ones.
	ProfilesPath string
	// Benchmark holds the SLOs and the loop mode.
	Benchmark scenario.BenchmarkOptions
	// Format is "json" or "table".
	Format string
	Output outputOptions
	Plot   plotOptions
}

// newScenariosCmd builds `servesim scenarios`; runF, when not nil, replaces
// running the command (tests use it to check flag parsing).
func newScenariosCmd(s *streams, runF func(*scenariosOptions) error) *cobra.Command {
	opts := &scenariosOptions{
		Requests:  scenario.DefaultAgentRequests,
		Seed:      cliflag.BigInt{Int: big.NewInt(scenario.DefaultAgentSeed)},
		RPS:       scenario.DefaultAgentRPS,
		Benchmark: scenario.DefaultBenchmarkOptions(),
		Format:    "json",
	}
	cmd := &cobra.Command{
		Use:     "scenarios",
		Short:   "Compare the goodput and SLO attainment of engine profiles on a trace",
		Long:    help("scenarios"),
		Example: help("scenarios.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error { return opts.check(cmd) },
			runF, func(_ context.Context, o *scenariosOptions) error { return runScenarios(s, o) }),
	}
	f := cmd.Flags()
	f.IntVar(&opts.Requests, "requests", opts.Requests, "number of requests of the synthetic agent trace")
	f.Var(&opts.Seed, "seed", "seed of the agent trace's random arrivals (any integer, as Python's random.seed)")
	f.Float64Var(&opts.RPS, "rps", opts.RPS, "mean arrival rate of the agent trace, requests per second")
	f.StringVar(&opts.TracePath, "trace", "", "replay this trace file (Azure, BurstGPT, Mooncake JSON Lines or a CSV log; - for stdin) instead of the agent trace")
	addTraceFlags(cmd, &opts.Trace)
	f.IntVar(&opts.SharedPrefixTokens, "shared-prefix-tokens", 0, "with --trace: the first N context tokens of every request are a shared prefix")
	f.StringVar(&opts.ProfilesPath, "profiles", "", "JSON list of engine profiles (the seed's field names) replacing the built-ins; - for stdin")
	f.Float64Var(&opts.Benchmark.TTFTSLOMilliseconds, "ttft-slo-ms", opts.Benchmark.TTFTSLOMilliseconds, "time-to-first-token SLO, ms")
	f.Float64Var(&opts.Benchmark.TPOTSLOMilliseconds, "tpot-slo-ms", opts.Benchmark.TPOTSLOMilliseconds, "time-per-output-token SLO, ms")
	f.BoolVar(&opts.Benchmark.ClosedLoop, "closed-loop", false, "send each request when all earlier ones have completed (hides queueing)")
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or table", "json", "table")
	addOutputFlag(cmd, &opts.Output)
	addPlotFlag(cmd, &opts.Plot)
	return cmd
}

// check validates flag values and combinations (usage errors, exit 2).
func (o *scenariosOptions) check(cmd *cobra.Command) error {
	if err := o.inputs(nil).Check(o.Benchmark, cmd.Flags().Changed); err != nil {
		return err
	}
	return o.Plot.check()
}

// inputs are the trace and profiles the flags name; stdin is what "-"
// reads.
func (o *scenariosOptions) inputs(stdin io.Reader) scenario.Inputs {
	return scenario.Inputs{Requests: o.Requests, Seed: o.Seed.Int, RPS: o.RPS, TracePath: o.TracePath, Trace: o.Trace.Options,
		SharedPrefixTokens: o.SharedPrefixTokens, ProfilesPath: o.ProfilesPath, Stdin: stdin}
}

// runScenarios builds the report and writes it.
func runScenarios(s *streams, o *scenariosOptions) error {
	report, err := o.inputs(s.In).Report(o.Benchmark)
	if err != nil {
		return err
	}
	// The figure and the result appear together or not at all (outputSet).
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	if o.Plot.Path != "" {
		if err := o.Plot.stage(set, report.Figure()); err != nil {
			return err
		}
	}
	return set.finish(o.Output, o.Format, report.Document(), report.Table)
}
