package main

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
	"servesim/internal/sweeprun"
)

// sweepOptions are the parsed flags of `servesim sweep`: the sweep's, and
// how to run it and write its records.
type sweepOptions struct {
	sweeprun.Config
	Jobs   int
	Format string
	Shard  string // I/N, auto, or "" for the whole grid
	Resume string // --resume: a sweep output whose runs are not run again
	Quiet  bool
	Output outputOptions
	// MaxCells is --max-cells: the runs of this process.
	MaxCells int

	sweep *sweeprun.Sweep // the grid, every value parsed, and the shard
}

// newSweepCmd builds `servesim sweep`. runF replaces the run for tests of
// flag parsing; nil runs the sweep.
func newSweepCmd(s *streams, runF func(*sweepOptions) error) *cobra.Command {
	opts := &sweepOptions{Config: sweeprun.Config{Name: flagName}}
	var plantAxes func() map[string][]string
	cmd := &cobra.Command{
		Use:     "sweep [flags]",
		Short:   "Run simulate over a grid of profiles, traces, schedulers, controllers, loads and plant values",
		Long:    help("sweep"),
		Example: help("sweep.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error {
			opts.PlantAxes = plantAxes()
			return opts.check(cmd, s)
		}, runF, func(ctx context.Context, o *sweepOptions) error { return runSweep(ctx, s, o) }),
	}
	f := cmd.Flags()
	cliflag.AddList(cmd, &opts.Profiles, "profile", []string{runparams.Embedded}, "profile paths", "profile CSVs or bundle folders (embedded: the built-in engineering proxy)")
	cliflag.AddList(cmd, &opts.Traces, "trace", []string{runparams.Embedded}, "trace paths", "trace files: Azure, BurstGPT, Mooncake JSON Lines or CSV logs (embedded: the built-in synthetic trace)")
	addTraceFlags(cmd, &opts.Trace)
	cliflag.AddList(cmd, &opts.Schedulers, "scheduler", []string{"chunked"}, "schedulers", "schedulers: static, continuous, chunked")
	cliflag.AddList(cmd, &opts.Controllers, "controller", []string{"max"}, "controllers", "clock controllers: max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S], race-to-idle[:MHZ], exec:COMMAND (a child per run), mpc[:KEY=VALUE,...], mpc-clairvoyant[:KEY=VALUE,...] (double-quote a spec holding commas)")
	plantflag.AddExecTimeout(cmd, &opts.ExecTimeoutS)
	cliflag.AddList(cmd, &opts.Normalize, "normalize", []string{"none"}, "utilizations in (0, 1) or none", "offered-utilization targets, 0 < U < 1, or none")
	plantAxes = plantflag.AddPlantAxes(cmd)
	addSweepServiceFlags(cmd, &opts.Service, &opts.ServiceModels)
	f.Float64Var(&opts.MaxElapsedS, "max-elapsed", 0, "keep only requests at most `S` seconds after each trace's first (default: all)")
	f.IntVar(&opts.Jobs, "jobs", 0, "runs at a time (0, the default: all cores, as many as the CPUs this process may use)")
	cliflag.AddChoice(cmd, &opts.Format, "format", sweep.FormatJSONL, "output format: jsonl, csv or table", sweep.FormatJSONL, sweep.FormatCSV, sweep.FormatTable)
	plantflag.AddSLO(cmd, &opts.SLO)
	f.StringVar(&opts.Shard, "shard", "", "run only the I-th of N contiguous slices of the grid, as `I/N`, or auto: from a Slurm job array or Kubernetes Indexed Job")
	f.StringVar(&opts.Resume, "resume", "", "skip the cells whose records `FILE` (a sweep's output or FILE.partial) holds, and copy them; auto: those -o FILE or FILE.partial holds, if of this grid and shard (a job's restart)")
	_ = cmd.MarkFlagFilename("resume")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress bar")
	f.IntVar(&opts.MaxCells, "max-cells", sweep.DefaultMaxCells, "refuse a sweep (or shard) of more than `N` runs")
	plantflag.AddMaxSteps(cmd, &opts.MaxSteps)
	plantflag.AddEngine(cmd, &opts.Engine)
	addOutputFlag(cmd, &opts.Output)
	cmd.AddCommand(newSweepMergeCmd(s))
	return cmd
}

// addSweepServiceFlags defines simulate's service flags on cmd
// (plantflag.AddService) with --service-model a comma-separated list, an
// axis of the sweep stored in models; the card and limit flags take one
// value for the whole sweep.
func addSweepServiceFlags(cmd *cobra.Command, o *runparams.Service, models *[]string) {
	plantflag.AddService(cmd, o)
	f := cmd.Flags()
	var axis cobra.Command // a list flag, put in place of AddService's string
	cliflag.AddList(&axis, models, "service-model", []string{plant.ServiceReference}, "service models",
		"service models: "+strings.Join(plant.ServiceModelNames, ", ")+" (reference: one token budget per phase shared by the running requests, the specification; "+
			"batched: vLLM V1 iterations timed from --gpu and --model); a sweep of both, or of batched, records each run's service_model")
	*f.Lookup("service-model") = *axis.Flags().Lookup("service-model")
	for _, name := range []string{"gpu", "model", "max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization"} {
		f.Lookup(name).Usage += " (one value: the same for every batched run of the sweep)"
	}
}

