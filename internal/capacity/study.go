package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/progress"
	"servesim/internal/runparams"
	"servesim/internal/trace"
)

// Config is a capacity study as its flags give it.
type Config struct {
	// TracePath is the trace file ("-": Stdin), empty for the embedded
	// trace; Trace says how to read it (its Options parsed).
	TracePath string
	Trace     trace.Flags
	Stdin     io.Reader
	// Stderr receives the exec: children's stderr.
	Stderr io.Writer
	// ProfilePath is the profile of every replica, or with FleetPath of
	// the groups without one; empty for the embedded proxy.
	ProfilePath, FleetPath string
	MaxElapsedS            float64
	SLO                    plant.SLO
	Attainment             float64
	Router                 string
	RouterSeed             uint64
	Controllers            []string
	ExecTimeoutS           float64 // --exec-timeout: the patience with exec: controllers
	Scheduler              string
	MaxReplicas            int
	Jobs                   int // simulations (or replicas) at a time; 0: GOMAXPROCS
	// OverTimeS is --over-time: the windows' length of a study over time
	// (RunOverTime), s; 0 for none.
	OverTimeS float64
	// StopLost is --stop-lost: a fleet that fails stops once its lost
	// requests say so (Capacity.StopWhenLost; a study over time always
	// does).
	StopLost bool
	// Plant holds the plant flags; each group's profile replaces Profile.
	Plant  plant.Plant
	Engine runparams.Engine
	// Service is the service model and its cards (--service-model).
	Service runparams.Service
	// Version is the servesim version the document records.
	Version string
	// Disaggregated is --disaggregated: the fewest prefill and decode
	// replicas too, over Link (--kv-transfer-bandwidth and -latency).
	Disaggregated bool
	Link          fleet.Link
}

// Check rejects settings that cannot mean anything; its errors name the
// setting (*runparams.FieldError).
func (cfg *Config) Check() error {
	if !(cfg.Attainment > 0 && cfg.Attainment <= 1) {
		return runparams.Errorf("%s %v: expected a share greater than 0 and at most 1", runparams.Setting("attainment"), cfg.Attainment)
	}
	if _, err := fleet.NewRouter(cfg.Router, cfg.RouterSeed); err != nil {
		return runparams.Errorf("%s: %v", runparams.Setting("router"), err)
	}
	if fleet.NeedsPrefixCache(cfg.Router) && !cfg.Engine.PrefixCache {
		return runparams.Errorf("%s %s: needs %s: it scores each replica by the prompt prefix it holds cached", runparams.Setting("router"), cfg.Router, runparams.Setting("prefix-cache"))
	}
	if cfg.Router == fleet.SessionName && !cfg.Trace.HasSessionColumn() {
		return runparams.Errorf("%s %s: needs a trace whose requests carry sessions: a CSV log with a session column (%s ...,session=COL)", runparams.Setting("router"), cfg.Router, runparams.Setting("trace-columns"))
	}
	if len(cfg.Controllers) == 0 {
		return runparams.Errorf("%s: expected at least one controller", runparams.Setting("controller"))
	}
	for _, c := range cfg.Controllers {
		if _, err := plant.NewController(c); err != nil {
			return runparams.Errorf("%s: %v", runparams.Setting("controller"), err)
		}
	}
	if err := runparams.CheckExecTimeout(cfg.ExecTimeoutS); err != nil {
		return err
	}
	if _, err := plant.NewScheduler(cfg.Scheduler); err != nil {
		return runparams.Errorf("%s: %v", runparams.Setting("scheduler"), err)
	}
	if cfg.MaxReplicas < 1 || cfg.MaxReplicas > fleet.MaxReplicas {
		return runparams.Errorf("%s %d: expected 1 to %d", runparams.Setting("max-replicas"), cfg.MaxReplicas, fleet.MaxReplicas)
	}
	if cfg.Jobs < 0 {
		return runparams.Errorf("%s %d: expected a nonnegative number (0: all cores)", runparams.Setting("jobs"), cfg.Jobs)
	}
	if cfg.OverTimeS != 0 && !(cfg.OverTimeS > 0 && !math.IsInf(cfg.OverTimeS, 1)) {
		return runparams.Errorf("%s %v: expected a positive finite number of seconds", runparams.Setting("over-time"), cfg.OverTimeS)
	}
	if err := cfg.checkDisaggregated(); err != nil {
		return err
	}
	if cfg.FleetPath == "" && cfg.Plant.KVCapacityTokens > 0 {
		// One replica a unit; a fleet file's units, and the batched
		// cards' KV capacity, are checked once read (Load).
		return checkLiveKVBlocks(*cfg, []fleet.Group{{Replicas: 1}})
	}
	return nil
}

