// Package sweeprun is servesim's sweep of simulate runs: the grid of the
// sweep's flags with every value parsed and checked before anything runs
// (New, Plan), the profiles and traces loaded once, each cell run as the
// same simulate --summary would run it, its record, the grid's identity
// (grid_sha256), the records of --resume checked against it, and a sweep
// stopped by a signal keeping what it wrote (Run). The grid itself, the
// parallel runner, the records and the Pareto front are package sweep's.
package sweeprun

import (
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
	"servesim/internal/trace"
)

// Config is a sweep as its flags give it.
type Config struct {
	// Profiles and Traces are paths; runparams.Embedded names the built-in
	// profile or trace.
	Profiles, Traces []string
	// Trace says how to read the trace files (its Options parsed); Stdin
	// is what "-" reads.
	Trace trace.Flags
	Stdin io.Reader
	// Schedulers and Controllers are specs as simulate takes them;
	// Normalize utilizations, "none" for the raw trace.
	Schedulers, Controllers, Normalize []string
	// ServiceModels are the service models (--service-model), an axis of
	// the sweep when it has more than one or the batched one; none means
	// the reference's.
	ServiceModels []string
	// Service holds the other service flags (its Kind is not read): one
	// card pair and one set of limits for every batched run.
	Service runparams.Service
	// PlantAxes holds the values of every plant flag given, by flag name.
	PlantAxes   map[string][]string
	MaxElapsedS float64
	MaxSteps    float64
	// ExecTimeoutS is the patience with exec: controllers.
	ExecTimeoutS float64
	// SLO holds the objectives of --ttft-slo, --tpot-slo and --e2e-slo
	// (zero: not given): every run is judged by them (plant.Options.SLO,
	// as simulate's), and the TTFT and TPOT ones (else each profile's)
	// pick the best configuration.
	SLO plant.SLO
	// Engine holds the engine feature flags, the same for every run.
	Engine runparams.Engine
	// Version is the servesim version runs record.
	Version string
	// Name names the settings in the errors a run's record holds
	// (runparams.Named: as the command's flags); nil leaves them bare.
	Name func(runparams.Setting) string
}

// Sweep is a checked sweep: its axes, their parsed values and, once
// planned, the shard this process runs.
type Sweep struct {
	cfg   Config
	axes  []sweep.Axis
	grid  *sweep.Grid
	shard sweep.Shard
}

// New checks the SLOs, parses every axis value of cfg and checks the plant
// values and the work of the longest run, before anything runs. Its errors
// name the setting (*runparams.FieldError).
func New(cfg Config) (*Sweep, error) {
	if err := runparams.CheckSLOValues(cfg.SLO); err != nil {
		return nil, err
	}
	s := &Sweep{cfg: cfg, axes: []sweep.Axis{
		{Name: sweep.AxisProfile, Values: cfg.Profiles},
		{Name: sweep.AxisTrace, Values: cfg.Traces},
		{Name: sweep.AxisScheduler, Values: cfg.Schedulers},
		{Name: sweep.AxisController, Values: cfg.Controllers},
		{Name: sweep.AxisNormalize, Values: cfg.Normalize},
	}}
	if serviceAxis(cfg.ServiceModels) {
		s.axes = append(s.axes, sweep.Axis{Name: AxisServiceModel, Values: cfg.ServiceModels})
	}
	for _, pp := range runparams.Params {
		if values, ok := cfg.PlantAxes[pp.Name]; ok {
			s.axes = append(s.axes, sweep.Axis{Name: pp.Name, Values: values})
		}
	}
	for _, a := range s.axes {
		if len(a.Values) == 0 {
			return nil, runparams.Errorf("%s: expected at least one value", runparams.Setting(a.Name))
		}
	}
	var err error
	if s.grid, err = sweep.NewGrid(s.axes, parseAxisValue); err != nil {
		return nil, err
	}
	if err := s.checkPlantValues(); err != nil {
		return nil, err
	}
	if err := s.checkWork(); err != nil {
		return nil, err
	}
	return s, nil
}

// AxisServiceModel is the axis of --service-model, a record's
// service_model.
const AxisServiceModel = "service-model"

// serviceAxis reports whether the service models make an axis: more than
// one, or the batched one. A sweep of the reference's model alone has
// none, so that its records and its grid_sha256 are those of a sweep from
// before the service models.
func serviceAxis(models []string) bool {
	return len(models) > 1 || len(models) == 1 && models[0] != plant.ServiceReference
}

// axisKey is the output name of a sweep axis: service_model, else
// runparams.AxisKey's.
func axisKey(axis string) string {
	if axis == AxisServiceModel {
		return plant.FieldServiceModel
	}
	return runparams.AxisKey(axis)
}

// named is err with its settings named as Config.Name names them, for
// the record of a failed run; nil stays nil.
func (s *Sweep) named(err error) error {
	if err == nil || s.cfg.Name == nil {
		return err
	}
	return runparams.Named(err, s.cfg.Name)
}

