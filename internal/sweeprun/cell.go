package sweeprun

import (
	"context"
	"errors"
	"fmt"
	"io"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
	"servesim/internal/trace"
	"servesim/internal/workload"
)

// inputs are the profiles and traces of a sweep, each loaded once and
// shared by the runs; a path that fails to load fails only its runs.
type inputs struct {
	profiles     map[string]*profile.Profile
	profileErrs  map[string]error
	workloads    map[string]plant.Workload
	workloadErrs map[string]error
	// hashIDs are the block hash ids of the Mooncake traces.
	hashIDs map[string]plant.HashIDSource
	// service is the batched service model, when the grid runs it.
	service *batchedService
	// held is the requests of the traces loaded; overHeld, when not nil,
	// is why the traces together hold more than plant.MaxHeldRequests,
	// which refuses the whole sweep.
	held     int
	overHeld error
}

// batchedService is the batched service model of a sweep, its cards read
// once and shared by its runs.
type batchedService struct {
	// flags are the service flags resolved (runparams.Service.Resolve):
	// their Model and EngineOptions.
	flags runparams.Service
	// kvTokens is the KV capacity the cards leave: a run's unless the
	// sweep has a --kv-capacity.
	kvTokens float64
	// err is why the cards cannot serve (a card file that does not read,
	// weights that do not fit): it fails every batched run.
	err error
}

// resolveService reads the cards of the batched service model.
func (s *Sweep) resolveService() *batchedService {
	b := &batchedService{flags: s.cfg.Service}
	b.flags.Kind = plant.ServiceBatched
	var p plant.Plant
	if b.err = b.flags.Resolve(&p); b.err == nil {
		b.kvTokens, b.err = b.flags.Model().KVCapacityTokens()
	}
	return b
}