// Study is a capacity study ready to run: its fleet, its trace and its
// provenance.
type Study struct {
	Capacity
	workload plant.Workload
	prov     Provenance
	version  string
	// overTimeS and jobs are --over-time and --jobs (0 resolved).
	overTimeS float64
	jobs      int
	// disagg is --disaggregated's study (nil without it).
	disagg *DisaggStudy
}

// Load reads the profiles, the fleet file and the trace of cfg.
func Load(cfg Config) (*Study, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = runtime.GOMAXPROCS(0) // all cores, as simulate's --jobs 0
	}
	unit, prov, err := unitFleet(cfg)
	if err != nil {
		return nil, err
	}
	unit, pools, err := cfg.disaggUnits(unit)
	if err != nil {
		return nil, err
	}
	cfg.Plant.Profile = unit[0].Profile
	if err := cfg.Service.ResolveRun(&cfg.Plant, &cfg.SLO); err != nil {
		return nil, err
	}
	if err := checkLiveKVBlocks(cfg, unit); err != nil {
		return nil, err
	}
	var (
		workload plant.Workload
		sessions fleet.SessionSource
	)
	if cfg.TracePath == "" {
		workload, err = plant.DefaultTrace(cfg.MaxElapsedS)
	} else {
		var t *trace.Trace
		if t, err = (&trace.Source{Path: cfg.TracePath, Stdin: cfg.Stdin, MaxElapsedS: cfg.MaxElapsedS, Options: cfg.Trace.Options}).Load(); err == nil {
			workload = t.Workload
			cfg.Engine.UseHashIDs(t.HashIDSource())
			if t.HasSessions() {
				sessions = t
			}
		}
	}
	if err != nil {
		return nil, err
	}
	prov.TracePath, prov.TraceSHA256, prov.RequestsLoaded = workload.Source, workload.SHA256, len(workload.Requests)
	prov.ServesimVersion, prov.RequestsSkipped = cfg.Version, workload.Skipped
	study := &Study{
		Capacity: Capacity{
			Plant: cfg.Plant, Unit: unit, Router: cfg.Router, RouterSeed: cfg.RouterSeed,
			Controllers: cfg.Controllers, SLO: cfg.SLO, Engine: cfg.Service.EngineOptions(cfg.Engine.Options()), Service: cfg.Service.Model(), Sessions: sessions,
			ControllerOptions: runparams.ControllerOptions(cfg.ExecTimeoutS, cfg.Stderr),
			Search:            SearchSettings{Target: cfg.Attainment, MaxReplicas: cfg.MaxReplicas, Jobs: cfg.Jobs},
			StopWhenLost:      cfg.StopLost,
		},
		workload: workload, prov: prov, version: cfg.Version, overTimeS: cfg.OverTimeS, jobs: cfg.Jobs,
	}
	if pools != nil {
		study.disagg = &DisaggStudy{Capacity: study.Capacity, Link: cfg.Link}
		study.disagg.Unit = pools
	}
	return study, nil
}

