package fleet

import (
	"context"
	"errors"
	"slices"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// RunConfig is one `servesim simulate` run of a fleet.
type RunConfig struct {
	// Config is the fleet; its Plant.Profile, when set, is the
	// command-line profile the provenance describes (the first group's
	// otherwise).
	Config
	// Normalize, when positive, dilates the arrivals once so that the
	// isolated maximum-clock service demand is Normalize of the fleet's
	// total capacity (plant.NormalizeFleetOfferedLoadInPlace with the
	// replica count); every group must then share one profile.
	Normalize float64
	// NormalizeInPlace lets normalization rewrite the workload's arrival
	// times instead of copying the requests.
	NormalizeInPlace bool
	// ProfilePath and Version are recorded in the provenance only.
	ProfilePath string
	Version     string
}

// Report is the document `servesim simulate` writes for a fleet: the
// fleet's metrics, the fleet (router, size, requests per replica, groups),
// every replica's run, every request's record with its replica, then the
// summary, dilation, plant and provenance of a single-GPU run.
type Report struct {
	Metrics plant.Metrics `json:"metrics"` // metrics: the fleet's (see fleetMetrics)
	// SLO is the fleet's slo block: every request judged by the objectives
	// of its replica (the document's objectives are null when those
	// differ), goodput over the fleet duration.
	SLO plant.SLOReport `json:"slo"`
	// Engine is the engine block summed over the replicas
	// (plant.SumEngineReports); nil (left out) without engine features.
	Engine *plant.EngineReport `json:"engine,omitempty"`
	// Service is the service block summed over the replicas
	// (plant.SumServiceReports); nil (left out) under the reference's
	// service model.
	Service *plant.ServiceReport `json:"service,omitempty"`
	Fleet   Info                 `json:"fleet"` // fleet: router, replica count, requests per replica, groups
	// Autoscale is an elastic fleet's block (see AutoscaleReport); nil
	// (left out) for a fixed fleet.
	Autoscale *AutoscaleReport `json:"autoscale,omitempty"`
	// Disaggregation is a disaggregated fleet's block (see DisaggResult);
	// nil (left out) otherwise.
	Disaggregation *DisaggResult    `json:"disaggregation,omitempty"`
	Replicas       []ReplicaReport  `json:"replicas"`           // replicas: one run per replica, in replica order
	Requests       []Record         `json:"requests,omitempty"` // requests: every request's record and replica, in workload order; left out with Summary
	Summary        plant.Summary    `json:"summary"`            // summary: result_summary of the fleet (controller and scheduler names of the groups joined by "+")
	Dilation       *float64         `json:"dilation"`           // dilation: the arrival dilation factor; nil without normalization
	Plant          plant.Plant      `json:"plant"`              // plant: the parameters every replica shares
	Provenance     plant.Provenance `json:"provenance"`         // provenance: identity of the inputs (the command-line profile)
	// Result is the run the report describes, for figures and tables.
	Result *Result `json:"-"`
	// LastArrivalS is the arrival of the workload's last request, after
	// normalization, s. Not part of the document.
	LastArrivalS float64 `json:"-"`
}

// Info describes the fleet.
type Info struct {
	Router         string      `json:"router"`          // router: the router's name
	Replicas       int         `json:"replicas"`        // replicas: the replica count
	RequestsRouted []int       `json:"requests_routed"` // requests_routed: requests routed to each replica
	Groups         []GroupInfo `json:"groups"`          // groups: the replica groups, in order
}

// GroupInfo describes one group of replicas.
type GroupInfo struct {
	Name             string `json:"name"`               // name: the group's name
	Replicas         int    `json:"replicas"`           // replicas: its replica count
	ProfilePath      string `json:"profile_path"`       // profile_path: its profile CSV as given (the embedded profile's name for it)
	ProfileCSVSHA256 string `json:"profile_csv_sha256"` // profile_csv_sha256: SHA-256 hex of its profile CSV
	ProfileStatus    string `json:"profile_status"`     // profile_status: its profile's status
	Scheduler        string `json:"scheduler"`          // scheduler: its scheduler, as --scheduler names it
	Controller       string `json:"controller"`         // controller: its controller, as --controller names it
}

// ReplicaReport is one replica's run.
type ReplicaReport struct {
	Replica        int           `json:"replica"`         // replica: the replica number, 0-based
	Group          string        `json:"group"`           // group: its group's name
	ProfileStatus  string        `json:"profile_status"`  // profile_status: its profile's status
	ControllerName string        `json:"controller_name"` // controller_name: its controller's name
	SchedulerName  string        `json:"scheduler_name"`  // scheduler_name: its scheduler's name
	RequestsRouted int           `json:"requests_routed"` // requests_routed: requests routed to it
	Metrics        plant.Metrics `json:"metrics"`         // metrics: its own metrics, the reference's for its requests
	// SLO is its own slo block, as a single-GPU document has it.
	SLO plant.SLOReport `json:"slo"`
	// MPCDiagnostics are its controller's mpc_diagnostics (mpc); nil (left
	// out) for the other controllers.
	MPCDiagnostics *plant.MPCDiagnostics `json:"mpc_diagnostics,omitempty"`
	// Engine is its own engine block; nil (left out) without engine
	// features.
	Engine *plant.EngineReport `json:"engine,omitempty"`
	// Service is its own service block; nil (left out) under the
	// reference's service model.
	Service *plant.ServiceReport `json:"service,omitempty"`
	// The trajectory as a single-GPU document has it (time_s ... phase),
	// left out with Summary or when the replica has no step.
	plant.Trajectory
}

// Run normalizes w if asked, simulates the fleet and returns the report.
func Run(w plant.Workload, cfg RunConfig) (*Report, error) {
	return RunContext(context.Background(), w, cfg)
}

// RunContext is Run that stops, returning ctx's error, soon after ctx is
// done (SimulateContext).
func RunContext(ctx context.Context, w plant.Workload, cfg RunConfig) (*Report, error) {
	requests := w.Requests
	var dilation *float64
	if cfg.Normalize != 0 {
		n, prof, err := cfg.normalizedFleet()
		if err != nil {
			return nil, err
		}
		if !cfg.NormalizeInPlace {
			requests = slices.Clone(requests)
		}
		factor, err := plant.NormalizeFleetOfferedLoadInPlace(requests, prof, cfg.Normalize, n)
		if err != nil {
			return nil, err
		}
		dilation = &factor
	}
	sim := cfg.Config
	if !(dilation != nil && cfg.NormalizeInPlace) {
		sim.checksum = func(asRun []plant.Request) string { return w.Checksum(dilation, asRun) }
	}
	res, err := SimulateContext(ctx, requests, sim)
	if err != nil {
		return nil, err
	}
	r := newReport(res, dilation, w, cfg)
	r.LastArrivalS = requests[len(requests)-1].ArrivalTimeS
	return r, nil
}

// RunStreamContext is RunContext for a workload read while it runs
// (SimulateStream, whose conditions apply: Options.Summary), with the same
// report. With Normalize the workload is read twice: first for the
// dilation factor, then to simulate it. NormalizeInPlace is irrelevant
// here.
func RunStreamContext(ctx context.Context, src plant.WorkloadSource, cfg RunConfig) (*Report, error) {
	n, prof := 0, cfg.Plant.Profile
	if cfg.Normalize != 0 {
		var err error
		if n, prof, err = cfg.normalizedFleet(); err != nil {
			return nil, err
		}
	}
	ws, err := plant.OpenWorkloadStream(ctx, src, cfg.Normalize, prof, n)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	res, err := SimulateStream(ctx, ws, cfg.Config)
	if err != nil {
		return nil, err
	}
	// The stream has ended: its identity, count and last arrival are
	// final.
	w := ws.Workload()
	r := newReport(res, ws.Dilation(), w, cfg)
	r.Provenance.RequestsLoaded = ws.Loaded()
	r.LastArrivalS = ws.LastArrivalS()
	return r, nil
}

// normalizedFleet returns the replica count and the one profile of a fleet
// to normalize, or an error when its groups have several profiles.
func (cfg *RunConfig) normalizedFleet() (int, *profile.Profile, error) {
	n, err := Size(cfg.Groups)
	if err != nil {
		return 0, nil, err
	}
	prof := cfg.Groups[0].Profile
	for _, g := range cfg.Groups {
		if g.Profile != prof {
			return 0, nil, errors.New("normalize needs a fleet of one profile")
		}
	}
	return n, prof, nil
}

// newReport is the report of fleet run res of cfg on workload w, its
// arrivals dilated by dilation (nil without normalization).
func newReport(res *Result, dilation *float64, w plant.Workload, cfg RunConfig) *Report {
	prof := cfg.Plant.Profile
	if prof == nil {
		prof = cfg.Groups[0].Profile
	}
	r := &Report{
		Metrics:    res.Metrics,
		SLO:        res.SLO,
		Fleet:      Info{Router: res.Router, Replicas: len(res.Replicas)},
		Dilation:   dilation,
		Plant:      cfg.Plant,
		Provenance: plant.NewProvenance(prof, cfg.ProfilePath, w, cfg.Version, nil),
		Result:     res,
	}
	var controllers, schedulers, statuses []string
	for _, g := range cfg.Groups {
		r.Fleet.Groups = append(r.Fleet.Groups, GroupInfo{
			Name: g.Name, Replicas: g.Replicas, ProfilePath: g.ProfilePath,
			ProfileCSVSHA256: g.Profile.ProfileCSVSHA256, ProfileStatus: g.Profile.Status,
			Scheduler: g.Scheduler, Controller: g.Controller,
		})
	}
	var engines []*plant.EngineReport
	var services []*plant.ServiceReport
	for _, rep := range res.Replicas {
		r.Fleet.RequestsRouted = append(r.Fleet.RequestsRouted, rep.RequestsRouted)
		r.Replicas = append(r.Replicas, ReplicaReport{
			Replica:        rep.Index,
			Group:          rep.GroupName,
			ProfileStatus:  rep.Result.ProfileStatus,
			ControllerName: rep.Result.ControllerName,
			SchedulerName:  rep.Result.SchedulerName,
			RequestsRouted: rep.RequestsRouted,
			Metrics:        rep.Result.Metrics,
			SLO:            rep.Result.SLO,
			MPCDiagnostics: rep.Result.MPCDiagnostics,
			Engine:         rep.Result.Engine,
			Service:        rep.Result.Service,
			Trajectory:     rep.Result.Trajectory,
		})
		engines = append(engines, rep.Result.Engine)
		services = append(services, rep.Result.Service)
		controllers = appendNew(controllers, rep.Result.ControllerName)
		schedulers = appendNew(schedulers, rep.Result.SchedulerName)
		statuses = appendNew(statuses, rep.Result.ProfileStatus)
	}
	if res.Scaling != nil {
		r.Autoscale = newAutoscaleReport(res, cfg.Summary)
	}
	r.Disaggregation = res.Disaggregation
	r.Engine = plant.SumEngineReports(engines)
	r.Service = plant.SumServiceReports(services)
	if !cfg.Summary {
		r.Requests = res.Records()
	}
	r.Summary = plant.Summary{
		Controller:       strings.Join(controllers, "+"),
		Scheduler:        strings.Join(schedulers, "+"),
		ProfileStatus:    strings.Join(statuses, "+"),
		WorkloadChecksum: res.WorkloadChecksum,
		Metrics:          res.Metrics,
	}
	return r
}

// appendNew appends s unless list holds it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Thin samples the replicas' trajectories at stride, or drops them and the
// request records with summary: the document a run with those options
// writes. The replicas' trajectories must hold every step (a run with
// stride 1 and no summary): a caller that draws every step and writes a
// thinner document runs the fleet once.
func (r *Report) Thin(stride int, summary bool) {
	for i := range r.Replicas {
		if summary {
			r.Replicas[i].Trajectory = plant.Trajectory{}
			continue
		}
		r.Replicas[i].Trajectory = r.Replicas[i].Trajectory.Resample(stride)
	}
	if summary {
		r.Requests = nil
	}
	if a := r.Autoscale; a != nil && a.Trajectory != nil {
		if summary {
			a.Trajectory = nil
		} else {
			t := a.Trajectory.Resample(stride)
			a.Trajectory = &t
		}
	}
}