// load reads every profile and trace of the sweep.
func (s *Sweep) load() *inputs {
	in := &inputs{
		profiles: map[string]*profile.Profile{}, profileErrs: map[string]error{},
		workloads: map[string]plant.Workload{}, workloadErrs: map[string]error{},
		hashIDs: map[string]plant.HashIDSource{},
	}
	for _, path := range s.cfg.Profiles {
		if path == runparams.Embedded {
			in.profiles[path] = profile.Default()
		} else if p, err := profile.Load(profile.ResolvePath(path)); err != nil {
			in.profileErrs[path] = err
		} else {
			in.profiles[path] = p
		}
	}
	for _, path := range s.cfg.Traces {
		var w plant.Workload
		var err error
		if path == runparams.Embedded {
			w, err = plant.DefaultTrace(s.cfg.MaxElapsedS)
		} else {
			var t *trace.Trace
			opt := s.cfg.Trace.Options
			opt.MaxRequests = workload.MaxHeldRequests - in.held
			src := &trace.Source{Path: path, Stdin: s.cfg.Stdin, MaxElapsedS: s.cfg.MaxElapsedS, Options: opt}
			var tooMany *trace.TooManyRequestsError
			if t, err = src.Load(); errors.As(err, &tooMany) {
				in.overHeld = runparams.Errorf("%s: the %d traces hold more than %d requests together, the most servesim holds at once (%v); run the sweep on fewer traces at a time, or shorten them with %s",
					runparams.Setting("trace"), len(s.cfg.Traces), workload.MaxHeldRequests, err, runparams.Setting("max-elapsed"))
				return in
			}
			if err == nil {
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
			in.held += len(w.Requests)
		}
	}
	if s.batched() {
		in.service = s.resolveService()
	}
	return in
}

// cellsAtOnce is how many runs of the sweep may be under way at once
// within plant.MaxLiveKVBlocks: the prefix cache of its largest cell (the
// largest --kv-capacity, or the batched cards' KV capacity) decides.
func (s *Sweep) cellsAtOnce(in *inputs) int {
	p := plant.NewPlant(nil)
	if in.service != nil && in.service.err == nil {
		p.KVCapacityTokens = max(p.KVCapacityTokens, in.service.kvTokens)
	}
	if s.grid.Has(axisKVCapacity) {
		p.KVCapacityTokens = 0
		for _, v := range s.grid.Values(axisKVCapacity) {
			p.KVCapacityTokens = max(p.KVCapacityTokens, v.(float64))
		}
	}
	return plant.PlantsAtOnce(p, s.cfg.Engine.Options())
}

// axisKVCapacity is the --kv-capacity axis.
const axisKVCapacity = "kv-capacity"

// outcome is the outcome of one cell.
type outcome struct {
	report *plant.Report
	err    error
}

// runCell runs the simulate configuration of one cell; an exec: controller
// runs a child of its own, its stderr going to execStderr. A batched cell
// runs on the cards' KV capacity unless the sweep has a --kv-capacity, and
// with the batched model's engine options (Service.EngineOptions).
func (s *Sweep) runCell(ctx context.Context, in *inputs, c sweep.Cell, execStderr io.Writer) outcome {
	profilePath := s.grid.Parsed(c, sweep.AxisProfile).(string)
	tracePath := s.grid.Parsed(c, sweep.AxisTrace).(string)
	if err := in.profileErrs[profilePath]; err != nil {
		return outcome{err: err}
	}
	if err := in.workloadErrs[tracePath]; err != nil {
		return outcome{err: err}
	}
	prof := in.profiles[profilePath]
	p := plant.NewPlant(prof)
	options := plant.Options{Summary: true, MaxSteps: s.cfg.MaxSteps, SLO: s.cfg.SLO, Engine: s.cfg.Engine.OptionsFor(in.hashIDs[tracePath])}
	if s.grid.Has(AxisServiceModel) && s.grid.Parsed(c, AxisServiceModel) == plant.ServiceBatched {
		b := in.service
		if b.err != nil {
			return outcome{err: b.err}
		}
		p.KVCapacityTokens = b.kvTokens // a --kv-capacity axis sets it again below
		options.Service, options.Engine = b.flags.Model(), b.flags.EngineOptions(options.Engine)
	}
	for _, pp := range runparams.Params {
		if s.grid.Has(pp.Name) {
			_ = pp.Set(&p, s.grid.Parsed(c, pp.Name).(float64))
		}
	}
	if err := p.Validate(); err != nil {
		return outcome{err: fmt.Errorf("plant: %w", runparams.FieldNamed(err))}
	}
	sched, _ := plant.NewScheduler(s.grid.Parsed(c, sweep.AxisScheduler).(string))
	ctrl, _ := plant.NewControllerWith(s.grid.Parsed(c, sweep.AxisController).(string), runparams.ControllerOptions(s.cfg.ExecTimeoutS, execStderr))
	normalize := s.grid.Parsed(c, sweep.AxisNormalize).(float64)
	recordedPath := profilePath
	if profilePath == runparams.Embedded {
		recordedPath = profile.EmbeddedPath
	}
	report, err := plant.RunContext(ctx, in.workloads[tracePath], plant.Config{
		Plant:       p,
		Scheduler:   sched,
		Controller:  ctrl,
		Normalize:   normalize,
		Options:     options,
		ProfilePath: recordedPath,
		Version:     s.cfg.Version,
	})
	return outcome{report: report, err: err}
}

// record is the record of cell c's outcome r: with its run's summary, slo
// block and mpc_diagnostics. The TTFT and TPOT SLOs it is judged by are
// the flags', else its profile's when it ran, else none. Its error names
// the settings as Config.Name does.
func (s *Sweep) record(in *inputs, c sweep.Cell, r outcome) sweep.Record {
	rec := sweep.Record{Cell: c, Axes: sweep.CellAxes(s.grid, c, axisKey), Err: s.named(r.err),
		TTFTSLOSeconds: s.cfg.SLO.TTFTSeconds, TPOTSLOSeconds: s.cfg.SLO.TPOTSeconds}
	if w, ok := in.workloads[s.grid.Text(c, sweep.AxisTrace)]; ok {
		rec.TraceSHA = w.SHA256
	}
	if p, ok := in.profiles[s.grid.Text(c, sweep.AxisProfile)]; ok {
		rec.ProfileCSVSHA, rec.ManifestSHA = p.ProfileCSVSHA256, p.ManifestSHA256
	}
	if r.report != nil {
		summary, slo := r.report.Summary, r.report.SLO
		rec.Summary, rec.SLO, rec.MPCDiagnostics = &summary, &slo, r.report.MPCDiagnostics
		rec.TTFTSLOSeconds, rec.TPOTSLOSeconds = slo.TTFTSLOSeconds, slo.TPOTSLOSeconds
	}
	return rec
}
