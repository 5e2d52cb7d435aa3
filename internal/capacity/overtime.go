package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// MaxWindows bounds the windows of a capacity study over time
// (capacity --over-time): each is a search of its own and a row of the
// plan.
const MaxWindows = 100_000

// TraceWindow is one window of a trace split by SplitWindows: the requests
// arriving in [StartS, EndS), requests[First:Last] of the trace.
type TraceWindow struct {
	StartS, EndS float64
	First, Last  int
}

// Requests is the number of requests arriving in the window.
func (w TraceWindow) Requests() int { return w.Last - w.First }

// WindowCountError is SplitWindows' error for a window so short that the
// trace makes more than MaxWindows of them.
type WindowCountError struct {
	WindowS, LastArrivalS float64
	Windows               int // the windows the trace would make (capped at MaxInt32)
}

func (e *WindowCountError) Error() string {
	return fmt.Sprintf("%v s windows: the trace's %v s from its first to its last arrival make %d windows, more than %d",
		e.WindowS, e.LastArrivalS, e.Windows, MaxWindows)
}

// SplitWindows splits requests (sorted by arrival, times from the first
// request) into consecutive windows [k x windowS, (k+1) x windowS) of
// arrival time, k = 0, 1, ..., up to the window of the last arrival: a
// request belongs to the window it arrives in, and a window may hold no
// request. windowS must be positive and finite; an empty trace has no
// window. More than MaxWindows windows is a *WindowCountError.
func SplitWindows(requests []plant.Request, windowS float64) ([]TraceWindow, error) {
	if !(windowS > 0 && !math.IsInf(windowS, 1)) {
		return nil, fmt.Errorf("window %v s: expected a positive finite number of seconds", windowS)
	}
	if len(requests) == 0 {
		return nil, nil
	}
	last := requests[len(requests)-1].ArrivalTimeS
	count := windowOf(last, windowS) + 1
	if count > MaxWindows {
		return nil, &WindowCountError{WindowS: windowS, LastArrivalS: last, Windows: count}
	}
	windows := make([]TraceWindow, count)
	i := 0
	for k := range windows {
		start, end := float64(k)*windowS, float64(k+1)*windowS
		first := i
		for i < len(requests) && requests[i].ArrivalTimeS < end {
			i++
		}
		windows[k] = TraceWindow{StartS: start, EndS: end, First: first, Last: i}
	}
	windows[count-1].Last = len(requests) // rounding cannot leave one out
	return windows, nil
}

// windowOf is the index of the window of length windowS that time t >= 0
// falls in, capped at math.MaxInt32: the k with k x windowS <= t < (k+1)
// x windowS, those products computed as SplitWindows computes them.
func windowOf(t, windowS float64) int {
	q := math.Floor(t / windowS)
	if q >= math.MaxInt32 {
		return math.MaxInt32
	}
	k := int(q)
	for k > 0 && float64(k)*windowS > t {
		k--
	}
	for float64(k+1)*windowS <= t {
		k++
	}
	return k
}

// PlanWindow is one window of a capacity plan: the smallest fleet
// meeting the target on the window's requests alone.
type PlanWindow struct {
	Window   int     `json:"window"`   // window: its index, from 0
	StartS   float64 `json:"start_s"`  // start_s: its start, s from the first arrival
	EndS     float64 `json:"end_s"`    // end_s: its end (excluded), s
	Requests int     `json:"requests"` // requests: the requests arriving in it
	// replicas: the plan's size for the window (of the unit fleet, as the
	// static answer): the smallest meeting the target (the search's
	// answer); 0 for a window without requests; for a window no size up to
	// max_replicas serves, the size with the best attainment
	// (meets_target false).
	Replicas    int  `json:"replicas"`
	MeetsTarget bool `json:"meets_target"` // meets_target: the size meets the target on the window
	// attainment, p99_ttft_s, energy_kwh: the window's evaluation at that
	// size (null, null and 0 without requests).
	Attainment float64 `json:"attainment"`
	P99TTFTS   float64 `json:"p99_ttft_s"`
	EnergyKWh  float64 `json:"energy_kwh"`
	// simulations: the fleet sizes the window's search simulated.
	Simulations int `json:"simulations"`
}

