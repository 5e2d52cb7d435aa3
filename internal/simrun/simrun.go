// Package simrun is servesim's simulate as its flags give it: the profile
// and the plant checked, the trace streamed or loaded, one GPU (plant) or a
// fleet (fleet) simulated, the warnings a run earns on stderr (a fixed
// clock the profile lacks, arrivals past --max-sim-time, an mpc
// controller's solve times with --verbose), and the result in each of the
// command's forms (document, table, vllm bench's JSON, request log,
// figure). Writing them is the command's.
package simrun

import (
	"context"
	"errors"
	"io"
	"strings"

	"servesim/internal/figure"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/reqlog"
	"servesim/internal/runparams"
	"servesim/internal/trace"
	"servesim/internal/vllmbench"
)

// Config is a simulation as simulate's flags give it.
type Config struct {
	// ProfilePath is a profile CSV or bundle folder; empty for the
	// embedded proxy.
	ProfilePath string
	// TracePath is a trace file ("-": Stdin); empty for the embedded
	// trace. Trace says how to read it (its Options parsed).
	TracePath string
	Trace     trace.Flags
	Stdin     io.Reader
	// Workload, when not nil, is the run's workload in place of a trace
	// (servesim bench generates one); TracePath and Trace are then unused.
	Workload *plant.Workload
	// MaxConcurrency closes the loop (plant.Options.MaxConcurrency).
	MaxConcurrency int
	// Service is the service model and its cards (--service-model).
	Service     runparams.Service
	MaxElapsedS float64 // plant.NoElapsedLimit keeps every request
	Normalize   float64 // 0: the arrivals as they are
	Scheduler   string
	Controller  string
	Stride      int
	Summary     bool
	SLO         plant.SLO
	// Plant holds the plant flags; its Profile is set once loaded.
	Plant        plant.Plant
	MaxSteps     float64
	ExecTimeoutS float64
	Engine       runparams.Engine
	// Verbose reports an mpc controller's solve times on Stderr.
	Verbose bool
	// Fleet, when Enabled, simulates a fleet.
	Fleet Fleet
	// Requests keeps every request's record (for a request log or vllm
	// bench's JSON); Figure keeps every step (for the figure; Thin then
	// leaves what Stride and Summary ask).
	Requests, Figure bool
	// Version is the servesim version the provenance records.
	Version string
	// Stderr receives the warnings, with the settings they name worded by
	// its Name, and an exec: child's stderr.
	Stderr runparams.Warner
	// sessions are the sessions of the trace's requests (loadTrace), nil
	// for a trace without any.
	sessions fleet.SessionSource
}

// Fleet are the fleet settings of a simulation.
type Fleet struct {
	Enabled    bool
	Replicas   int    // replicas of the command-line profile (a group's default with Path)
	Path       string // fleet file
	Router     string
	RouterSeed uint64
	Jobs       int // 0: GOMAXPROCS
	// Scale, when its Policy is set, makes the fleet elastic.
	Scale Scale
	// Link is a disaggregated fleet's KV transfer link
	// (--kv-transfer-bandwidth, --kv-transfer-latency).
	Link fleet.Link
}

// Check rejects a stride, scheduler, controller or --exec-timeout that
// cannot mean anything; its errors name the setting (*runparams.FieldError).
func (c *Config) Check() error {
	if c.Stride < 1 {
		return runparams.Errorf("%s %d: expected a positive whole number", runparams.Setting("stride"), c.Stride)
	}
	if _, err := plant.NewScheduler(c.Scheduler); err != nil {
		return runparams.Errorf("%s: %v", runparams.Setting("scheduler"), err)
	}
	if _, err := plant.NewController(c.Controller); err != nil {
		return runparams.Errorf("%s: %v", runparams.Setting("controller"), err)
	}
	return runparams.CheckExecTimeout(c.ExecTimeoutS)
}

// CheckWork refuses, before anything is read, a run whose steps or kept
// trajectory would pass a limit (with Figure, every step is kept), and a
// fleet of --replicas (without a fleet file, whose sizes are known once it
// is read) whose replicas together would keep too many trajectory samples
// or prefix-cache blocks.
func (c *Config) CheckWork() error {
	work := plant.Options{Stride: c.Stride, Summary: c.Summary, MaxSteps: c.MaxSteps, Engine: c.Engine.Options()}
	if c.Figure {
		work.Stride, work.Summary = 1, false
	}
	if err := runparams.CheckWork(c.Plant, work, c.Figure); err != nil {
		return err
	}
	if c.Fleet.Scale.Policy != "" && c.Fleet.Scale.MaxReplicas >= 1 && c.Fleet.Scale.MaxReplicas <= fleet.MaxReplicas {
		// An elastic fleet's replicas up at once, and the series of its
		// counts.
		return runparams.CheckFleetWork(c.Plant, work, c.Fleet.Scale.MaxReplicas+1, c.Figure)
	}
	if c.Fleet.Path == "" && c.Fleet.Replicas > 1 && c.Fleet.Replicas <= fleet.MaxReplicas {
		return runparams.CheckFleetWork(c.Plant, work, c.Fleet.Replicas, c.Figure)
	}
	return nil
}

