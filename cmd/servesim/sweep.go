package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/profile"
	"servesim/internal/progress"
	"servesim/internal/sweep"
	"servesim/internal/trace"
)

// sweepOptions are the parsed flags of `servesim sweep`.
type sweepOptions struct {
	Profiles    []string
	Traces      []string
	Trace       trace.Flags // how to read the --trace files
	Schedulers  []string
	Controllers []string
	Normalize   []string
	// PlantAxes holds the values of every plant flag given, by flag name.
	PlantAxes      map[string][]string
	MaxElapsedS    float64
	Jobs           int
	Format         string
	TTFTSLOSeconds float64 // 0 means each profile's own SLO
	TPOTSLOSeconds float64
	Shard          string // I/N, auto, or "" for the whole grid
	Resume         string // --resume: a sweep output whose runs are not run again
	Quiet          bool
	Output         outputOptions
	// MaxCells and MaxSteps are --max-cells and --max-steps: the runs of
	// this process and the steps of each.
	MaxCells int
	MaxSteps float64

	axes  []sweep.Axis
	grid  *sweep.Grid // axes with every value parsed, looked up by name
	shard sweep.Shard

	// ExecTimeoutS is --exec-timeout: the patience with exec: controllers.
	ExecTimeoutS float64
	// Engine holds the engine feature flags, the same for every run.
	Engine plantflag.Engine
}

// newSweepCmd builds `servesim sweep`. runF replaces the run for tests of
// flag parsing; nil runs the sweep.
func newSweepCmd(s *streams, runF func(*sweepOptions) error) *cobra.Command {
	opts := &sweepOptions{PlantAxes: map[string][]string{}}
	plantValues := make([][]string, len(plantflag.Params))
	cmd := &cobra.Command{
		Use:   "sweep [flags]",
		Short: "Run simulate over a grid of profiles, traces, schedulers, controllers, loads and plant values",
		Long: `sweep runs one simulate per combination of the axes, in parallel on all cores,
and writes one record per run (its axis values, metrics and summary) in grid
order whatever the parallelism, each as soon as it and the runs before it are
done, then, per trace and profile, the Pareto front of energy per output token
against p95 TTFT and the best configuration under the SLOs.

Every axis is a comma-separated list: --profile and --trace take paths
("embedded" is the built-in default), --scheduler and --controller take the
simulate syntax, --normalize takes utilization targets ("none" keeps the raw
trace), and every plant flag of simulate takes numbers. Each run is identical
to the same servesim simulate --summary.

The best configuration of a trace and profile is, among the runs in which every
request completed and p95 TTFT and p95 TPOT meet the SLOs, the one with the
lowest energy per output token (ties: the earlier run).

With -o FILE the records go to a temporary file beside FILE that becomes FILE
when the sweep completes. SIGINT (Ctrl-C) or SIGTERM starts no further run,
waits up to 10 s for the runs under way (a second signal: not at all), keeps
the records written as FILE.partial and exits 130 or 143; --resume
FILE.partial then runs only the cells it lacks, to the same output as an
uninterrupted sweep. --shard I/N runs a slice of the grid (--shard auto: the
slice a Slurm job array or Kubernetes Indexed Job task is given), and
"servesim sweep merge" joins the slices' outputs.`,
		Example: `  servesim sweep --scheduler static,continuous,chunked --controller max,min,reactive \
      --normalize none,0.5,0.8 --format table
  servesim sweep --trace AzureLLMInferenceTrace_code.csv --power-limit 55,64.8 -o runs.jsonl
  servesim sweep --trace AzureLLMInferenceTrace_code.csv --power-limit 55,64.8 -o runs.jsonl --resume runs.jsonl.partial
  servesim sweep --controller fixed:660,max --shard 1/4 -o part1.jsonl
  servesim sweep merge part*.jsonl -o runs.jsonl`,
		Args: cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error {
			for i, pp := range plantflag.Params {
				if cmd.Flags().Changed(pp.Flag) {
					opts.PlantAxes[pp.Flag] = plantValues[i]
				}
			}
			return opts.check(cmd, s)
		}, runF, func(ctx context.Context, o *sweepOptions) error { return runSweep(ctx, s, o) }),
	}
	f := cmd.Flags()
	cliflag.AddList(cmd, &opts.Profiles, "profile", []string{plantflag.Embedded}, "profile paths", "profile CSVs or bundle folders (embedded: the built-in engineering proxy)")
	cliflag.AddList(cmd, &opts.Traces, "trace", []string{plantflag.Embedded}, "trace paths", "trace files: Azure, BurstGPT, Mooncake JSON Lines or CSV logs (embedded: the built-in synthetic trace)")
	addTraceFlags(cmd, &opts.Trace)
	cliflag.AddList(cmd, &opts.Schedulers, "scheduler", []string{"chunked"}, "schedulers", "schedulers: static, continuous, chunked")
	cliflag.AddList(cmd, &opts.Controllers, "controller", []string{"max"}, "controllers", "clock controllers: max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S], race-to-idle[:MHZ], exec:COMMAND (a child per run), mpc[:KEY=VALUE,...], mpc-clairvoyant[:KEY=VALUE,...] (double-quote a spec holding commas)")
	plantflag.AddExecTimeout(cmd, &opts.ExecTimeoutS)
	cliflag.AddList(cmd, &opts.Normalize, "normalize", []string{"none"}, "utilizations in (0, 1) or none", "offered-utilization targets, 0 < U < 1, or none")
	for i, pp := range plantflag.Params {
		cliflag.AddList(cmd, &plantValues[i], pp.Flag, nil, "values, each "+pp.Expected, pp.Usage+" (comma-separated values; default: simulate's)")
	}
	f.Float64Var(&opts.MaxElapsedS, "max-elapsed", 0, "keep only requests at most `S` seconds after each trace's first (default: all)")
	f.IntVar(&opts.Jobs, "jobs", runtime.GOMAXPROCS(0), "runs at a time; by default as many as the CPUs this process may use")
	f.StringVar(&opts.Format, "format", "jsonl", "output format: jsonl, csv or table")
	f.Float64Var(&opts.TTFTSLOSeconds, "ttft-slo", 0, "p95 TTFT objective in seconds for the best configuration (default: each profile's)")
	f.Float64Var(&opts.TPOTSLOSeconds, "tpot-slo", 0, "p95 TPOT objective in seconds for the best configuration (default: each profile's)")
	f.StringVar(&opts.Shard, "shard", "", "run only the I-th of N contiguous slices of the grid, as `I/N`, or auto: from a Slurm job array or Kubernetes Indexed Job")
	f.StringVar(&opts.Resume, "resume", "", "skip the cells whose records `FILE` (a sweep's output or FILE.partial) holds, and copy them")
	_ = cmd.MarkFlagFilename("resume")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress bar")
	f.IntVar(&opts.MaxCells, "max-cells", sweep.DefaultMaxCells, "refuse a sweep (or shard) of more than `N` runs")
	plantflag.AddMaxSteps(cmd, &opts.MaxSteps)
	plantflag.AddEngine(cmd, &opts.Engine)
	addOutputFlag(cmd, &opts.Output)
	cmd.AddCommand(newSweepMergeCmd(s))
	return cmd
}