// unitFleet returns the fleet of size 1: one replica of --profile, or the
// groups of --fleet (whose missing fields take the command line's values,
// one replica by default; a group without a controller takes each of
// --controller in turn).
func unitFleet(cfg Config) ([]fleet.Group, Provenance, error) {
	prof, profilePath := profile.Default(), profile.EmbeddedPath
	if cfg.ProfilePath != "" {
		profilePath = profile.ResolvePath(cfg.ProfilePath) // a bundle folder, as simulate takes it
		var err error
		if prof, err = profile.Load(profilePath); err != nil {
			return nil, Provenance{}, err
		}
	}
	prov := Provenance{ProfilePath: profilePath, FleetPath: cfg.FleetPath}
	if cfg.FleetPath == "" {
		return []fleet.Group{{Replicas: 1, Profile: prof, ProfilePath: profilePath, Scheduler: cfg.Scheduler}}, prov, nil
	}
	groups, err := fleet.ReadFile(cfg.FleetPath, fleet.GroupDefaults{
		Profile: prof, ProfilePath: profilePath, Replicas: 1, Scheduler: cfg.Scheduler,
	}, profile.Load)
	return groups, prov, err
}

// Progress says where a study reports on stderr.
type Progress struct {
	// Stderr receives the warnings, with the settings they name worded by
	// its Name, and the progress bar.
	Stderr runparams.Warner
	// Bar draws a progress bar on Stderr (a terminal, without --quiet).
	Bar bool
	// Quiet leaves out the line on the sizes --evaluations supplied.
	Quiet bool
}

// Run runs the search, taking the sizes that the records of the files or
// glob patterns evaluations hold as simulated, and returns the document.
// When no fleet of at most MaxReplicas replicas meets the target, it
// returns the document and a *UnreachableError; on any other error,
// no document.
func (s *Study) Run(ctx context.Context, evaluations []string, p Progress) (*Document, error) {
	summary, err := s.useEvaluations(evaluations, p)
	if err != nil {
		return nil, err
	}
	var bar *progress.Bar
	if p.Bar {
		bar = progress.New(p.Stderr, "capacity", "simulations", s.MaxEvaluations())
		s.Progress = bar.Increment
	}
	report, err := Run(ctx, s.workload.Requests, s.Capacity)
	if bar != nil {
		bar.Finish() // before the result reaches a terminal
	}
	if summary != nil {
		summary(report)
	}
	var unreachable *UnreachableError
	if err != nil && !errors.As(err, &unreachable) {
		return nil, err
	}
	doc := &Document{Report: report, SLO: SLOUsed(s.SLO, s.Unit), Provenance: s.prov}
	if s.Service.Batched() {
		doc.Service = &s.Service
	}
	if s.disagg != nil {
		derr := s.runDisaggregated(ctx, doc, p)
		if doc.Disaggregated == nil {
			return nil, derr
		}
		if err == nil {
			err = derr
		}
	}
	return doc, err
}