// batched reports whether the grid runs the batched service model.
func (s *Sweep) batched() bool {
	return slices.Contains(s.grid.Values(AxisServiceModel), any(plant.ServiceBatched))
}

// Plan picks the i-th of n shards of the grid (1 of 1: the whole grid),
// refusing one of more than maxCells runs with an error naming the axes'
// settings, their lengths and max-cells.
func (s *Sweep) Plan(i, n, maxCells int) error {
	var err error
	s.shard, err = sweep.Plan(s.axes, i, n, maxCells)
	var le *sweep.LimitError
	if !errors.As(err, &le) {
		return err
	}
	// The grid of the axes, each a setting: "the grid of %s x %s = 2 cells".
	grid := "the grid of " + strings.Repeat(" x %s", len(s.axes))[len(" x "):] + " = %s"
	args := make([]any, 0, len(s.axes)+1)
	for _, a := range s.axes {
		args = append(args, runparams.Setting(a.Name))
	}
	args = append(args, le.Grid())
	maxCellsSetting := runparams.Setting("max-cells")
	switch {
	case le.Max == 0:
		return runparams.Errorf("sweep: "+grid+": more than a sweep can index (%.2g)", append(args, float64(math.MaxInt))...)
	case le.ShardCount > 1:
		return runparams.Errorf("sweep: shard %d/%d of "+grid+" holds %d runs: more than %s %d (raise %s or use more shards)",
			append(append([]any{le.Shard, le.ShardCount}, args...), le.ShardCells, maxCellsSetting, le.Max, maxCellsSetting)...)
	}
	return runparams.Errorf("sweep: "+grid+": more than %s %d (raise %s or run it in shards with %s I/N)", append(args, maxCellsSetting, le.Max, maxCellsSetting, runparams.Setting("shard"))...)
}

// Shard is the planned shard: the axes in grid order and the cells this
// process runs.
func (s *Sweep) Shard() sweep.Shard { return s.shard }

// parseAxisValue parses one value of a named axis, once: a path (profile,
// trace), a scheduler name or controller spec that builds, a utilization
// (normalize: 0 for none), a service model's name or a plant flag's
// number.
func parseAxisValue(axis, v string) (any, error) {
	switch axis {
	case sweep.AxisProfile, sweep.AxisTrace:
		if v == "" {
			return nil, runparams.Errorf("%s: expected a path or %s, got an empty value", runparams.Setting(axis), runparams.Embedded)
		}
		return v, nil
	case sweep.AxisScheduler:
		if _, err := plant.NewScheduler(v); err != nil {
			return nil, runparams.Errorf("%s: %w", runparams.Setting("scheduler"), err)
		}
		return v, nil
	case sweep.AxisController:
		if _, err := plant.NewController(v); err != nil {
			return nil, runparams.Errorf("%s: %w", runparams.Setting("controller"), err)
		}
		return v, nil
	case sweep.AxisNormalize:
		return parseNormalize(v)
	case AxisServiceModel:
		if !slices.Contains(plant.ServiceModelNames, v) {
			return nil, runparams.Errorf("%s %q: expected %s", runparams.Setting("service-model"), v, strings.Join(plant.ServiceModelNames, " or "))
		}
		return v, nil
	}
	pp, _ := runparams.ByName(axis)
	x, err := pp.ParseValue(v)
	if err != nil {
		return nil, runparams.Errorf("%s %w", runparams.Setting(axis), err)
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
		return 0, runparams.Errorf("%s %q: expected none or a utilization strictly between 0 and 1", runparams.Setting("normalize"), v)
	}
	return u, nil
}

// checkPlantValues validates every plant value given against the plant's
// rules (with the other parameters at their defaults), so an impossible
// value fails before anything runs.
func (s *Sweep) checkPlantValues() error {
	for _, pp := range runparams.Params {
		for k, x := range s.grid.Values(pp.Name) {
			p := plant.NewPlant(profile.Default())
			_ = pp.Set(&p, x.(float64))
			if err := p.Validate(); err != nil {
				return runparams.Errorf("%s %s: %w", runparams.Setting(pp.Name), s.cfg.PlantAxes[pp.Name][k], err)
			}
		}
	}
	return nil
}

// checkWork refuses a sweep whose longest run (the largest --max-sim-time
// over the smallest --time-step) could take more steps than --max-steps.
// It runs after checkPlantValues, so every value parses and is positive.
func (s *Sweep) checkWork() error {
	p := plant.NewPlant(nil)
	extreme := func(flag string, field *float64, pick func(a, b float64) float64) {
		for i, v := range s.grid.Values(flag) {
			x := v.(float64)
			if i == 0 {
				*field = x
			}
			*field = pick(*field, x)
		}
	}
	extreme("time-step", &p.TimeStepS, math.Min)
	extreme(axisMaxSimTime, &p.MaxSimulationTimeS, math.Max)
	return runparams.CheckWork(p, plant.Options{Summary: true, MaxSteps: s.cfg.MaxSteps}, false)
}