// check parses every axis value and builds the grid before anything runs:
// a bad value is a usage error (exit 2).
func (o *sweepOptions) check(cmd *cobra.Command, s *streams) error {
	if err := plantflag.CheckMaxElapsed(cmd, &o.MaxElapsedS); err != nil {
		return err
	}
	if o.Jobs < 1 {
		return usageErrorf("--jobs %d: expected at least 1", o.Jobs)
	}
	if err := plantflag.CheckExecTimeout(o.ExecTimeoutS); err != nil {
		return err
	}
	// The block count is checked by each run, on its --kv-capacity.
	if err := o.Engine.Check(cmd, plant.Plant{}); err != nil {
		return err
	}
	switch o.Format {
	case sweep.FormatJSONL, sweep.FormatCSV, sweep.FormatTable:
	default:
		return usageErrorf("--format %q: expected jsonl, csv or table", o.Format)
	}
	for _, slo := range []struct {
		name string
		v    float64
	}{{"--ttft-slo", o.TTFTSLOSeconds}, {"--tpot-slo", o.TPOTSLOSeconds}} {
		if math.IsNaN(slo.v) || slo.v < 0 || math.IsInf(slo.v, 0) {
			return usageErrorf("%s %v: expected a positive number of seconds", slo.name, slo.v)
		}
	}
	o.axes = []sweep.Axis{
		{Name: sweep.AxisProfile, Values: o.Profiles},
		{Name: sweep.AxisTrace, Values: o.Traces},
		{Name: sweep.AxisScheduler, Values: o.Schedulers},
		{Name: sweep.AxisController, Values: o.Controllers},
		{Name: sweep.AxisNormalize, Values: o.Normalize},
	}
	for _, pp := range plantflag.Params {
		if values, ok := o.PlantAxes[pp.Flag]; ok {
			o.axes = append(o.axes, sweep.Axis{Name: pp.Flag, Values: values})
		}
	}
	for _, a := range o.axes {
		if len(a.Values) == 0 {
			return usageErrorf("--%s: expected at least one value", a.Name)
		}
	}
	var err error
	if o.grid, err = sweep.NewGrid(o.axes, parseAxisValue); err != nil {
		return usageError{err}
	}
	if err := o.checkPlantValues(); err != nil {
		return usageError{err}
	}
	if err := o.checkWork(); err != nil {
		return err
	}
	i, n := 1, 1
	switch o.Shard {
	case "":
	case "auto":
		i, n, err = sweep.ShardFromEnv(s.env)
	default:
		i, n, err = sweep.ParseShard(o.Shard)
	}
	if err != nil {
		return usageError{err}
	}
	if o.Resume != "" && o.Format != sweep.FormatJSONL {
		return usageErrorf("--resume reads and writes JSON Lines: expected --format jsonl, not %s", o.Format)
	}
	if o.MaxCells < 1 {
		return usageErrorf("--max-cells %d: expected at least 1", o.MaxCells)
	}
	if o.shard, err = sweep.Plan(o.axes, i, n, o.MaxCells); err != nil {
		return sweepLimitError(o.axes, err)
	}
	return nil
}

