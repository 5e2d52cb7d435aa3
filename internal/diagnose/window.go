package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"servesim/internal/numeric"
)

// WindowReport is a log diagnosed window by window: the snapshots of the
// non-empty windows in time order, and the name of the window with the
// highest p99 end-to-end latency (the earliest one on a tie).
type WindowReport struct {
	Windows     []Diagnosis `json:"windows"`      // diagnoses of the non-empty windows, in time order
	WorstWindow string      `json:"worst_window"` // window_name of the snapshot with the highest p99_e2e_ms
	// The empty windows between them, for the figure (not part of the
	// document): each run of them, and how windows are named.
	empty   []emptyRun
	base    string
	lengthS float64
	kind    ArrivalKind
}

// emptyRun is a run of count empty windows from window index first, just
// before the snapshot Windows[before].
type emptyRun struct {
	before       int
	first, count int64
}

// maxWindowIndex bounds a window's index so that its start is exact.
const maxWindowIndex = 1 << 53

// Windower splits requests into consecutive windows of a fixed length by
// arrival time. Windows are aligned to multiples of the length (from zero
// seconds, or from the Unix epoch for timestamps, so 60 s windows are clock
// minutes); a request arriving at t belongs to window floor(t/length).
type Windower struct {
	lengthS float64
	kind    ArrivalKind
	windows map[int64]*Accumulator
}

// NewWindower returns a Windower for windows of lengthS seconds (positive).
func NewWindower(lengthS float64) (*Windower, error) {
	if !(lengthS > 0) || math.IsInf(lengthS, 0) {
		return nil, fmt.Errorf("window length %v: must be a positive number of seconds", lengthS)
	}
	return &Windower{lengthS: lengthS, windows: make(map[int64]*Accumulator)}, nil
}

// Add puts rec into its window. Every record must carry an arrival time of
// the same kind; the error names the field.
func (w *Windower) Add(rec Record) error {
	switch {
	case rec.Arrival == ArrivalNone:
		return &InputError{Field: "arrival_s", Reason: "missing arrival time: splitting into windows needs arrival_s or timestamp"}
	case w.kind == ArrivalNone:
		w.kind = rec.Arrival
	case rec.Arrival != w.kind:
		return &InputError{Field: rec.Arrival.String(),
			Reason: fmt.Sprintf("arrival times come from %s in earlier input: arrival_s and timestamp cannot be mixed", w.kind)}
	}
	q := math.Floor(rec.ArrivalS / w.lengthS)
	if math.Abs(q) > maxWindowIndex {
		return &InputError{Field: rec.Arrival.String(), Value: w.kind.format(rec.ArrivalS),
			Reason: "too many windows from zero for the window length"}
	}
	idx := int64(q)
	acc := w.windows[idx]
	if acc == nil {
		acc = NewAccumulator(0)
		w.windows[idx] = acc
	}
	return acc.AddRecord(rec)
}

// Report diagnoses every non-empty window; each is named
// "<base> [<start>, <end>)". The findings of each window look at the whole
// log: completions and queued requests are counted over every request,
// whichever window it arrived in (see OverloadFinding), and the prefix
// cache over every window (see NoPrefixCacheFinding).
func (w *Windower) Report(base string, opts Options) (WindowReport, error) {
	if len(w.windows) == 0 {
		return WindowReport{}, ErrNoLogs
	}
	indexes := make([]int64, 0, len(w.windows))
	for idx := range w.windows {
		indexes = append(indexes, idx)
	}
	slices.Sort(indexes)
	flows := w.flows()
	var scope logScope
	for _, acc := range w.windows {
		scope.requests += acc.samples.len()
		scope.withCached += acc.withCached
	}
	report := WindowReport{Windows: make([]Diagnosis, 0, len(indexes)), base: base, lengthS: w.lengthS, kind: w.kind}
	worst := -1
	for i, idx := range indexes {
		if i > 0 && idx-indexes[i-1] > 1 {
			report.empty = append(report.empty, emptyRun{before: i, first: indexes[i-1] + 1, count: idx - indexes[i-1] - 1})
		}
		acc := w.windows[idx]
		d, err := acc.diagnosis(report.windowName(idx, 1), opts, scope, flows.of(idx, acc.samples.len()))
		if err != nil {
			return WindowReport{}, err
		}
		report.Windows = append(report.Windows, d)
		if worst < 0 || d.P99E2EMs > report.Windows[worst].P99E2EMs {
			worst = i
		}
	}
	report.WorstWindow = report.Windows[worst].WindowName
	return report, nil
}

// windowFlows holds, for every request of the log, the window index (as
// Add computes it from the arrival time) of its arrival, of its admission
// (arrival + queue_wait_ms, the start of its prefill) and of its
// completion (arrival + the end-to-end latency), each sorted, so that a
// window's admissions, completions and the requests queued at its
// boundaries are counted by search.
type windowFlows struct {
	lengthS                      float64
	arrived, admitted, completed []float64
}

// flows collects the window indexes of every request's events.
func (w *Windower) flows() windowFlows {
	n := 0
	for _, acc := range w.windows {
		n += acc.samples.len()
	}
	f := windowFlows{lengthS: w.lengthS, arrived: make([]float64, 0, n), admitted: make([]float64, 0, n), completed: make([]float64, 0, n)}
	for _, acc := range w.windows {
		for _, s := range acc.samples.all() {
			f.arrived = append(f.arrived, math.Floor(s.arrivalS/w.lengthS))
			f.admitted = append(f.admitted, math.Floor((s.arrivalS+s.queueMs/1000)/w.lengthS))
			f.completed = append(f.completed, math.Floor((s.arrivalS+s.e2eMs/1000)/w.lengthS))
		}
	}
	slices.Sort(f.arrived)
	slices.Sort(f.admitted)
	slices.Sort(f.completed)
	return f
}

// of is the flow of window idx, which holds arrivals requests: a request
// is queued at the start of window k when it arrived in an earlier window
// and is admitted in window k or later.
func (f windowFlows) of(idx int64, arrivals int) *flow {
	k := float64(idx)
	queuedAt := func(k float64) int { return below(f.arrived, k) - below(f.admitted, k) }
	return &flow{
		startS:        k * f.lengthS,
		endS:          (k + 1) * f.lengthS,
		arrivals:      arrivals,
		admissions:    below(f.admitted, k+1) - below(f.admitted, k),
		completions:   below(f.completed, k+1) - below(f.completed, k),
		queuedAtStart: queuedAt(k),
		queuedAtEnd:   queuedAt(k + 1),
	}
}

// windowName names count windows from window index first:
// "<base> [<start>, <end>)".
func (r *WindowReport) windowName(first, count int64) string {
	start := float64(first) * r.lengthS
	return fmt.Sprintf("%s [%s, %s)", r.base, r.kind.format(start), r.kind.format(start+float64(count)*r.lengthS))
}

// format renders an arrival time to the nanosecond: seconds as "90s" (not
// "0.30000000000000004s"), timestamps in UTC RFC 3339.
func (k ArrivalKind) format(seconds float64) string {
	if k == ArrivalTimestamp {
		sec, frac := math.Modf(seconds)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC().Format(time.RFC3339Nano)
	}
	return strconv.FormatFloat(numeric.Round(seconds, 9), 'f', -1, 64) + "s"
}
