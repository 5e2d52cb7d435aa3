package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"path/filepath"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
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
	changed := cmd.Flags().Changed
	if o.TracePath != "" {
		for _, name := range []string{"requests", "seed", "rps"} {
			if changed(name) {
				return usageErrorf("--%s shapes the synthetic agent trace: it cannot be combined with --trace", name)
			}
		}
	} else if changed("shared-prefix-tokens") {
		return usageErrorf("--shared-prefix-tokens applies to a replayed trace: use it with --trace")
	}
	if o.TracePath == "-" && o.ProfilesPath == "-" {
		return usageErrorf("--trace and --profiles cannot both read stdin")
	}
	switch {
	case o.Requests < 1:
		return usageErrorf("--requests %d: expected at least 1", o.Requests)
	case o.Requests > scenario.MaxAgentRequests:
		return usageErrorf("--requests %d: more than the limit of %d requests of the synthetic agent trace", o.Requests, scenario.MaxAgentRequests)
	case !positiveFinite(o.RPS):
		return usageErrorf("--rps %v: expected a positive, finite rate", o.RPS)
	case !positiveFinite(o.Benchmark.TTFTSLOMilliseconds):
		return usageErrorf("--ttft-slo-ms %v: expected a positive, finite time", o.Benchmark.TTFTSLOMilliseconds)
	case !positiveFinite(o.Benchmark.TPOTSLOMilliseconds):
		return usageErrorf("--tpot-slo-ms %v: expected a positive, finite time", o.Benchmark.TPOTSLOMilliseconds)
	case o.SharedPrefixTokens < 0:
		return usageErrorf("--shared-prefix-tokens %d: expected 0 or more", o.SharedPrefixTokens)
	}
	return o.Plot.check()
}

func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// runScenarios builds the report and writes it.
func runScenarios(s *streams, o *scenariosOptions) error {
	requests, err := o.loadTrace(s)
	if err != nil {
		return err
	}
	profiles := scenario.BuiltinProfiles()
	if o.ProfilesPath != "" {
		in, name, err := openInput(o.ProfilesPath, s)
		if err != nil {
			return fmt.Errorf("profiles %s: %w", name, unwrapPath(err))
		}
		profiles, err = scenario.ParseProfiles(in, name)
		in.Close()
		if err != nil {
			return err
		}
	}
	report, err := scenario.BuildReport(requests, profiles, o.Benchmark)
	if err != nil {
		return err
	}
	if err := o.Plot.write(report.Figure()); err != nil {
		return err
	}
	if o.Format == "table" {
		return writeBytes(s, o.Output, []byte(report.Table()))
	}
	return writeJSON(s, o.Output, report.Document())
}

// loadTrace returns the replayed trace (read by the plant's loader, so it
// has the arrivals simulate sees), or the synthetic agent trace, and sets the
// workload name accordingly.
func (o *scenariosOptions) loadTrace(s *streams) ([]scenario.WorkloadRequest, error) {
	if o.TracePath == "" {
		return scenario.BuildAgentTrace(o.Requests, o.Seed.Int, o.RPS)
	}
	in, name, err := openInput(o.TracePath, s)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, unwrapPath(err))
	}
	defer in.Close()
	o.Benchmark.WorkloadName = filepath.Base(name)
	w, err := trace.Load(in, name, plant.NoElapsedLimit, o.Trace.Options)
	if err != nil {
		return nil, err
	}
	return scenario.FromPlantTrace(w.Requests, o.SharedPrefixTokens)
}

// unwrapPath drops the operation and path of a file error, which the
// message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