// checkWork refuses a sweep whose longest run (the largest --max-sim-time
// over the smallest --time-step) could take more steps than --max-steps.
// It runs after checkPlantValues, so every value parses and is positive.
func (o *sweepOptions) checkWork() error {
	p := plant.NewPlant(nil)
	extreme := func(flag string, field *float64, pick func(a, b float64) float64) {
		for i, v := range o.grid.Values(flag) {
			x := v.(float64)
			if i == 0 {
				*field = x
			}
			*field = pick(*field, x)
		}
	}
	extreme("time-step", &p.TimeStepS, math.Min)
	extreme("max-sim-time", &p.MaxSimulationTimeS, math.Max)
	return plantflag.CheckWork(p, plant.Options{Summary: true, MaxSteps: o.MaxSteps}, false)
}

// sweepLimitError turns a *sweep.LimitError into a usage error naming the
// axes' flags, their lengths and --max-cells. Other errors pass as they
// are.
func sweepLimitError(axes []sweep.Axis, err error) error {
	var le *sweep.LimitError
	if !errors.As(err, &le) {
		return err
	}
	names := make([]string, len(axes))
	for i, a := range axes {
		names[i] = "--" + a.Name
	}
	grid := fmt.Sprintf("the grid of %s = %s", strings.Join(names, " x "), le.Grid())
	switch {
	case le.Max == 0:
		return usageErrorf("sweep: %s: more than a sweep can index (%.2g)", grid, float64(math.MaxInt))
	case le.ShardCount > 1:
		return usageErrorf("sweep: shard %d/%d of %s holds %d runs: more than --max-cells %d (raise --max-cells or use more shards)",
			le.Shard, le.ShardCount, grid, le.ShardCells, le.Max)
	}
	return usageErrorf("sweep: %s: more than --max-cells %d (raise --max-cells or run it in shards with --shard I/N)", grid, le.Max)
}

// parseAxisValue parses one value of a named axis, once: a path (profile,
// trace), a scheduler name or controller spec that builds, a utilization
// (normalize: 0 for none) or a plant flag's number.
func parseAxisValue(axis, v string) (any, error) {
	switch axis {
	case sweep.AxisProfile, sweep.AxisTrace:
		if v == "" {
			return nil, fmt.Errorf("--%s: expected a path or %s, got an empty value", axis, plantflag.Embedded)
		}
		return v, nil
	case sweep.AxisScheduler:
		if _, err := plant.NewScheduler(v); err != nil {
			return nil, fmt.Errorf("--scheduler: %w", err)
		}
		return v, nil
	case sweep.AxisController:
		if _, err := plant.NewController(v); err != nil {
			return nil, fmt.Errorf("--controller: %w", err)
		}
		return v, nil
	case sweep.AxisNormalize:
		return parseNormalize(v)
	}
	pp, _ := plantflag.ByFlag(axis)
	x, err := pp.ParseValue(v)
	if err != nil {
		return nil, fmt.Errorf("--%s %w", axis, err)
	}
	return x, nil
}

