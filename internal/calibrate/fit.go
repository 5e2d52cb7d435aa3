package calibrate

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/optimize"

	"servesim/internal/cards"
)

// The GPU card parameters a latency fit can free.
const (
	ParamMemoryEfficiency   = "memory_efficiency"
	ParamComputeEfficiency  = "compute_efficiency"
	ParamIterationOverheadS = "iteration_overhead_s"
)

// ParamNames are the parameters a fit frees by default, in order.
var ParamNames = []string{ParamMemoryEfficiency, ParamComputeEfficiency, ParamIterationOverheadS}

// RunFit is one run's measured and simulated metrics under the fitted
// card, and whether the fit saw it.
type RunFit struct {
	File    string `json:"file"`
	HeldOut bool   `json:"held_out"`
	// ClockMHz is the level the run was replayed at when its GPU was
	// locked below the top (Run.ClockMHz), nil at the top.
	ClockMHz  *float64 `json:"clock_mhz"`
	Measured  Metrics  `json:"measured"`
	Simulated Metrics  `json:"simulated"`
}

// LatencyFit is a fitted GPU card and how well it fits.
type LatencyFit struct {
	// GPU is the setup's card with the fitted parameters.
	GPU cards.GPU `json:"gpu"`
	// Fitted names the parameters the fit freed; the others kept the
	// card's values.
	Fitted []string `json:"fitted"`
	// Cost is the sum over the fitted runs of the squared relative errors
	// of mean TTFT, mean TPOT and output throughput.
	Cost float64 `json:"cost"`
	// Evaluations counts the replays of the whole set of fitted runs.
	Evaluations int      `json:"evaluations"`
	Runs        []RunFit `json:"runs"`
}

// maxEvaluations bounds the evaluations of one Nelder-Mead search; a
// search that has not converged by then fails. maxRestarts bounds the
// searches of a fit, and a search that reaches a cost below exactCost is
// not restarted: the model fits the runs exactly, up to rounding.
const (
	maxEvaluations = 600
	maxRestarts    = 2
	exactCost      = 1e-12
)

// FitLatency fits the parameters named by free (ParamNames when empty) of
// setup.GPU so that replays of runs match their measured mean TTFT, mean
// TPOT and output throughput in the least-squares sense of relative
// errors, by Nelder-Mead over the parameters' transformed ranges
// (efficiencies in (0, 1], an overhead of at least 0). heldOut runs are
// replayed with the fitted card and reported, not fitted. The overhead
// and the memory efficiency are told apart only by runs at two or more
// loads (a lone request's decode costs both); a set of one load level
// cannot free both, and says so.
func FitLatency(runs, heldOut []*Run, setup *Setup, free []string) (*LatencyFit, error) {
	if len(runs) == 0 {
		return nil, errors.New("calibrate: no run to fit")
	}
	if len(free) == 0 {
		free = ParamNames
	}
	for _, name := range free {
		if !knownParam(name) {
			return nil, fmt.Errorf("calibrate: unknown parameter %q: expected %s", name, strings.Join(ParamNames, ", "))
		}
	}
	if loads := loadLevels(runs); loads < 2 && frees(free, ParamMemoryEfficiency) && frees(free, ParamIterationOverheadS) {
		return nil, fmt.Errorf("calibrate: the runs are at %d load level: %s and %s need runs at two or more request rates or concurrencies (or free one of them only)",
			loads, ParamMemoryEfficiency, ParamIterationOverheadS)
	}
	measured := make([]Metrics, len(runs))
	for i, r := range runs {
		measured[i] = r.Measured()
		if !(measured[i].MeanTTFTS > 0 && measured[i].OutputThroughput > 0) {
			return nil, fmt.Errorf("bench file %s: no completed request with a TTFT and a duration to fit on", r.File)
		}
	}
	fit := &LatencyFit{Fitted: free}
	var replayErr error
	cost := func(x []float64) float64 {
		gpu := withParams(setup.GPU, free, x)
		fit.Evaluations++
		total := 0.0
		for i, r := range runs {
			sim, err := Replay(r, setup, gpu)
			if err != nil {
				replayErr = err
				return math.Inf(1)
			}
			total += relativeCost(measured[i], sim)
		}
		return total
	}
	// Nelder-Mead's simplex can collapse short of the minimum (the
	// overhead and the memory efficiency trade off along a ridge): the
	// search restarts where it stopped, with a fresh simplex, while that
	// lowers the cost by more than a hundredth.
	result, err := search(optimize.Problem{Func: cost}, toX(setup.GPU, free), &replayErr)
	if err != nil {
		return nil, err
	}
	fit.GPU = withParams(setup.GPU, free, result.X)
	fit.Cost = result.F
	for _, set := range []struct {
		runs    []*Run
		heldOut bool
	}{{runs, false}, {heldOut, true}} {
		for _, r := range set.runs {
			sim, err := Replay(r, setup, fit.GPU)
			if err != nil {
				return nil, err
			}
			rf := RunFit{File: r.File, HeldOut: set.heldOut, Measured: r.Measured(), Simulated: sim}
			if r.ClockMHz > 0 {
				clock := r.ClockMHz
				rf.ClockMHz = &clock
			}
			fit.Runs = append(fit.Runs, rf)
		}
	}
	return fit, nil
}