// RunOverTime runs the study over time (--over-time): the static study of
// the whole trace, as Run runs it (its evaluations fed by the records of
// evaluations), and, at the same time, the plan, each window of the trace
// searched alone (RunOverTime; with --disaggregated,
// RunDisaggOverTime, a plan per pool too) on the --jobs workers,
// and returns them in one document. A static study that no size serves comes back as Run's
// *UnreachableError with the document, and so do windows no size
// serves, as a *UnreachableWindowsError; on any other error, no
// document.
func (s *Study) RunOverTime(ctx context.Context, evaluations []string, p Progress) (*OverTimeDocument, error) {
	if s.overTimeS <= 0 {
		return nil, runparams.Errorf("capacity over time: no window length (%s)", runparams.Setting("over-time"))
	}
	windows, err := SplitWindows(s.workload.Requests, s.overTimeS)
	if err != nil {
		var count *WindowCountError
		if errors.As(err, &count) {
			return nil, &runparams.LateUsageError{Err: runparams.Errorf("%s %v: %w", runparams.Setting("over-time"), s.overTimeS, err)}
		}
		return nil, runparams.Errorf("%s %v: %w", runparams.Setting("over-time"), s.overTimeS, err)
	}
	// The static search and the windows run at once: the static search's
	// first sizes, overloaded and one replica or two, keep one core busy
	// for most of its time on a long trace.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	step := func() {}
	var bar *progress.Bar
	if p.Bar {
		bar = progress.New(p.Stderr, "capacity over time", "simulations and windows", s.MaxEvaluations()+len(windows))
		var mu sync.Mutex
		step = func() {
			mu.Lock()
			defer mu.Unlock()
			bar.Increment()
		}
	}
	// A fleet that fails stops once its lost requests say so: the first
	// sizes of the static search hold a long trace's whole backlog
	// otherwise (Capacity.StopWhenLost).
	s.StopWhenLost = true
	capacity := s.Capacity // as loaded: Run adds the evaluations' hooks
	s.Progress = step
	var static *Document
	var staticErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if static, staticErr = s.Run(ctx, evaluations, Progress{Stderr: p.Stderr, Quiet: p.Quiet}); static == nil {
			cancel() // the windows are of no use
		}
	}()
	var (
		plan  *Plan
		dplan *DisaggPlan
	)
	if s.disagg != nil {
		plan, dplan, err = RunDisaggOverTime(ctx, s.workload.Requests, capacity, s.disagg.Unit, s.disagg.Link, s.overTimeS, s.jobs, step)
	} else {
		plan, err = RunOverTime(ctx, s.workload.Requests, capacity, s.overTimeS, s.jobs, step)
	}
	<-done
	if bar != nil {
		bar.Finish()
	}
	if static == nil {
		return nil, staticErr
	}
	var unreachable *UnreachableWindowsError
	if err != nil && !errors.As(err, &unreachable) {
		return nil, err
	}
	doc := NewOverTimeDocument(plan, static)
	if dplan != nil {
		doc.Disaggregated = NewDisaggOverTime(dplan, static.Disaggregated)
	}
	if staticErr != nil {
		return doc, staticErr
	}
	return doc, err
}

// useEvaluations reads the records the evaluations name into the search,
// and counts the fleets the study then simulates. The summary it returns
// prints, unless p.Quiet, one line saying how many of the sizes the
// search used came from the files; nil without evaluations.
func (s *Study) useEvaluations(evaluations []string, p Progress) (summary func(*Report), err error) {
	if len(evaluations) == 0 {
		return nil, nil
	}
	names, err := expandEvaluations(evaluations)
	if err != nil {
		return nil, err
	}
	grid, err := s.Grid(s.workload.Requests, s.workload.SHA256, s.version)
	if err != nil {
		return nil, err
	}
	known, err := grid.ReadEvaluations(names, p.Stderr)
	if err != nil {
		return nil, runparams.Errorf("%s %w", evaluationsSetting, err)
	}
	s.Search.Known = known.Evaluations
	var simulated atomic.Int64
	s.Simulated = func(int, string) { simulated.Add(1) }
	return func(report *Report) {
		if p.Quiet || report == nil {
			return
		}
		read := 0
		for _, e := range report.Evaluations {
			for _, k := range known.Evaluations {
				if k.Replicas == e.Replicas {
					read++
				}
			}
		}
		p.Stderr.Warnf("servesim: capacity: %d of the %d sizes the search used came from %s (%s in %s); %s simulated\n",
			read, len(report.Evaluations), evaluationsSetting, count(known.Records, "record"), count(len(names), "file"), count(int(simulated.Load()), "fleet"))
	}, nil
}

// evaluationsSetting is the setting of the evaluation files Run reads.
const evaluationsSetting = runparams.Setting("evaluations")