// parseNormalize parses a --normalize axis value: 0 (none) or 0 < U < 1.
func parseNormalize(v string) (float64, error) {
	if v == "none" {
		return 0, nil
	}
	u, err := strconv.ParseFloat(v, 64)
	if err != nil || !(u > 0 && u < 1) {
		return 0, fmt.Errorf("--normalize %q: expected none or a utilization strictly between 0 and 1", v)
	}
	return u, nil
}

// checkPlantValues validates every plant value given against the plant's
// rules (with the other parameters at their defaults), so an impossible
// value fails before anything runs.
func (o *sweepOptions) checkPlantValues() error {
	for _, pp := range plantflag.Params {
		for k, x := range o.grid.Values(pp.Flag) {
			p := plant.NewPlant(profile.Default())
			_ = pp.Set(&p, x.(float64))
			if err := p.Validate(); err != nil {
				return fmt.Errorf("--%s %s: %w", pp.Flag, o.PlantAxes[pp.Flag][k], err)
			}
		}
	}
	return nil
}

// sweepInputs are the profiles and traces of a sweep, each loaded once and
// shared by the runs; a path that fails to load fails only its runs.
type sweepInputs struct {
	profiles     map[string]*profile.Profile
	profileErrs  map[string]error
	workloads    map[string]plant.Workload
	workloadErrs map[string]error
	// hashIDs are the block hash ids of the Mooncake traces.
	hashIDs map[string]plant.HashIDSource
}

func loadSweepInputs(s *streams, o *sweepOptions) *sweepInputs {
	in := &sweepInputs{
		profiles: map[string]*profile.Profile{}, profileErrs: map[string]error{},
		workloads: map[string]plant.Workload{}, workloadErrs: map[string]error{},
		hashIDs: map[string]plant.HashIDSource{},
	}
	for _, path := range o.Profiles {
		if path == plantflag.Embedded {
			in.profiles[path] = profile.Default()
		} else if p, err := profile.Load(profile.ResolvePath(path)); err != nil {
			in.profileErrs[path] = err
		} else {
			in.profiles[path] = p
		}
	}
	for _, path := range o.Traces {
		var w plant.Workload
		var err error
		if path == plantflag.Embedded {
			w, err = plant.DefaultTrace(o.MaxElapsedS)
		} else {
			var t *trace.Trace
			if t, err = openTrace(s, path, o.MaxElapsedS, &o.Trace); err == nil {
				w = t.Workload
				if ids := t.HashIDSource(); ids != nil {
					in.hashIDs[path] = ids
				}
			}
		}
		if err != nil {
			in.workloadErrs[path] = err
		} else {
			in.workloads[path] = w
		}
	}
	return in
}

// sweepRun is the outcome of one cell.
type sweepRun struct {
	report *plant.Report
	prof   *profile.Profile
	err    error
}

// runCell runs the simulate configuration of one cell; an exec: controller
// runs a child of its own.
func (o *sweepOptions) runCell(ctx context.Context, s *streams, in *sweepInputs, c sweep.Cell) sweepRun {
	profilePath := o.grid.Parsed(c, sweep.AxisProfile).(string)
	tracePath := o.grid.Parsed(c, sweep.AxisTrace).(string)
	if err := in.profileErrs[profilePath]; err != nil {
		return sweepRun{err: err}
	}
	if err := in.workloadErrs[tracePath]; err != nil {
		return sweepRun{err: err}
	}
	prof := in.profiles[profilePath]
	p := plant.NewPlant(prof)
	for _, pp := range plantflag.Params {
		if o.grid.Has(pp.Flag) {
			_ = pp.Set(&p, o.grid.Parsed(c, pp.Flag).(float64))
		}
	}
	if err := p.Validate(); err != nil {
		return sweepRun{prof: prof, err: fmt.Errorf("plant: %w", plantflag.FlagNamed(err))}
	}
	sched, _ := plant.NewScheduler(o.grid.Parsed(c, sweep.AxisScheduler).(string))
	ctrl, _ := plant.NewControllerWith(o.grid.Parsed(c, sweep.AxisController).(string), plantflag.ControllerOptions(o.ExecTimeoutS, s.Err))
	normalize := o.grid.Parsed(c, sweep.AxisNormalize).(float64)
	recordedPath := profilePath
	if profilePath == plantflag.Embedded {
		recordedPath = profile.EmbeddedPath
	}
	report, err := plant.RunContext(ctx, in.workloads[tracePath], plant.Config{
		Plant:       p,
		Scheduler:   sched,
		Controller:  ctrl,
		Normalize:   normalize,
		Options:     plant.Options{Summary: true, MaxSteps: o.MaxSteps, Engine: o.Engine.OptionsFor(in.hashIDs[tracePath])},
		ProfilePath: recordedPath,
		Version:     resolvedVersion(),
	})
	return sweepRun{report: report, prof: prof, err: err}
}

