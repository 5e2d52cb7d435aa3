package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/capacity"
	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/outfile"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
)

// capacityOptions are the parsed flags of `servesim capacity`: the
// study's, and how to report it.
type capacityOptions struct {
	capacity.Config
	Quiet  bool
	Format string // "json" or "table"
	Output outputOptions
	capacity.ShardFlags
	// Resume is --resume: capacity.ResumeAuto, or "" for none.
	Resume string
	// OutPlan is --out-plan: the file the plan of --over-time is written
	// to as a schedule (start_s,replicas), or with --disaggregated the
	// name the pools' schedules are named after (poolPlanPath); empty for
	// none.
	OutPlan string
}

// newCapacityCmd builds `servesim capacity`. runF replaces the run for tests
// of flag parsing; nil runs the study.
func newCapacityCmd(s *streams, runF func(*capacityOptions) error) *cobra.Command {
	opts := &capacityOptions{Config: capacity.Config{Plant: plant.NewPlant(nil)}, Format: "json"}
	cmd := &cobra.Command{
		Use:     "capacity [flags]",
		Short:   "Find the smallest fleet that serves a trace within its SLOs",
		Long:    help("capacity"),
		Example: help("capacity.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error { return opts.check(cmd, s) },
			runF, func(ctx context.Context, o *capacityOptions) error { return runCapacity(ctx, s, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.TracePath, "trace", "", "trace file: Azure, BurstGPT, Mooncake JSON Lines or a CSV log (--trace-columns), or - for stdin (default: the embedded synthetic trace)")
	addTraceFlags(cmd, &opts.Trace)
	f.StringVar(&opts.ProfilePath, "profile", "", "profile CSV or bundle folder holding l4_profile.csv of every replica, or with --fleet of the groups without one (default: the embedded engineering proxy)")
	f.StringVar(&opts.FleetPath, "fleet", "", "fleet `FILE`: a JSON list of groups {name, profile, replicas, scheduler, controller, role}, a missing field taking the flag's value; size N multiplies every group's replicas (with --disaggregated: a prefill group then a decode group, the pools)")
	f.Float64Var(&opts.MaxElapsedS, "max-elapsed", 0, "keep only requests at most `S` seconds after the first (default: all)")
	plantflag.AddSLO(cmd, &opts.SLO)
	f.Float64Var(&opts.Attainment, "attainment", 0.99, "target SLO attainment `A`, 0 < A <= 1: the share of all requests meeting every SLO")
	f.StringVar(&opts.Router, "router", fleet.RoundRobinName, "how the fleet routes requests: "+strings.Join(fleet.RouterNames, ", "))
	f.Uint64Var(&opts.RouterSeed, "router-seed", fleet.DefaultRouterSeed, "seed of the random router")
	cliflag.AddList(cmd, &opts.Controllers, "controller", []string{"max"}, "controllers", "clock controllers compared at the answer (the search runs the first): max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S], race-to-idle[:MHZ], exec:COMMAND (a child per replica), mpc[:KEY=VALUE,...] (double-quote a spec holding commas)")
	plantflag.AddExecTimeout(cmd, &opts.ExecTimeoutS)
	f.StringVar(&opts.Scheduler, "scheduler", "chunked", "static, continuous or chunked")
	f.IntVar(&opts.MaxReplicas, "max-replicas", capacity.DefaultMaxReplicas, fmt.Sprintf("largest fleet tried, 1 to %d", fleet.MaxReplicas))
	f.IntVar(&opts.Jobs, "jobs", 0, "simulations (or replicas) at a time (0, the default: all cores)")
	plantflag.AddPlant(cmd, &opts.Plant)
	plantflag.AddEngine(cmd, &opts.Engine)
	plantflag.AddService(cmd, &opts.Service)
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress bar")
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or table", "json", "table")
	addOutputFlag(cmd, &opts.Output)
	f.StringVar(&opts.Shard, "shard", "", "evaluate only shard `I/N` of the search's doubling sizes (auto: from a Slurm job array or Kubernetes Indexed Job), one JSON Lines record per size")
	cliflag.AddList(cmd, &opts.Evaluations, "evaluations", nil, "files", "take the sizes the records of these capacity --shard outputs hold (files or glob patterns) as simulated")
	f.StringVar(&opts.Resume, "resume", "", "with --shard: auto, to copy the sizes an earlier run of the shard left in -o FILE or FILE.partial, if of this study, rather than simulate them (a job's restart)")
	f.Float64Var(&opts.OverTimeS, "over-time", 0, "also plan the fleet over time: per window of `S` seconds of arrivals, the smallest fleet meeting the target on that window alone (with --disaggregated, the fewest prefill and decode replicas too; a lower bound for an autoscaler), beside the static answer")
	f.StringVar(&opts.OutPlan, "out-plan", "", "with --over-time: also write the plan to `FILE` as a schedule, CSV start_s,replicas, one row per window (what simulate --autoscale schedule:FILE and oracle:FILE read); with --disaggregated, one per pool instead, named with .prefill and .decode before FILE's extension (plan.prefill.csv, plan.decode.csv), what a fleet file's prefill and decode groups read; all written with the result, or none")
	f.BoolVar(&opts.StopLost, "stop-lost", false, "stop simulating a fleet size once the requests it has lost put --attainment out of reach: its evaluation says stopped_early, its numbers null; the answer is the same, and an undersized fleet costs a fraction of its run (--over-time always stops them)")
	f.BoolVar(&opts.Disaggregated, "disaggregated", false, "also find the fewest GPUs as a disaggregated fleet: prefill and decode replicas searched together (the least energy among splits of as many), and the answer under each pair of --controller, one per pool; --fleet may give the pools as a prefill and a decode group")
	addLinkFlags(cmd, &opts.Link)
	_ = cmd.MarkFlagFilename("evaluations")
	_ = cmd.MarkFlagFilename("out-plan", "csv")
	return cmd
}

// check rejects flag values that cannot mean anything (usage errors).
func (o *capacityOptions) check(cmd *cobra.Command, s *streams) error {
	if err := plantflag.CheckMaxElapsed(cmd, &o.MaxElapsedS); err != nil {
		return err
	}
	if err := plantflag.CheckSLO(cmd, &o.SLO); err != nil {
		return err
	}
	if err := o.checkOverTime(cmd); err != nil {
		return err
	}
	if err := o.Config.Check(); err != nil {
		return err
	}
	if err := o.Service.Check(cmd.Flags().Changed); err != nil {
		return err
	}
	if err := o.Engine.Check(cmd.Flags().Changed, o.Plant); err != nil {
		return err
	}
	if err := o.ShardFlags.Check(o.Format, s.env); err != nil {
		return err
	}
	switch {
	case o.Resume == "":
	case o.Resume != capacity.ResumeAuto:
		return usageErrorf("--resume %q: a capacity shard takes --resume auto (what an earlier run of it left behind -o FILE)", o.Resume)
	case o.Shard == "":
		return usageErrorf("--resume auto takes up a shard's records: it needs --shard (the final run reads them with --evaluations)")
	case o.Output.Path == "" || o.Output.Path == "-":
		return usageErrorf("--resume auto takes up what an earlier run left behind -o FILE: give -o FILE")
	}
	return nil
}

// checkOverTime checks --over-time and --out-plan (usage errors): a
// positive finite window, not with --shard (a shard evaluates the static
// search's sizes only), and a plan file only with a window, not -o's
// file, nor with --disaggregated one of the pools' plans (pathFlags
// refuses standard output).
func (o *capacityOptions) checkOverTime(cmd *cobra.Command) error {
	if cmd.Flags().Changed("over-time") && !(o.OverTimeS > 0 && !math.IsInf(o.OverTimeS, 1)) {
		return usageErrorf("--over-time %v: expected a positive finite number of seconds", o.OverTimeS)
	}
	switch {
	case o.Disaggregated && o.Shard != "":
		return usageErrorf("--disaggregated runs a whole study: --shard evaluates a share of the mixed search's sizes only")
	case o.OverTimeS > 0 && o.Shard != "":
		return usageErrorf("--over-time plans a whole study; --shard evaluates a share of the static search's sizes only: run the shards without --over-time, then --over-time with --evaluations")
	case o.OutPlan == "":
	case o.OverTimeS == 0:
		return usageErrorf("--out-plan %s: writes the plan of --over-time: give --over-time S", o.OutPlan)
	case o.Output.Path == "" || o.Output.Path == "-":
	case !o.Disaggregated && outfile.SameFile(o.Output.Path, o.OutPlan):
		return usageErrorf("--out-plan %s: -o writes that file already", o.OutPlan)
	case o.Disaggregated:
		for _, pool := range []string{fleet.RolePrefill, fleet.RoleDecode} {
			if path := poolPlanPath(o.OutPlan, pool); outfile.SameFile(o.Output.Path, path) {
				return usageErrorf("--out-plan %s: with --disaggregated it writes the %s pool's plan to %s, which -o writes already", o.OutPlan, pool, path)
			}
		}
	}
	return nil
}

func runCapacity(ctx context.Context, s *streams, o *capacityOptions) error {
	o.Stdin, o.Stderr, o.Version = s.In, s.Err, resolvedVersion()
	study, err := capacity.Load(o.Config)
	if err != nil {
		return err
	}
	progress := capacity.Progress{Stderr: flagWarner(s.Err), Bar: s.ErrIsTerminal && !o.Quiet, Quiet: o.Quiet}
	if o.Shard != "" {
		return study.RunShard(ctx, o.ShardFlags.I, o.ShardFlags.N, o.Output.Path, o.Resume, progress, func(write func(io.Writer) error) error {
			return encodingFailure(writeResult(s, o.Output, write))
		})
	}
	if o.OverTimeS > 0 {
		return runCapacityOverTime(ctx, s, o, study, progress)
	}
	doc, err := study.Run(ctx, o.Evaluations, progress)
	if doc == nil {
		return err
	}
	if werr := writeDocument(s, o.Output, o.Format, doc, doc.Table); werr != nil {
		return werr
	}
	return err // a *capacity.UnreachableError after its document: bad input
}

// runCapacityOverTime runs a study over time and writes its document and,
// with --out-plan, its schedule (with --disaggregated, one per pool): all
// or none (outputSet), the document last. A study or windows no size serves still write both, and exit 1.
func runCapacityOverTime(ctx context.Context, s *streams, o *capacityOptions, study *capacity.Study, progress capacity.Progress) error {
	doc, err := study.RunOverTime(ctx, o.Evaluations, progress)
	if doc == nil {
		return err
	}
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	for _, plan := range o.planFiles(doc) {
		if werr := set.target(plan.flag, plan.path, chunksWriter([][]byte{plan.data})); werr != nil {
			return werr
		}
	}
	if werr := set.finish(o.Output, o.Format, doc, doc.Table); werr != nil {
		return werr
	}
	return err // an unreachable static study or windows, after the outputs: bad input
}

// planFile is a schedule file --out-plan writes.
type planFile struct {
	flag, path string // the flag naming it in messages, and its path
	data       []byte
}

// planFiles are the schedule files of --out-plan: the plan's, or with
// --disaggregated the prefill pool's and the decode pool's
// (poolPlanPath); none without --out-plan.
func (o *capacityOptions) planFiles(doc *capacity.OverTimeDocument) []planFile {
	switch {
	case o.OutPlan == "":
		return nil
	case doc.Disaggregated == nil:
		return []planFile{{"--out-plan", o.OutPlan, doc.ScheduleCSV()}}
	}
	prefill, decode := doc.Disaggregated.Plan.ScheduleCSVs()
	return []planFile{
		{"--out-plan's prefill plan", poolPlanPath(o.OutPlan, fleet.RolePrefill), prefill},
		{"--out-plan's decode plan", poolPlanPath(o.OutPlan, fleet.RoleDecode), decode},
	}
}

// poolPlanPath is the file of pool's plan (prefill or decode) that
// --out-plan path names with --disaggregated: path with "."+pool before
// its extension (plan.csv: plan.prefill.csv), or after a name without one.
func poolPlanPath(path, pool string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + pool + ext
}