// Plan is a capacity study over time: per window of the trace, the
// smallest fleet meeting the target on that window's requests alone.
type Plan struct {
	WindowS float64      `json:"window_s"` // window_s: the windows' length, s
	Windows []PlanWindow `json:"windows"`  // windows: in time order
	// peak_replicas: the largest size of the plan.
	PeakReplicas int `json:"peak_replicas"`
	// unreachable_windows: windows where no size up to max_replicas meets
	// the target.
	UnreachableWindows int `json:"unreachable_windows"`
	// replica_hours: the plan's replicas (sizes x replicas_per_size)
	// times window_s, summed over the windows, / 3600.
	ReplicaHours float64 `json:"replica_hours"`
	// energy_kwh: the windows' energy at their sizes, summed.
	EnergyKWh float64 `json:"energy_kwh"`
	// replicasPerSize turns sizes into replicas in the schedule.
	replicasPerSize int
}

// UnreachableWindowsError is RunOverTime's error when some windows
// reach the target with no size up to MaxReplicas: the plan holds their
// best size. RunDisaggOverTime's, with Disaggregated, is for
// windows no disaggregated split searched serves: its plan holds their
// split of best attainment.
type UnreachableWindowsError struct {
	Windows, Of int // windows unreachable, of all windows
	Target      float64
	MaxReplicas int // the largest size searched; 0 with Disaggregated
	// Disaggregated says the windows are the disaggregated plan's (each
	// pool searched as RunDisagg searches it).
	Disaggregated bool
}

func (e *UnreachableWindowsError) Error() string {
	if e.Disaggregated {
		return fmt.Sprintf("%d of %d windows reach attainment %v with no disaggregated fleet searched: the disaggregated plan holds the split of their best attainment (meets_target false)",
			e.Windows, e.Of, e.Target)
	}
	return fmt.Sprintf("%d of %d windows reach attainment %v with no fleet of at most %d replicas: the plan holds the size of their best attainment (meets_target false)",
		e.Windows, e.Of, e.Target, e.MaxReplicas)
}

// RunOverTime splits requests (sorted by arrival, unique IDs,
// times from the first request) into windows of windowS seconds
// (SplitWindows) and runs, for each window with requests, the search of
// Run (c's router, first controller, SLO, target and unit fleet;
// no other controller, no Known evaluations) on that window's requests
// alone, their arrivals re-timed so that the window starts at 0. Each
// window starts with an empty fleet, cold and idle, and none carries a
// queue into the next: the plan is a lower bound for a fleet that changes
// size at the windows' starts, which would also start replicas (cold
// starts) and carry queues over.
//
// The windows are searched on jobs goroutines (0 means 1; with fewer
// windows than jobs, each search gets the jobs left over), each holding
// only its window's requests; the plan does not depend on jobs. progress,
// when set, is called once per window searched, never concurrently. With
// windows some no size serves, the plan comes with an
// *UnreachableWindowsError; another error of a window ends the study with
// that of the earliest window.
func RunOverTime(ctx context.Context, requests []plant.Request, c Capacity, windowS float64, jobs int, progress func()) (*Plan, error) {
	return runOverTime(ctx, requests, c, windowS, jobs, progress, nil)
}

// windowStudy is a study run on each window with requests after the
// search of its size: its index, its requests (re-timed to start at 0),
// the window's study (c of runOverTime, as the window ran it) and the
// search's report.
type windowStudy func(ctx context.Context, k int, requests []plant.Request, c Capacity, mixed *Report) error