// CheckRouter refuses a router that needs the prefix cache (prefix-aware)
// without --prefix-cache, and the session router without a trace whose
// requests carry sessions (a CSV log with a session=COL column).
func (c *Config) CheckRouter() error {
	if fleet.NeedsPrefixCache(c.Fleet.Router) && !c.Engine.PrefixCache {
		return runparams.Errorf("%s %s: needs %s: it scores each replica by the prompt prefix it holds cached", runparams.Setting("router"), c.Fleet.Router, runparams.Setting("prefix-cache"))
	}
	if c.Fleet.Router == fleet.SessionName && !c.Trace.HasSessionColumn() {
		return runparams.Errorf("%s %s: needs a trace whose requests carry sessions: a CSV log with a session column (%s ...,session=COL)", runparams.Setting("router"), c.Fleet.Router, runparams.Setting("trace-columns"))
	}
	return nil
}

// Check checks the fleet settings and decides whether the run is a
// fleet's: one is asked for with a fleet file, more than one replica,
// routerGiven (--router or --router-seed) or an autoscaler (Scale, checked
// before). normalize says that
// --normalize was given, which a fleet file cannot take.
func (f *Fleet) Check(normalize, routerGiven bool) error {
	if f.Replicas < 1 || f.Replicas > fleet.MaxReplicas {
		return runparams.Errorf("%s %d: expected a whole number from 1 to %d", runparams.Setting("replicas"), f.Replicas, fleet.MaxReplicas)
	}
	if _, err := fleet.NewRouter(f.Router, f.RouterSeed); err != nil {
		if routerErr := (*fleet.RouterError)(nil); errors.As(err, &routerErr) {
			return runparams.Errorf("%s %q: %v", runparams.Setting("router"), f.Router, err)
		}
		return runparams.Errorf("%s %q: expected %s", runparams.Setting("router"), f.Router, strings.Join(fleet.RouterNames, ", "))
	}
	if f.Jobs < 0 {
		return runparams.Errorf("%s %d: expected a nonnegative number (0: all cores)", runparams.Setting("jobs"), f.Jobs)
	}
	if fleet.IsPlannedOracle(f.Scale.Policy) && normalize {
		// It plans on the arrivals as read (a fleet file's groups are
		// checked once it is read: plainOracleGroups).
		return runparams.Errorf("%s %s: plans on the trace's own arrivals: without %s (or plan a normalized trace with capacity %s and give oracle:FILE)", runparams.Setting("autoscale"), f.Scale.Policy, runparams.Setting("normalize"), runparams.Setting("over-time"))
	}
	if err := f.Link.Validate(); err != nil {
		return err
	}
	if f.Path != "" && normalize {
		return runparams.Errorf("%s cannot be combined with %s: a fleet of several profiles has no single capacity to normalize to (use %s)", runparams.Setting("normalize"), runparams.Setting("fleet"), runparams.Setting("replicas"))
	}
	f.Enabled = f.Path != "" || f.Replicas > 1 || routerGiven || f.Scale.Policy != ""
	return nil
}

// Result is a finished simulation: one GPU's report, or a fleet's.
type Result struct {
	cfg   Config
	plant *plant.Report
	fleet *fleet.Report
}

// Run runs the simulation of cfg.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	prof, profilePath := profile.Default(), profile.EmbeddedPath
	if cfg.ProfilePath != "" {
		profilePath = profile.ResolvePath(cfg.ProfilePath)
		var err error
		if prof, err = profile.Load(profilePath); err != nil {
			return nil, err
		}
	}
	cfg.Plant.Profile = prof
	if err := cfg.Service.ResolveRun(&cfg.Plant, &cfg.SLO); err != nil {
		return nil, err
	}
	if cfg.Fleet.Enabled {
		return cfg.runFleet(ctx, prof, profilePath)
	}
	sched, _ := plant.NewScheduler(cfg.Scheduler)
	ctrl, _ := plant.NewControllerWith(cfg.Controller, runparams.ControllerOptions(cfg.ExecTimeoutS, cfg.Stderr))
	warnFixedClock(cfg.Stderr, cfg.Controller, ctrl, prof)
	cfg.timeSolves(ctrl)
	report, err := cfg.run(ctx, plant.Config{
		Plant:       cfg.Plant,
		Scheduler:   sched,
		Controller:  ctrl,
		Normalize:   cfg.Normalize,
		ProfilePath: profilePath,
		Version:     cfg.Version,
	})
	if err != nil {
		return nil, err
	}
	warnNormalizeUnchanged(cfg.Stderr, cfg.Normalize, report.Dilation)
	warnArrivalsPastMaxSimTime(cfg.Stderr, report.LastArrivalS, report.Provenance.RequestsLoaded, cfg.Plant.MaxSimulationTimeS, report.Metrics.UnfinishedRequestsAtEnd)
	cfg.reportSolveTimes("", ctrl)
	return &Result{cfg: cfg, plant: report}, nil
}

