package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/simrun"
)

// formatVLLMBench is simulate's --format for the keys of the result JSON
// of `vllm bench serve` (see package vllmbench).
const formatVLLMBench = "vllm-bench"

// simulateOptions are the parsed flags of `servesim simulate`: the
// simulation's, and what to write.
type simulateOptions struct {
	simrun.Config
	// Format is "json", "table" or "vllm-bench".
	Format     string
	Output     outputOptions
	Plot       plotOptions
	RequestLog requestLogOptions // --request-log
}

// newSimulateCmd builds `servesim simulate`. runF replaces the run for tests
// of flag parsing; nil runs the simulation.
func newSimulateCmd(s *streams, runF func(*simulateOptions) error) *cobra.Command {
	opts := &simulateOptions{Config: simrun.Config{Plant: plant.NewPlant(nil)}, Format: "json"}
	cmd := &cobra.Command{
		Use:     "simulate [flags]",
		Short:   "Replay an arrival trace on the time-stepped serving plant",
		Long:    help("simulate"),
		Example: help("simulate.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error { return opts.check(cmd) },
			runF, func(ctx context.Context, o *simulateOptions) error { return runSimulate(ctx, s, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.ProfilePath, "profile", "", "profile CSV, or a bundle folder holding l4_profile.csv (a measured bundle is validated first; default: the embedded engineering proxy)")
	f.StringVar(&opts.TracePath, "trace", "", "trace file: Azure, BurstGPT, Mooncake JSON Lines or a CSV log (--trace-columns), or - for stdin (default: the embedded synthetic trace)")
	addTraceFlags(cmd, &opts.Trace)
	f.Float64Var(&opts.MaxElapsedS, "max-elapsed", 0, "keep only requests at most `S` seconds after the first (default: all)")
	f.Float64Var(&opts.Normalize, "normalize", 0, "dilate arrivals to offered utilization `U`, 0 < U < 1 (normalize_offered_load; default: off)")
	f.StringVar(&opts.Scheduler, "scheduler", "chunked", "static, continuous or chunked")
	f.StringVar(&opts.Controller, "controller", "max", "max, min, fixed:MHZ, reactive, sampled-reactive[:PERIOD_S] (period 1 s), race-to-idle[:MHZ] (busy at MHZ, default the top level; idle at the lowest), exec:COMMAND (your own: a /bin/sh -c COMMAND child answering JSON Lines, see the README), mpc[:KEY=VALUE,...] (model-predictive; keys period, horizon, budget, deadline, attainment) or mpc-clairvoyant[:...] (told the future: a bound, not realizable)")
	plantflag.AddExecTimeout(cmd, &opts.ExecTimeoutS)
	f.BoolVar(&opts.Verbose, "verbose", false, "report on stderr the wall-clock time of an mpc controller's solves (machine-dependent: never in the document)")
	plantflag.AddPlant(cmd, &opts.Plant)
	plantflag.AddSLO(cmd, &opts.SLO)
	f.IntVar(&opts.Stride, "stride", 1, "sample every `N`-th step of the trajectory (and always the last)")
	f.BoolVar(&opts.Summary, "summary", false, "write metrics, summary and provenance only: no trajectory, no request records")
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json, table (a metrics summary for terminals) or vllm-bench (the keys of vllm bench serve's result JSON)",
		"json", "table", formatVLLMBench)
	addRequestLogFlag(cmd, &opts.RequestLog)
	plantflag.AddEngine(cmd, &opts.Engine)
	plantflag.AddService(cmd, &opts.Service)
	plantflag.AddMaxSteps(cmd, &opts.MaxSteps)
	addFleetFlags(cmd, &opts.Fleet)
	addScaleFlags(cmd, &opts.Fleet.Scale)
	addOutputFlag(cmd, &opts.Output)
	addPlotFlag(cmd, &opts.Plot)
	return cmd
}

// check rejects flag values that cannot mean anything (usage errors).
// Plant values are checked with the plant (bad input, exit 1).
func (o *simulateOptions) check(cmd *cobra.Command) error {
	o.Requests, o.Figure = o.RequestLog.Path != "" || o.Format == formatVLLMBench, o.Plot.Path != ""
	if err := plantflag.CheckMaxElapsed(cmd, &o.MaxElapsedS); err != nil {
		return err
	}
	if cmd.Flags().Changed("normalize") && !(o.Normalize > 0 && o.Normalize < 1) {
		return usageErrorf("--normalize %v: expected %s", o.Normalize, flagExpectations["normalize"])
	}
	if err := plantflag.CheckSLO(cmd, &o.SLO); err != nil {
		return err
	}
	if err := o.Service.Check(cmd.Flags().Changed); err != nil {
		return err
	}
	if err := o.Config.Check(); err != nil {
		return err
	}
	if err := o.RequestLog.check(o.Output); err != nil {
		return err
	}
	if err := o.Engine.Check(cmd.Flags().Changed, o.Plant); err != nil {
		return err
	}
	if err := o.CheckWork(); err != nil {
		return err
	}
	changed := cmd.Flags().Changed
	if err := o.Fleet.Scale.Check(o.Fleet.Replicas, changed); err != nil {
		return err
	}
	if err := o.Fleet.Check(changed("normalize"), changed("router") || changed("router-seed")); err != nil {
		return err
	}
	if err := o.CheckRouter(); err != nil {
		return err
	}
	return o.Plot.check()
}

func runSimulate(ctx context.Context, s *streams, o *simulateOptions) error {
	o.Stdin, o.Stderr, o.Version = s.In, flagWarner(s.Err), resolvedVersion()
	res, err := simrun.Run(ctx, o.Config)
	if err != nil {
		return err
	}
	// The request log, the figure and the result appear together or not at
	// all: each is staged, and all are renamed into place once the result,
	// written last (it may go to stdout, which cannot be taken back), is
	// written.
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	if err := o.RequestLog.stage(set, res.RequestLog); err != nil {
		return err
	}
	if o.Plot.Path != "" {
		if err := o.Plot.stage(set, res.Figure()); err != nil {
			return err
		}
		res.Thin()
	}
	if o.Format == formatVLLMBench {
		doc, err := res.VLLMBench()
		if err != nil {
			return set.abandon(internalError(err))
		}
		return set.finish(o.Output, "json", doc, nil)
	}
	return set.finish(o.Output, o.Format, res.Document(), res.Table)
}

// addFleetFlags binds the fleet flags to o.
func addFleetFlags(cmd *cobra.Command, o *simrun.Fleet) {
	f := cmd.Flags()
	f.IntVar(&o.Replicas, "replicas", 1, "simulate a fleet of `N` replicas of the profile behind --router, 1 to 4096 (with --fleet: the default of a group)")
	f.StringVar(&o.Path, "fleet", "", "simulate the fleet of a JSON `FILE`: a list of groups {\"name\", \"profile\", \"replicas\", \"scheduler\", \"controller\", \"role\"}; a missing field takes the flag's value; roles prefill and decode disaggregate the fleet")
	f.StringVar(&o.Router, "router", fleet.RoundRobinName, "how a fleet routes requests: "+strings.Join(fleet.RouterNames, ", "))
	f.Uint64Var(&o.RouterSeed, "router-seed", fleet.DefaultRouterSeed, "seed of the random router")
	f.IntVar(&o.Jobs, "jobs", 0, "replicas simulated at once with a state-free router (round-robin, random; 0, the default: all cores)")
	addLinkFlags(cmd, &o.Link)
}

// addLinkFlags binds the KV transfer link of a disaggregated fleet to l.
func addLinkFlags(cmd *cobra.Command, l *fleet.Link) {
	f := cmd.Flags()
	f.Float64Var(&l.BandwidthGBps, "kv-transfer-bandwidth", fleet.DefaultKVTransferBandwidthGBps, "with a disaggregated fleet (--fleet of prefill and decode groups, capacity --disaggregated): each prefill replica's link to the decode pool, `GB/s`, shared by its transfers (inf: instant)")
	f.Float64Var(&l.LatencyS, "kv-transfer-latency", fleet.DefaultKVTransferLatencyS, "with a disaggregated fleet: the time from a KV transfer's last byte to its arrival, `S` seconds")
}

// addScaleFlags binds the autoscaling flags to o.
func addScaleFlags(cmd *cobra.Command, o *simrun.Scale) {
	f := cmd.Flags()
	f.StringVar(&o.Policy, "autoscale", "", "make the fleet elastic under `POLICY`: static (--replicas fixed, with billing), queue:target=N[,up=S,down=S,tolerance=F,uppods=N,uppercent=P] (KEDA on waiting requests per ready replica; HPA stabilization windows, tolerance and scale-up policies), utilization:target=U[,...] (running+waiting over capacity), schedule:FILE or oracle:FILE (a count per window, CSV start_s,replicas; the oracle asks a cold start ahead), oracle[:window=S,attainment=A] (the oracle on the plan capacity --over-time S --attainment A makes of this trace; 3600 s, 0.99), exec:COMMAND (your own: a /bin/sh -c COMMAND child answering each observation line with {\"replicas\": N}, --exec-timeout applies)")
	f.IntVar(&o.MinReplicas, "min-replicas", fleet.DefaultMinReplicas, "with --autoscale: the least replicas kept (0 scales to zero); the initial size unless --replicas is given")
	f.IntVar(&o.MaxReplicas, "max-replicas", fleet.DefaultMaxReplicas, "with --autoscale: the most replicas asked for (KEDA's default)")
	f.Float64Var(&o.IntervalS, "scale-interval", fleet.DefaultScaleIntervalS, "with --autoscale: the autoscaler acts every `S` seconds (KEDA's polling interval)")
	f.Float64Var(&o.ColdStartS, "cold-start", fleet.DefaultProvisionS+fleet.DefaultLoadS, "with --autoscale: a new replica's cold start, `S` seconds, split half provisioning, half loading unless --provision-time or --load-time is given")
	f.Float64Var(&o.ProvisionS, "provision-time", fleet.DefaultProvisionS, "with --autoscale: a new replica's node comes up in `S` seconds (billed, no GPU power)")
	f.Float64Var(&o.LoadS, "load-time", fleet.DefaultLoadS, "with --autoscale: a new replica loads its weights in `S` seconds (billed, idle power)")
	f.Float64Var(&o.GPUCostPerHour, "gpu-cost-per-hour", fleet.DefaultGPUCostPerHour, "with --autoscale: dollars per billed replica-hour (default: an AWS g6.xlarge, one L4, on demand)")
	f.Float64Var(&o.PowerLimitW, "fleet-power-limit", 0, "with --autoscale: the fleet's power budget, `W` watts, shared each step by --fleet-power-budget as caps the replicas' clocks respect (default: none)")
	cliflag.AddChoice(cmd, &o.PowerBudget, "fleet-power-budget", fleet.BudgetEqual, "with --fleet-power-limit: how each step shares it: equal, or queue (in proportion to each replica's queued and decoding requests, plus one)", fleet.BudgetNames...)
	f.Float64Var(&o.EnergyPricePerKWh, "energy-price-per-kwh", fleet.DefaultEnergyPricePerKWh, "with --autoscale: dollars per kWh (default: about the 2024 US commercial average)")
}