// runOverTime is RunOverTime, running also, when set, each
// window's study after its search; an error of a window's study ends the
// study as a search's does.
func runOverTime(ctx context.Context, requests []plant.Request, c Capacity, windowS float64, jobs int, progress func(), also windowStudy) (*Plan, error) {
	windows, err := SplitWindows(requests, windowS)
	if err != nil {
		return nil, err
	}
	if len(c.Controllers) == 0 {
		return nil, errors.New("capacity: no controller given")
	}
	jobs = max(1, jobs)
	wc := c
	wc.Controllers = c.Controllers[:1]
	wc.Search.Known, wc.Search.Used = nil, nil
	wc.Search.Jobs = max(1, jobs/max(1, len(windows)))
	wc.Progress, wc.Simulated = nil, nil
	plan := &Plan{WindowS: windowS, Windows: make([]PlanWindow, len(windows)), replicasPerSize: c.perSize()}
	errs := make([]error, len(windows))
	done := make(chan struct{}, len(windows))
	finished := make(chan struct{})
	go func() {
		for range done {
			if progress != nil {
				progress()
			}
		}
		close(finished)
	}()
	forEach(len(windows), jobs, func(k int) {
		defer func() { done <- struct{}{} }()
		w := windows[k]
		row := &plan.Windows[k]
		*row = emptyWindow(k, w)
		if w.Requests() == 0 {
			return
		}
		if errs[k] = ctx.Err(); errs[k] != nil {
			return
		}
		retimed := slices.Clone(requests[w.First:w.Last])
		for i := range retimed {
			retimed[i].ArrivalTimeS -= w.StartS
		}
		report, err := Run(ctx, retimed, wc)
		var unreachable *UnreachableError
		if err != nil && !errors.As(err, &unreachable) {
			errs[k] = fmt.Errorf("window %d [%v, %v) s: %w", k, w.StartS, w.EndS, err)
			return
		}
		e, ok := report.Answer()
		if !ok {
			e = report.Best
		}
		row.Replicas, row.MeetsTarget = e.Replicas, ok
		row.Attainment, row.P99TTFTS, row.EnergyKWh = e.Attainment, e.P99TTFTS, e.EnergyKWh
		row.Simulations = len(report.Evaluations)
		if also != nil {
			if err := also(ctx, k, retimed, wc, report); err != nil {
				errs[k] = fmt.Errorf("window %d [%v, %v) s: %w", k, w.StartS, w.EndS, err)
			}
		}
	})
	close(done)
	<-finished
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	replicas := 0
	for _, w := range plan.Windows {
		plan.PeakReplicas = max(plan.PeakReplicas, w.Replicas)
		replicas += w.Replicas * plan.replicasPerSize
		plan.EnergyKWh += w.EnergyKWh
		if !w.MeetsTarget {
			plan.UnreachableWindows++
		}
	}
	plan.ReplicaHours = replicaHours(replicas, windowS)
	if plan.UnreachableWindows > 0 {
		return plan, &UnreachableWindowsError{Windows: plan.UnreachableWindows, Of: len(plan.Windows),
			Target: c.Search.Target, MaxReplicas: c.maxSize()}
	}
	return plan, nil
}

// emptyWindow is the row of window k, w, before its search: no replica,
// meeting the target, no attainment nor TTFT (a window without requests).
func emptyWindow(k int, w TraceWindow) PlanWindow {
	return PlanWindow{Window: k, StartS: w.StartS, EndS: w.EndS, Requests: w.Requests(),
		MeetsTarget: true, Attainment: math.NaN(), P99TTFTS: math.NaN()}
}

// replicaHours is replicas, summed over windows of windowS seconds, in
// hours: whole replicas summed first, so 168 x 600 s is 28 h, not
// 28.000000000000004.
func replicaHours(replicas int, windowS float64) float64 {
	return float64(replicas) * windowS / 3600
}

// PlanScheduleHeader is the header line of a schedule file (Plan.ScheduleCSV).
const PlanScheduleHeader = "start_s,replicas"

// Schedule returns the plan as a schedule: per window, its start in
// seconds from the first arrival and its replicas (the window's size times
// the replicas of the unit fleet).
func (p *Plan) Schedule() (startS []float64, replicas []int) {
	for _, w := range p.Windows {
		startS = append(startS, w.StartS)
		replicas = append(replicas, w.Replicas*max(1, p.replicasPerSize))
	}
	return startS, replicas
}

// ScheduleCSV is the plan as a schedule file, what `simulate --autoscale
// schedule:FILE` reads: the header line "start_s,replicas", then one row
// per window, its start in seconds from the trace's first arrival (the
// first 0, strictly increasing; the shortest decimal that reads back as
// the same float64, never an exponent) and its whole replica count.
func (p *Plan) ScheduleCSV() []byte { return scheduleCSV(p.Schedule()) }

// scheduleCSV writes a schedule file (Plan.ScheduleCSV) of the
// rows startS[i], replicas[i].
func scheduleCSV(startS []float64, replicas []int) []byte {
	b := []byte(PlanScheduleHeader + "\n")
	for i := range startS {
		b = strconv.AppendFloat(b, startS[i], 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(replicas[i]), 10)
		b = append(b, '\n')
	}
	return b
}

// PlanSchedule is plan as a schedule, its lines those of ScheduleCSV, its
// path label the one given.
func PlanSchedule(plan *Plan, label string) (*fleet.Schedule, error) {
	return fleet.ParseSchedule(label, plan.ScheduleCSV())
}