// check parses every axis value and plans the shard before anything runs.
func (o *sweepOptions) check(cmd *cobra.Command, s *streams) error {
	if err := plantflag.CheckMaxElapsed(cmd, &o.MaxElapsedS); err != nil {
		return err
	}
	if err := plantflag.CheckSLO(cmd, &o.SLO); err != nil {
		return err
	}
	if o.Jobs < 0 {
		return usageErrorf("--jobs %d: expected a nonnegative number (0: all cores)", o.Jobs)
	}
	if err := runparams.CheckExecTimeout(o.ExecTimeoutS); err != nil {
		return err
	}
	// The block count is checked by each run, on its --kv-capacity.
	if err := o.Engine.Check(cmd.Flags().Changed, plant.Plant{}); err != nil {
		return err
	}
	o.Stdin, o.Version = s.In, resolvedVersion()
	var err error
	if o.sweep, err = sweeprun.New(o.Config); err != nil {
		return err
	}
	// The card flags are checked as simulate checks them with the batched
	// model, when the axis has it, else the reference's.
	o.Service.Kind = plant.ServiceReference
	if slices.Contains(o.ServiceModels, plant.ServiceBatched) {
		o.Service.Kind = plant.ServiceBatched
	}
	if err := o.Service.Check(cmd.Flags().Changed); err != nil {
		return err
	}
	i, n, err := sweep.ParseShardFlag(o.Shard, s.env)
	if err != nil {
		return err
	}
	if o.Resume != "" && o.Format != sweep.FormatJSONL {
		return usageErrorf("--resume reads and writes JSON Lines: expected --format jsonl, not %s", o.Format)
	}
	if o.Resume == sweeprun.ResumeAuto && (o.Output.Path == "" || o.Output.Path == "-") {
		return usageErrorf("--resume auto takes up what an earlier run left behind -o FILE: give -o FILE (a file named auto: --resume ./auto)")
	}
	if o.MaxCells < 1 {
		return usageErrorf("--max-cells %d: expected at least 1", o.MaxCells)
	}
	return o.sweep.Plan(i, n, o.MaxCells)
}

// runSweep runs the sweep, writing each record as soon as it and the
// records before it are done, to stdout or -o (through writeResult, so a
// regular file appears only when the sweep completes; an interrupted sweep
// keeps what it wrote as FILE.partial).
func runSweep(ctx context.Context, s *streams, o *sweepOptions) error {
	jobs := o.Jobs
	if jobs == 0 {
		jobs = runtime.GOMAXPROCS(0) // all cores, as simulate's --jobs 0
	}
	out := sweeprun.Output{Format: o.Format, Jobs: jobs, Resume: o.Resume, Path: o.Output.Path, Stderr: flagWarner(s.Err), Progress: s.ErrIsTerminal && !o.Quiet}
	return o.sweep.Run(ctx, out, func(write func(io.Writer) error) error {
		return encodingFailure(writeResult(s, o.Output, write))
	})
}

// newSweepMergeCmd builds `servesim sweep merge`.
func newSweepMergeCmd(s *streams) *cobra.Command {
	opts := &sweepMergeOptions{}
	cmd := &cobra.Command{
		Use:     "merge FILE...",
		Short:   "Join the outputs of a sweep's shards into the output of the whole grid",
		Long:    help("sweep-merge"),
		Example: help("sweep-merge.example"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("sweep merge: expected the sweep output files to join")
			}
			return nil
		},
		RunE: checkThenRun(opts, func(_ *cobra.Command, files []string) error {
			opts.Files = files
			return cliflag.CheckPathArgs("sweep merge", files, pathFlags["resume"])
		}, nil, func(_ context.Context, o *sweepMergeOptions) error { return mergeSweep(s, o.Output, o.Files) }),
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// sweepMergeOptions are the arguments and flags of `servesim sweep merge`:
// the sweep outputs to join (read back where their records lie, as
// --resume reads one) and where the result goes.
type sweepMergeOptions struct {
	Files  []string
	Output outputOptions
}

// mergeSweep joins the records of files into the output of their grid.
func mergeSweep(s *streams, out outputOptions, files []string) error {
	x, err := sweep.OpenMerge(files, s.Err)
	if err != nil {
		return err
	}
	defer x.Close()
	failed := 0
	var first sweep.FirstFailure
	err = writeResult(s, out, func(w io.Writer) (err error) {
		failed, first, err = x.WriteMerged(w)
		return err
	})
	if err != nil {
		return encodingFailure(err)
	}
	return sweep.FailedRuns(failed, len(x.Refs), first, "")
}
