package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/profile"
	"servesim/internal/progress"
	"servesim/internal/trace"
)

// capacityOptions are the parsed flags of `servesim capacity`.
type capacityOptions struct {
	TracePath   string
	Trace       trace.Flags // how to read --trace
	ProfilePath string
	FleetPath   string
	MaxElapsedS float64 // math.Inf(1) when --max-elapsed is not given
	SLO         plant.SLO
	Attainment  float64
	Router      string
	RouterSeed  uint64
	Controllers []string
	Scheduler   string
	MaxReplicas int
	Jobs        int
	Quiet       bool
	Format      string // "json" or "table"
	Output      outputOptions
	// Plant holds the plant flags; each group's profile replaces Profile.
	Plant plant.Plant
	// Engine holds the engine feature flags.
	Engine plantflag.Engine
	capacityShardOptions
}

// newCapacityCmd builds `servesim capacity`. runF replaces the run for tests
// of flag parsing; nil runs the study.
func newCapacityCmd(s *streams, runF func(*capacityOptions) error) *cobra.Command {
	opts := &capacityOptions{Plant: plant.NewPlant(nil), Format: "json"}
	cmd := &cobra.Command{
		Use:   "capacity [flags]",
		Short: "Find the smallest fleet that serves a trace within its SLOs",
		Long: `Find the smallest number of replicas (GPUs of one profile behind a router)
whose fleet meets the SLO attainment target on a trace: the share of all
requests, unfinished ones counted as misses, meeting every SLO. The search
doubles the fleet from 1 replica until it meets the target, bisects down to
a size whose predecessor fails, and checks the size above. At the answer it
compares the clock controllers given and names the one spending the least
energy per output token among those meeting the target.

Prints one JSON document: the answer, every size simulated, any size that
contradicts a monotone attainment, and the controller comparison. When no
fleet of at most --max-replicas replicas meets the target, the document
carries the best attainment reached and the exit code is 1.

With --fleet FILE (a list of groups, as for simulate --fleet) a size of N
runs every group with N times its replicas.

--shard I/N (or auto, in a Slurm job array or Kubernetes Indexed Job)
simulates only shard I's share of the sizes the search doubles through (1,
2, 4, ... up to --max-replicas) and writes one JSON Lines record per size;
a final run given those files with --evaluations simulates only the sizes
they lack, and writes the document a run without them would.`,
		Example: `  servesim capacity --max-elapsed 600 --attainment 0.9
  servesim capacity --trace AzureLLMInferenceTrace_code.csv --profile l4_profile.csv \
      --ttft-slo 2 --tpot-slo 0.2 --attainment 0.99 --controller max,reactive
  servesim capacity --trace code.csv --ttft-slo 2 --max-replicas 256 --shard 1/4 -o cap-1.jsonl
  servesim capacity --trace code.csv --ttft-slo 2 --max-replicas 256 --evaluations 'cap-*.jsonl'`,
		Args: cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error { return opts.check(cmd) },
			runF, func(ctx context.Context, o *capacityOptions) error { return runCapacity(ctx, s, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.TracePath, "trace", "", "trace file: Azure, BurstGPT, Mooncake JSON Lines or a CSV log (--trace-columns), or - for stdin (default: the embedded synthetic trace)")
	addTraceFlags(cmd, &opts.Trace)
	f.StringVar(&opts.ProfilePath, "profile", "", "profile CSV of every replica, or with --fleet of the groups without one (default: the embedded engineering proxy)")
	f.StringVar(&opts.FleetPath, "fleet", "", "fleet `FILE`: a JSON list of groups {name, profile, replicas, scheduler, controller}, a missing field taking the flag's value; size N multiplies every group's replicas")
	f.Float64Var(&opts.MaxElapsedS, "max-elapsed", 0, "keep only requests at most `S` seconds after the first (default: all)")
	plantflag.AddSLO(cmd, &opts.SLO)
	f.Float64Var(&opts.Attainment, "attainment", 0.99, "target SLO attainment `A`, 0 < A <= 1: the share of all requests meeting every SLO")
	f.StringVar(&opts.Router, "router", fleet.RoundRobinName, "round-robin, random, least-outstanding or least-tokens")
	f.Uint64Var(&opts.RouterSeed, "router-seed", fleet.DefaultRouterSeed, "seed of the random router")
	cliflag.AddList(cmd, &opts.Controllers, "controller", []string{"max"}, "controllers", "clock controllers compared at the answer (the search runs the first): max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S]")
	f.StringVar(&opts.Scheduler, "scheduler", "chunked", "static, continuous or chunked")
	f.IntVar(&opts.MaxReplicas, "max-replicas", fleet.DefaultCapacityMaxReplicas, fmt.Sprintf("largest fleet tried, 1 to %d", fleet.MaxReplicas))
	f.IntVar(&opts.Jobs, "jobs", runtime.NumCPU(), "simulations (or replicas) at a time")
	plantflag.AddPlant(cmd, &opts.Plant)
	plantflag.AddEngine(cmd, &opts.Engine)
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&opts.Format, "format", opts.Format, "output format: json or table")
	addOutputFlag(cmd, &opts.Output)
	addCapacityShardFlags(cmd, &opts.capacityShardOptions)
	return cmd
}

// check rejects flag values that cannot mean anything (usage errors).
func (o *capacityOptions) check(cmd *cobra.Command) error {
	if err := plantflag.CheckMaxElapsed(cmd, &o.MaxElapsedS); err != nil {
		return err
	}
	if err := plantflag.CheckSLO(cmd, &o.SLO); err != nil {
		return err
	}
	if !(o.Attainment > 0 && o.Attainment <= 1) {
		return usageErrorf("--attainment %v: expected a share greater than 0 and at most 1", o.Attainment)
	}
	if _, err := fleet.NewRouter(o.Router, o.RouterSeed); err != nil {
		return usageErrorf("--router: %v", err)
	}
	if len(o.Controllers) == 0 {
		return usageErrorf("--controller: expected at least one controller")
	}
	for _, c := range o.Controllers {
		if _, err := plant.NewController(c); err != nil {
			return usageErrorf("--controller: %v", err)
		}
	}
	if _, err := plant.NewScheduler(o.Scheduler); err != nil {
		return usageErrorf("--scheduler: %v", err)
	}
	if o.MaxReplicas < 1 || o.MaxReplicas > fleet.MaxReplicas {
		return usageErrorf("--max-replicas %d: expected 1 to %d", o.MaxReplicas, fleet.MaxReplicas)
	}
	if o.Jobs < 1 {
		return usageErrorf("--jobs %d: expected a positive integer", o.Jobs)
	}
	if o.Format != "json" && o.Format != "table" {
		return usageErrorf("--format %q: expected json or table", o.Format)
	}
	if err := o.Engine.Check(cmd, o.Plant); err != nil {
		return err
	}
	return o.checkShard(o.Format)
}

func runCapacity(ctx context.Context, s *streams, o *capacityOptions) error {
	unit, prov, err := o.unitFleet()
	if err != nil {
		return err
	}
	o.Plant.Profile = unit[0].Profile
	if err := o.Plant.Validate(); err != nil {
		return fmt.Errorf("plant: %w", plantflag.FlagNamed(err))
	}
	var workload plant.Workload
	if o.TracePath == "" {
		workload, err = plant.DefaultTrace(o.MaxElapsedS)
	} else {
		var t *trace.Trace
		if t, err = openTrace(s, o.TracePath, o.MaxElapsedS, &o.Trace); err == nil {
			workload = t.Workload
			o.Engine.UseHashIDs(t.HashIDSource())
		}
	}
	if err != nil {
		return err
	}
	prov.TracePath, prov.TraceSHA256, prov.RequestsLoaded = workload.Source, workload.SHA256, len(workload.Requests)
	prov.ServesimVersion, prov.RequestsSkipped = resolvedVersion(), workload.Skipped

	study := fleet.Capacity{
		Plant: o.Plant, Unit: unit, Router: o.Router, RouterSeed: o.RouterSeed,
		Controllers: o.Controllers, SLO: o.SLO, Engine: o.Engine.Options(),
		Search: fleet.CapacitySearch{Target: o.Attainment, MaxReplicas: o.MaxReplicas, Jobs: o.Jobs},
	}
	if o.Shard != "" {
		return runCapacityShard(ctx, s, o, study, workload)
	}
	summary, err := o.useEvaluations(s, &study, workload)
	if err != nil {
		return err
	}
	var bar *progress.Bar
	if s.ErrIsTerminal && !o.Quiet {
		bar = progress.New(s.Err, "capacity", "simulations", study.MaxEvaluations())
		study.Progress = bar.Increment
	}
	report, err := fleet.RunCapacity(ctx, workload.Requests, study)
	if bar != nil {
		bar.Finish() // before the result reaches a terminal
	}
	if summary != nil {
		summary(report)
	}
	var unreachable *fleet.UnreachableError
	if err != nil && !errors.As(err, &unreachable) {
		return err
	}
	doc := fleet.CapacityDocument{CapacityReport: report, SLO: fleet.SLOUsed(o.SLO, unit), Provenance: prov}
	var werr error
	if o.Format == "table" {
		werr = writeBytes(s, o.Output, []byte(doc.Table()))
	} else {
		werr = writeJSON(s, o.Output, &doc)
	}
	if werr != nil {
		return werr
	}
	if unreachable != nil {
		return inputError{unreachable}
	}
	return nil
}

// unitFleet returns the fleet of size 1: one replica of --profile, or the
// groups of --fleet (whose missing fields take the command line's values,
// one replica by default; a group without a controller takes each of
// --controller in turn).
func (o *capacityOptions) unitFleet() ([]fleet.Group, fleet.CapacityProvenance, error) {
	prof, profilePath := profile.Default(), profile.EmbeddedPath
	if o.ProfilePath != "" {
		var err error
		if prof, err = profile.Load(o.ProfilePath); err != nil {
			return nil, fleet.CapacityProvenance{}, err
		}
		profilePath = o.ProfilePath
	}
	prov := fleet.CapacityProvenance{ProfilePath: profilePath, FleetPath: o.FleetPath}
	if o.FleetPath == "" {
		return []fleet.Group{{Replicas: 1, Profile: prof, ProfilePath: profilePath, Scheduler: o.Scheduler}}, prov, nil
	}
	groups, err := fleet.ReadFile(o.FleetPath, fleet.GroupDefaults{
		Profile: prof, ProfilePath: profilePath, Replicas: 1, Scheduler: o.Scheduler,
	}, profile.Load)
	return groups, prov, err
}