// search is one Nelder-Mead search from x, restarted where it stops while
// that lowers the cost by more than a hundredth; *replayErr is a replay's
// error, which ends it.
func search(problem optimize.Problem, x []float64, replayErr *error) (*optimize.Result, error) {
	var result *optimize.Result
	for range maxRestarts {
		settings := &optimize.Settings{FuncEvaluations: maxEvaluations, Converger: &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-6, Iterations: 30}}
		next, err := optimize.Minimize(problem, x, settings, &optimize.NelderMead{SimplexSize: 0.2})
		if *replayErr != nil {
			return nil, *replayErr
		}
		if err != nil || next == nil || next.Status == optimize.FunctionEvaluationLimit {
			cost := math.NaN()
			if next != nil {
				cost = next.F
			}
			return nil, fmt.Errorf("calibrate: the fit did not converge within %d evaluations (cost %.3g): the runs disagree with the model; check that they share one GPU, model and engine", maxEvaluations, cost)
		}
		improved := result == nil || next.F < 0.99*result.F
		if result == nil || next.F < result.F {
			result, x = next, next.X
		}
		if !improved || result.F < exactCost {
			break
		}
	}
	return result, nil
}

// relativeCost is the squared relative errors of sim against measured
// mean TTFT, mean TPOT (when measured) and output throughput.
func relativeCost(measured, sim Metrics) float64 {
	sq := func(s, m float64) float64 {
		if !(m > 0) {
			return 0
		}
		e := s/m - 1
		return e * e
	}
	return sq(sim.MeanTTFTS, measured.MeanTTFTS) + sq(sim.MeanTPOTS, measured.MeanTPOTS) + sq(sim.OutputThroughput, measured.OutputThroughput)
}

// loadLevels counts the runs' distinct loads: a finite request rate, or,
// when every request is sent at once, how many run at a time (the
// concurrency cap, or all of them without one: a burst of 10 prompts is
// another load than one of 40).
func loadLevels(runs []*Run) int {
	seen := map[[2]float64]bool{}
	for _, r := range runs {
		load := [2]float64{r.RequestRate, float64(r.MaxConcurrency)}
		if math.IsInf(r.RequestRate, 1) {
			n := len(r.Requests)
			if r.MaxConcurrency > 0 {
				n = min(n, r.MaxConcurrency)
			}
			load[1] = float64(n)
		}
		seen[load] = true
	}
	return len(seen)
}

func knownParam(name string) bool { return frees(ParamNames, name) }

func frees(free []string, name string) bool {
	for _, f := range free {
		if f == name {
			return true
		}
	}
	return false
}

// The fit works on unbounded coordinates: an efficiency e in (0, 1] is
// logit(e) (clamped just below 1), an overhead o >= 0 is log(o + floor).
const (
	efficiencyCeiling = 1 - 1e-9
	overheadFloorS    = 1e-6
)

func logit(p float64) float64    { p = min(p, efficiencyCeiling); return math.Log(p / (1 - p)) }
func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// toX is the coordinates of gpu's free parameters.
func toX(gpu cards.GPU, free []string) []float64 {
	x := make([]float64, len(free))
	for i, name := range free {
		switch name {
		case ParamMemoryEfficiency:
			x[i] = logit(gpu.MemoryEfficiency)
		case ParamComputeEfficiency:
			x[i] = logit(gpu.ComputeEfficiency)
		case ParamIterationOverheadS:
			x[i] = math.Log(gpu.IterationOverheadS + overheadFloorS)
		}
	}
	return x
}

// withParams is gpu with its free parameters at the coordinates x.
func withParams(gpu cards.GPU, free []string, x []float64) cards.GPU {
	for i, name := range free {
		switch name {
		case ParamMemoryEfficiency:
			gpu.MemoryEfficiency = logistic(x[i])
		case ParamComputeEfficiency:
			gpu.ComputeEfficiency = logistic(x[i])
		case ParamIterationOverheadS:
			gpu.IterationOverheadS = max(0, math.Exp(x[i])-overheadFloorS)
		}
	}
	return gpu
}