// expandEvaluations turns the --evaluations names into files: a name
// holding *, ? or [ that is not itself a file is a glob pattern (servesim
// expands it, for containers without a shell), which must match a file.
func expandEvaluations(names []string) ([]string, error) {
	var files []string
	for _, name := range names {
		if !strings.ContainsAny(name, "*?[") {
			files = append(files, name)
			continue
		}
		if _, err := os.Stat(name); err == nil {
			files = append(files, name)
			continue
		}
		matches, err := filepath.Glob(name)
		if err != nil {
			return nil, &runparams.LateUsageError{Err: runparams.Errorf("%s %q: not a glob pattern (%v)", evaluationsSetting, name, err)}
		}
		if len(matches) == 0 {
			return nil, runparams.Errorf("%s %s: no file matches", evaluationsSetting, name)
		}
		files = append(files, matches...)
	}
	return files, nil
}

// count is "1 file", "2 files".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkLiveKVBlocks refuses, before the trace is read, a study whose
// largest fleet (--max-replicas units of the unit fleet) would hold more
// prefix-cache blocks than plant.MaxLiveKVBlocks; smaller fleets are
// simulated fewer at a time when their caches would (Capacity).
func checkLiveKVBlocks(cfg Config, unit []fleet.Group) error {
	perSize, err := fleet.Size(unit)
	if err != nil {
		return err
	}
	largest := MaxSize(cfg.MaxReplicas, perSize) * perSize
	if err := runparams.CheckLiveKVBlocks(cfg.Plant, cfg.Service.EngineOptions(cfg.Engine.Options()), largest); err != nil {
		return runparams.Errorf("%s %d: %w", runparams.Setting("max-replicas"), cfg.MaxReplicas, err)
	}
	return nil
}

// checkDisaggregated refuses, with --disaggregated, a bad link.
func (cfg *Config) checkDisaggregated() error {
	if !cfg.Disaggregated {
		return nil
	}
	return cfg.Link.Validate()
}

// disaggUnits returns the mixed study's unit fleet and, with
// --disaggregated, the two pools of the disaggregated one
// (DisaggUnit): a fleet file with roles gives the pools, and the
// mixed fleet is then its prefill group without a role.
func (cfg *Config) disaggUnits(unit []fleet.Group) (mixed, pools []fleet.Group, err error) {
	roles := fleet.Disaggregated(unit)
	if !cfg.Disaggregated {
		if roles {
			return nil, nil, runparams.Errorf("%s %s: groups of role prefill and decode need %s", runparams.Setting("fleet"), cfg.FleetPath, runparams.Setting("disaggregated"))
		}
		return unit, nil, nil
	}
	if pools, err = DisaggUnit(unit); err != nil {
		return nil, nil, err
	}
	if roles {
		m := unit[0]
		m.Name, m.Role, m.Replicas = "mixed", "", 1
		unit = []fleet.Group{m}
	}
	return unit, pools, nil
}

// runDisaggregated runs the disaggregated study into doc, its pools
// capped as disaggCap caps them, with a progress bar of its own when p
// asks for one (its total a bound: the search ends before it).
func (s *Study) runDisaggregated(ctx context.Context, doc *Document, p Progress) error {
	d := *s.disagg
	d.Search = s.Search
	d.Simulated = s.Simulated
	d.DecodeCap = disaggCap(doc.Report)
	d.Progress = nil
	if p.Bar {
		bar := progress.New(p.Stderr, "capacity --disaggregated", "simulations (at most)", d.MaxEvaluations())
		d.Progress = bar.Increment
		defer bar.Finish()
	}
	report, err := RunDisagg(ctx, s.workload.Requests, d)
	doc.Disaggregated = report
	return err
}

// disaggCap is the bound of each pool of a disaggregated search while no
// split meets the target (DisaggStudy.DecodeCap), from the mixed study
// of the same requests: twice the mixed answer's replicas, at least 4;
// with no answer, twice those of the mixed size of best attainment.
func disaggCap(mixed *Report) int {
	size := mixed.Best.Replicas
	if mixed.Replicas != nil {
		size = *mixed.Replicas
	}
	return max(4, 2*size*mixed.ReplicasPerSize)
}