// options are what each plant of the run keeps: with Figure every step
// (the figure draws them all; Thin thins the document afterwards as Stride
// and Summary ask), else what Stride and Summary say.
func (c *Config) options() plant.Options {
	options := plant.Options{Stride: c.Stride, Summary: c.Summary, MaxSteps: c.MaxSteps, SLO: c.SLO,
		RequestLog: c.Requests, Engine: c.Service.EngineOptions(c.Engine.Options()), Service: c.Service.Model(), MaxConcurrency: c.MaxConcurrency}
	if c.Figure {
		options.Stride, options.Summary = 1, false
	}
	return options
}

// run simulates the trace under cfg with the plant options of c. A trace
// file is read while it is simulated (plant.RunStream: memory does not
// grow with the trace), and so is standard input without Normalize (which
// reads the trace twice); the embedded trace, standard input with
// Normalize, a trace whose hash ids the prefix cache needs and a
// controller that must see the whole workload first (mpc-clairvoyant)
// load it whole first.
func (c *Config) run(ctx context.Context, cfg plant.Config) (*plant.Report, error) {
	_, clairvoyant := cfg.Controller.(plant.Clairvoyant)
	if c.streams() && !clairvoyant {
		cfg.Options = c.options()
		return plant.RunStreamContext(ctx, c.source(), cfg)
	}
	workload, err := c.loadTrace()
	if err != nil {
		return nil, err
	}
	cfg.Options = c.options()   // with the trace's hash ids
	cfg.NormalizeInPlace = true // the trace was loaded for this run alone
	return plant.RunContext(ctx, workload, cfg)
}

// streams reports whether the trace can be read while it is simulated: a
// trace file (standard input only without Normalize, which reads it twice)
// whose hash ids the prefix cache, and whose sessions the session router,
// do not need.
func (c *Config) streams() bool {
	return c.Workload == nil && c.TracePath != "" && !c.Engine.PrefixCache && c.Fleet.Router != fleet.SessionName &&
		(c.TracePath != "-" || c.Normalize == 0)
}

// source is the trace file as a workload source.
func (c *Config) source() *trace.Source {
	return &trace.Source{Path: c.TracePath, Stdin: c.Stdin, MaxElapsedS: c.MaxElapsedS, Options: c.Trace.Options}
}

// loadTrace reads the trace file, or the embedded synthetic trace without
// one; a Mooncake trace's hash ids go to the prefix cache.
func (c *Config) loadTrace() (plant.Workload, error) {
	if c.Workload != nil {
		return *c.Workload, nil
	}
	if c.TracePath == "" {
		return plant.DefaultTrace(c.MaxElapsedS)
	}
	t, err := c.source().Load()
	if err != nil {
		return plant.Workload{}, err
	}
	c.Engine.UseHashIDs(t.HashIDSource())
	if t.HasSessions() {
		c.sessions = t
	}
	return t.Workload, nil
}

// Document is the result's JSON document: a *plant.Report or a
// *fleet.Report.
func (r *Result) Document() any {
	if r.fleet != nil {
		return r.fleet
	}
	return r.plant
}

// Table is the result's metrics table for terminals.
func (r *Result) Table() string {
	if r.fleet != nil {
		return r.fleet.Table()
	}
	return r.plant.Table()
}

// VLLMBench is the result as vllm bench serve's result JSON; a fleet's
// requests are judged by the SLO flags (a zero objective: the serving
// replica's profile's).
func (r *Result) VLLMBench() (any, error) {
	if r.fleet != nil {
		return vllmbench.FromFleet(r.fleet.Result, r.cfg.SLO), nil
	}
	return vllmbench.FromPlant(&r.plant.Result)
}

// RequestLog is the run as a request log.
func (r *Result) RequestLog() (*reqlog.Log, error) {
	if r.fleet != nil {
		return reqlog.FromFleet(r.fleet.Result)
	}
	return reqlog.FromPlant(r.plant.Log)
}

// Figure draws the run; it needs every step (Config.Figure).
func (r *Result) Figure() figure.Figure {
	if r.fleet != nil {
		return r.fleet.Figure(r.cfg.Normalize, r.cfg.MaxElapsedS)
	}
	return r.plant.Figure(&r.plant.Result, r.cfg.Normalize, r.cfg.MaxElapsedS)
}

// Thin leaves in the document the trajectory samples and records Stride
// and Summary ask for, after Figure drew every step.
func (r *Result) Thin() {
	if r.fleet != nil {
		r.fleet.Thin(r.cfg.Stride, r.cfg.Summary)
		return
	}
	r.plant.Result = *r.plant.Result.Thinned(r.cfg.Stride, r.cfg.Summary)
}
