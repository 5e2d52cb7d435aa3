// Package fleet simulates N serving replicas behind a router: each replica
// is exactly the single-GPU plant of package plant (its own scheduler,
// clock controller, thermal state, KV cache and queue), and all of them
// step on one common time grid that starts at the fleet's first arrival
// (t = 0). A Router assigns each request, at its arrival step and in
// arrival order, to one replica.
//
// Replica k runs by the reference's rule on its own requests: it stops
// after the step in which every request routed to it has arrived and
// completed, or when the run passes MaxSimulationTimeS. Its trajectory,
// metrics and request records are therefore exactly what plant.Simulate
// (and the reference's simulate) return for the sub-list of requests
// routed to it, with their fleet-time arrivals. A replica that receives no
// request has no step: an empty trajectory, and the metrics of an empty
// run (completed_fraction 0, undefined means and rates null, zero energy,
// throughput and peaks, peak temperature at ambient).
//
// A state-free router (round-robin, random) is routed up front and the
// replicas are simulated independently and in parallel. A router that
// looks at replica state needs lock-step stepping: every step the fleet
// routes the step's arrivals on the replicas' current states, then steps
// every running replica once. SimulateStream runs a fleet on a workload
// read while it runs, with the same results (see there).
package fleet

import (
	"context"
	"errors"
	"fmt"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// MaxReplicas is the largest fleet Simulate accepts.
const MaxReplicas = 4096

// Group is a set of identical replicas.
type Group struct {
	Name        string           // group name; empty for a homogeneous fleet (--replicas)
	Replicas    int              // number of replicas, 1 to MaxReplicas (an elastic fleet's initial size)
	Profile     *profile.Profile // the replicas' service and power profile
	ProfilePath string           // where the profile was read from, for provenance
	Scheduler   string           // scheduler name, as plant.NewScheduler takes it
	Controller  string           // clock-controller spec, as plant.NewController takes it
	// Role is RolePrefill or RoleDecode in a disaggregated fleet (see
	// disagg.go); "" or RoleMixed otherwise.
	Role string
}

// Config is one fleet run.
type Config struct {
	// Plant holds the plant parameters every replica shares (time step,
	// limits, horizon, MaxSimulationTimeS); its Profile is replaced by each
	// group's.
	Plant  plant.Plant
	Groups []Group // replica groups; replicas are numbered across groups in order
	Router Router  // nil means round-robin
	// Options choose the replicas' trajectories: Stride samples them,
	// Summary keeps none. Request records are kept either way.
	plant.Options
	// Jobs caps the replicas simulated at once on the parallel path of a
	// state-free router; 0 means GOMAXPROCS.
	Jobs int
	// ControllerBuilt, when not nil, is given each replica's clock
	// controller as the replica is built, before it runs (on the parallel
	// path from several goroutines at once): a caller's way to ask a
	// controller to time its solves, and to read them afterwards.
	ControllerBuilt func(replica int, c plant.ClockController)
	// ControllerOptions are the settings of every replica's controller: an
	// exec: child's --exec-timeout and where its stderr goes.
	ControllerOptions plant.ControllerOptions
	// Scaling, when not nil, makes the fleet elastic (see Scaling): its
	// replicas are those of Groups[0], started and drained as its
	// autoscaler asks.
	Scaling *Scaling
	// Sessions, when not nil, gives the requests' sessions, which the
	// session router keeps together.
	Sessions SessionSource
	// Disaggregation is the link and decode router of a disaggregated
	// fleet (groups of role prefill and decode); nil takes the defaults.
	Disaggregation *Disaggregation
	// checksum, when not nil, gives the workload checksum of the requests
	// (RunContext's, remembered by its workload); nil computes it.
	checksum func([]plant.Request) string
	// SkipReplicaChecksums makes the replicas keep no checksum of their
	// sub-lists: their Result's WorkloadChecksum is empty (for a caller
	// that reports none, as a capacity search).
	SkipReplicaChecksums bool
	// TTFTOnly makes a streamed run (SimulateStream) keep only its
	// requests' TTFT, 8 bytes a request instead of 26, for a caller that
	// reads only the slo block's attainment and TTFT percentiles and the
	// fleet metrics of TTFT, completion, energy and power: the fleet's
	// TPOT and latency metrics and the replicas' request metrics are then
	// NaN or empty.
	TTFTOnly bool
	// StopBelowAttainment, when positive, stops a streamed run
	// (SimulateStream) of a workload of known size with a *LostError
	// once the requests it has lost put this attainment out of reach:
	// final records that missed their objectives, and requests waiting
	// longer than their TTFT objective (lossbudget.go). A caller that
	// needs to know only that such a fleet fails (a capacity search)
	// saves the rest of its run.
	StopBelowAttainment float64
}

// Result is a fleet run.
type Result struct {
	// Metrics are the fleet's: see the package README ("Fleet") and
	// fleetMetrics for the definitions.
	Metrics plant.Metrics
	// SLO is the fleet's slo block: see fleetMetrics.
	SLO      plant.SLOReport
	Router   string    // the router's Name
	Groups   []Group   // the groups of the fleet (Config.Groups)
	Replicas []Replica // one per replica, in replica order
	// Requests holds every request's record in workload order, and
	// Assignment the replica that served it (both nil from
	// SimulateStream).
	Requests   []plant.RequestRecord
	Assignment []int
	// WorkloadChecksum is the reference's workload_checksum of the whole
	// workload.
	WorkloadChecksum string
	// Steps is the length of the fleet grid: the longest replica run.
	// PowerW[t] and Queued[t] are, for step t, the summed power and
	// queued plus decoding requests of the replicas that ran it.
	Steps  int
	PowerW []float64
	Queued []int
	// Scaling is an elastic run's lifecycle, events, series and billing;
	// nil for a fixed fleet.
	Scaling *ScalingResult
	// Disaggregation is a disaggregated run's transfers and pools; nil
	// otherwise.
	Disaggregation *DisaggResult
}

// Replica is one replica's run.
type Replica struct {
	Index          int    // replica number, 0-based across groups
	Group          int    // index of its group in Config.Groups
	GroupName      string // its group's Name
	RequestsRouted int    // requests the router sent to it
	// Result is plant.Simulate's result for the requests routed to it,
	// without the request records (see Result.Requests); its
	// WorkloadChecksum is that of its sub-list, or empty under
	// Config.SkipReplicaChecksums.
	Result *plant.Result
	Totals plant.Totals // step counts, for the fleet metrics
}

// Record is a request record with the replica that served it.
type Record struct {
	plant.RequestRecord
	Replica int `json:"replica"` // replica: the replica the request was routed to
	// DecodeReplica is, in a disaggregated fleet, the decode replica its
	// KV moved to (Replica is then its prefill replica); nil (left out)
	// otherwise, or when it never reached one.
	DecodeReplica *int `json:"decode_replica,omitempty"`
}

// Records returns every request's record with its replica, in workload
// order.
func (r *Result) Records() []Record {
	out := make([]Record, len(r.Requests))
	for i := range r.Requests {
		out[i] = Record{RequestRecord: r.Requests[i], Replica: r.Assignment[i]}
		if d := r.Disaggregation; d != nil && d.DecodeReplica[i] >= 0 {
			out[i].DecodeReplica = &d.DecodeReplica[i]
		}
	}
	return out
}

// replicaSpec is one replica to build: its plant, its group and fresh
// policy instances.
type replicaSpec struct {
	group   int
	plant   plant.Plant
	options plant.ControllerOptions // Config.ControllerOptions
}

// Size returns the number of replicas of the groups, or an error naming the
// first group with an invalid count or a total past MaxReplicas.
func Size(groups []Group) (int, error) { return size(groups, 1) }

// size is Size with groups of at least least replicas: an elastic fleet's
// group may start with none (its autoscaler starts them).
func size(groups []Group, least int) (int, error) {
	if len(groups) == 0 {
		return 0, errors.New("fleet has no group")
	}
	total := 0
	for i, g := range groups {
		if g.Replicas < least || g.Replicas > MaxReplicas {
			return 0, fmt.Errorf("%s: replicas %d: expected %d to %d", groupName(i, g), g.Replicas, least, MaxReplicas)
		}
		total += g.Replicas
		if total > MaxReplicas {
			return 0, fmt.Errorf("fleet of more than %d replicas", MaxReplicas)
		}
	}
	return total, nil
}

// Simulate routes requests (sorted by arrival, unique IDs) over the fleet
// of cfg and simulates it.
func Simulate(requests []plant.Request, cfg Config) (*Result, error) {
	return SimulateContext(context.Background(), requests, cfg)
}

// SimulateContext is Simulate that stops, returning ctx's error, within
// plant.CancelCheckSteps steps of ctx being done.
func SimulateContext(ctx context.Context, requests []plant.Request, cfg Config) (*Result, error) {
	if err := plant.ValidateWorkload(requests); err != nil {
		return nil, err
	}
	specs, router, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	e := newEngine(ctx, requests, cfg, specs, router)
	if Disaggregated(cfg.Groups) {
		return e.runDisaggregated()
	}
	if cfg.Scaling != nil {
		return e.runElasticResult()
	}
	return e.run(e.runParallel)
}

// run simulates the fleet, its replicas in parallel (parallel) when the
// router needs no state of theirs, else in lock-step, and returns its
// result.
func (e *engine) run(parallel func() error) (*Result, error) {
	var err error
	if IsStateFree(e.router) && e.cfg.MaxConcurrency == 0 {
		err = parallel()
	} else {
		err = e.runLockStep()
	}
	if err != nil {
		return nil, err
	}
	return e.result(), nil
}

// prepare checks the groups of cfg and returns the replicas to build and
// the router (round-robin when cfg has none).
func prepare(cfg Config) ([]replicaSpec, Router, error) {
	least := 1
	if cfg.Scaling != nil {
		least = 0
	}
	n, err := size(cfg.Groups, least)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Scaling != nil {
		if err := cfg.Scaling.Validate(); err != nil {
			return nil, nil, err
		}
		if g := len(cfg.Scaling.Groups); (g == 0 && len(cfg.Groups) != 1) || (g > 0 && g != len(cfg.Groups)) {
			return nil, nil, fmt.Errorf("an elastic fleet of %d groups scales each on its own: Scaling.Groups has %d", len(cfg.Groups), g)
		}
		// Its replicas up at once, and the series of its counts.
		n = cfg.Scaling.mostUp() + 1
	}
	if err := plant.CheckPlantsAtOnce(cfg.Plant, cfg.Options, n); err != nil {
		return nil, nil, err
	}
	specs := make([]replicaSpec, 0, n)
	for i, g := range cfg.Groups {
		p := cfg.Plant
		p.Profile = g.Profile
		if err := p.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", groupName(i, g), err)
		}
		if _, err := plant.NewScheduler(g.Scheduler); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", groupName(i, g), err)
		}
		if _, err := plant.NewController(g.Controller); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", groupName(i, g), err)
		}
		for range g.Replicas {
			specs = append(specs, replicaSpec{group: i, plant: p, options: cfg.ControllerOptions})
		}
	}
	router := cfg.Router
	if router == nil {
		router = &RoundRobin{}
	}
	if b, ok := router.(binder); ok {
		if err := b.bind(&cfg); err != nil {
			return nil, nil, err
		}
	}
	return specs, router, nil
}

// groupName names group i in errors: "group 2" or "group 2 (name)".
func groupName(i int, g Group) string {
	if g.Name == "" {
		return fmt.Sprintf("group %d", i)
	}
	return fmt.Sprintf("group %d (%q)", i, g.Name)
}

// newStepper builds replica k's stepper with fresh policy instances.
// built, when not nil, is given its controller.
func (s replicaSpec) newStepper(g Group, opt plant.Options, capacityHint int, built func(plant.ClockController)) (*plant.Stepper, error) {
	sched, err := plant.NewScheduler(g.Scheduler)
	if err != nil {
		return nil, err
	}
	ctrl, err := plant.NewControllerWith(g.Controller, s.options)
	if err != nil {
		return nil, err
	}
	if built != nil {
		built(ctrl)
	}
	// A closed loop is the fleet's (its client sends to the router), not
	// each replica's.
	opt.MaxConcurrency = 0
	return plant.NewStepper(s.plant, sched, ctrl, opt, capacityHint)
}