// sweepProgress draws a progress bar on stderr while a sweep runs, only
// when stderr is a terminal and --quiet is not given; otherwise it does
// nothing.
type sweepProgress struct{ bar *progress.Bar }

func newSweepProgress(s *streams, o *sweepOptions, runs int) sweepProgress {
	if !s.ErrIsTerminal || o.Quiet {
		return sweepProgress{}
	}
	return sweepProgress{progress.New(s.Err, "sweep", "runs", runs)}
}

func (p sweepProgress) increment() {
	if p.bar != nil {
		p.bar.Increment()
	}
}

// finish erases the bar, also after a run that stopped early.
func (p sweepProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// runSweep runs the cells and writes each record as soon as it and the
// records before it are done, to stdout or -o (through writeResult, so a
// regular file appears only when the sweep completes). An interrupted
// sweep keeps what it wrote as FILE.partial.
// A cancelled ctx ends the runs under way and those after them, whose
// records carry its error; servesim's own SIGINT and SIGTERM are taken
// over by watchSignals while the sweep runs, to finish the runs under way.
func runSweep(ctx context.Context, s *streams, o *sweepOptions) error {
	interrupt := watchSignals(sweepGrace)
	defer interrupt.release()
	inputs := loadSweepInputs(s, o)
	grid := newSweepGrid(o, inputs)
	var resumed *sweep.RecordIndex
	toRun := o.shard.Len()
	if o.Resume != "" {
		var err error
		if resumed, err = o.readResume(s.Err, grid, inputs); err != nil {
			return inputError{err}
		}
		defer resumed.Close()
		toRun -= len(resumed.Refs)
	}
	var written, failed int
	err := writeResult(s, o.Output, func(out io.Writer) error {
		w, err := sweep.NewWriter(out, o.Format, o.grid, plantflag.AxisKey, grid.digest, grid.cells, resumed)
		if err != nil {
			return err
		}
		progress := newSweepProgress(s, o, toRun)
		err = sweep.Run(o.shard.Without(resumed), o.Jobs, interrupt.stop(), func(c sweep.Cell) sweepRun {
			return o.runCell(ctx, s, inputs, c)
		}, func(c sweep.Cell, r sweepRun) error {
			progress.increment()
			return w.Add(newSweepRecord(o, inputs, c, r))
		})
		progress.finish()
		stopped := errors.Is(err, sweep.ErrStopped)
		if err == nil || stopped {
			err = w.Finish(!stopped)
		}
		written, failed = w.Written, w.Failed
		if err != nil || !stopped {
			return err
		}
		sig, _ := interrupt.signal().(syscall.Signal)
		stop := interruptedError{sig: sig, written: written, total: o.shard.Len(), where: "stdout"}
		if o.Output.Path != "" && o.Output.Path != "-" {
			if stop.where, stop.resumable, err = keepPartial(out, o.Output.Path); err != nil {
				return err
			}
			stop.resumable = stop.resumable && o.Format == sweep.FormatJSONL
		}
		return stop
	})
	var stop interruptedError
	if errors.As(err, &stop) {
		return stop // not "-o FILE: sweep interrupted"
	}
	if err != nil {
		return encodingFailure(err)
	}
	if failed > 0 {
		return inputError{fmt.Errorf("%d of %d runs failed (see their records' error)", failed, written)}
	}
	return nil
}
