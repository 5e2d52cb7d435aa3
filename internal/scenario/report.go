package scenario

import (
	"fmt"
	"math/big"

	"servesim/internal/jsonout"
)

// Fixed texts of the reference's report.
const (
	// Experiment names the report.
	Experiment = "synthetic-arrival-and-goodput-scenarios"
	// ExecutionMode says what was executed.
	ExecutionMode = "CPU simulation; arbitrary scenario coefficients, no serving engine executed"
)

// Workload names of the fixed diagnostics.
const (
	overbatchedWorkload = "overbatched-tail-violation"
	closedLoopWorkload  = "closed-loop-illusion"
	overbatchedRPS      = 15.0
)

// SLOTargets are the SLO thresholds a report used.
type SLOTargets struct {
	TTFTSLOMilliseconds float64 `json:"ttft_slo_ms"` // time-to-first-token threshold
	TPOTSLOMilliseconds float64 `json:"tpot_slo_ms"` // time-per-output-token threshold
}

// Diagnostics are the report's two fixed illustrations, computed the same
// way whatever the report's trace, profiles and settings.
type Diagnostics struct {
	// OverbatchedUnbounded replays the agent trace at 15 requests/s against
	// a 48-slot profile whose TPOT breaks the SLO.
	OverbatchedUnbounded BenchmarkSummary `json:"overbatched_unbounded"`
	// ClosedLoopBaseline replays the default agent trace against the
	// baseline profile in closed loop, which hides the queueing.
	ClosedLoopBaseline BenchmarkSummary `json:"closed_loop_baseline"`
}

// Report is the reference main's report. ScenarioAssumptions and
// ScenarioComparisons are in profile order; their names are unique.
type Report struct {
	Experiment          string             // experiment: the constant Experiment
	ExecutionMode       string             // execution_mode: the constant ExecutionMode
	ScenarioAssumptions []EngineProfile    // scenario_assumptions: the engine profiles replayed
	SLOTargets          SLOTargets         // slo_targets: the SLO thresholds used
	TraceRequests       int                // trace_requests: requests in the replayed trace
	ScenarioComparisons []BenchmarkSummary // scenario_comparisons: one summary per profile
	Diagnostics         Diagnostics        // diagnostics: the reference's fixed diagnostic replays
}

// Document is the report as the reference prints it (scenarios' JSON),
// keys in its order: the profiles and the comparisons are objects keyed by
// engine name, in profile order.
func (r Report) Document() any {
	assumptions := make(jsonout.Object, len(r.ScenarioAssumptions))
	for i, p := range r.ScenarioAssumptions {
		assumptions[i] = jsonout.Member{Key: p.Name, Value: p}
	}
	comparisons := make(jsonout.Object, len(r.ScenarioComparisons))
	for i, c := range r.ScenarioComparisons {
		comparisons[i] = jsonout.Member{Key: c.Engine, Value: c}
	}
	return struct {
		ExecutionMode       string         `json:"execution_mode"`
		Experiment          string         `json:"experiment"`
		ScenarioAssumptions jsonout.Object `json:"scenario_assumptions"`
		SLOTargets          SLOTargets     `json:"slo_targets"`
		TraceRequests       int            `json:"trace_requests"`
		ScenarioComparisons jsonout.Object `json:"scenario_comparisons"`
		Diagnostics         Diagnostics    `json:"diagnostics"`
	}{r.ExecutionMode, r.Experiment, assumptions, r.SLOTargets, r.TraceRequests, comparisons, r.Diagnostics}
}

// DefaultReport is exactly the reference main's report: the built-in
// profiles on the default agent trace with the default settings.
func DefaultReport() (Report, error) {
	trace, err := BuildAgentTrace(DefaultAgentRequests, big.NewInt(DefaultAgentSeed), DefaultAgentRPS)
	if err != nil {
		return Report{}, err
	}
	return BuildReport(trace, BuiltinProfiles(), DefaultBenchmarkOptions())
}

// BuildReport replays trace against each profile with opts and adds the
// fixed diagnostics. Profile names must be unique.
func BuildReport(trace []WorkloadRequest, profiles []EngineProfile, opts BenchmarkOptions) (Report, error) {
	if len(profiles) == 0 {
		return Report{}, fmt.Errorf("no engine profiles")
	}
	seen := make(map[string]bool, len(profiles))
	comparisons := make([]BenchmarkSummary, len(profiles))
	for i, p := range profiles {
		if seen[p.Name] {
			return Report{}, fmt.Errorf("profile %q: name: used twice", p.Name)
		}
		seen[p.Name] = true
		summary, err := EvaluateEngineBenchmark(trace, p, opts)
		if err != nil {
			return Report{}, err
		}
		comparisons[i] = summary
	}
	diagnostics, err := fixedDiagnostics()
	if err != nil {
		return Report{}, err
	}
	return Report{
		Experiment:          Experiment,
		ExecutionMode:       ExecutionMode,
		ScenarioAssumptions: profiles,
		SLOTargets:          SLOTargets{TTFTSLOMilliseconds: opts.TTFTSLOMilliseconds, TPOTSLOMilliseconds: opts.TPOTSLOMilliseconds},
		TraceRequests:       len(trace),
		ScenarioComparisons: comparisons,
		Diagnostics:         diagnostics,
	}, nil
}

// fixedDiagnostics computes the reference main's diagnostics section.
func fixedDiagnostics() (Diagnostics, error) {
	seed := big.NewInt(DefaultAgentSeed)
	overbatchedTrace, err := BuildAgentTrace(DefaultAgentRequests, seed, overbatchedRPS)
	if err != nil {
		return Diagnostics{}, err
	}
	opts := DefaultBenchmarkOptions()
	opts.WorkloadName = overbatchedWorkload
	overbatched, err := EvaluateEngineBenchmark(overbatchedTrace, overbatchedProfile, opts)
	if err != nil {
		return Diagnostics{}, err
	}
	trace, err := BuildAgentTrace(DefaultAgentRequests, seed, DefaultAgentRPS)
	if err != nil {
		return Diagnostics{}, err
	}
	opts = DefaultBenchmarkOptions()
	opts.WorkloadName = closedLoopWorkload
	opts.ClosedLoop = true
	closedLoop, err := EvaluateEngineBenchmark(trace, BuiltinProfiles()[0], opts)
	if err != nil {
		return Diagnostics{}, err
	}
	return Diagnostics{OverbatchedUnbounded: overbatched, ClosedLoopBaseline: closedLoop}, nil
}
