package mpc

import (
	"errors"
	"math"
	"slices"
	"time"
)

// Server is the state of the serving engine at the start of a step, as a
// real server knows it. None of its requests carries an output length but
// the completed ones.
type Server interface {
	TimeS() float64              // start of the step, s
	StepIndex() int              // 0-based index of the step
	TemperatureC() float64       // temperature at the start of the step
	KVTokens() float64           // KV-cache occupancy
	QueuedPromptTokens() float64 // prompt tokens still to prefill over the queue
	Arrived() int                // requests arrived so far
	ArrivedAt(i int) Arrival     // the i-th request to arrive
	Queued() int                 // requests waiting for (or in) prefill
	QueuedAt(i int) Queued       // the i-th queued request, in service order
	Active() int                 // decoding requests
	// AppendActive appends the decoding requests to dst, in admission
	// order.
	AppendActive(dst []Active) []Active
	Completed() int // completed requests
	CompletedAt(i int) Completion
}

// Arrival is a request as submitted.
type Arrival struct {
	ID       int
	ArrivalS float64
	Prompt   int
}

// Queued is a request waiting for (or in) prefill.
type Queued struct {
	Arrival
	PrefillLeft float64 // prompt tokens still to prefill
}

// Active is a decoding request.
type Active struct {
	Arrival
	FirstTokenS float64 // end of the step of its first token; NaN before
	Generated   float64 // output tokens so far
}

// Completion is a completed request, whose output length is now known.
type Completion struct {
	Arrival
	Output      int
	FirstTokenS float64
	CompletionS float64
}

// Request is a future request told to a clairvoyant controller.
type Request struct {
	ID       int
	ArrivalS float64
	Prompt   int
	Output   int
}

// Diagnostics count how the solves went.
type Diagnostics struct {
	Solves    int // solves whose plan was applied
	Fallbacks int // solves that ran out of budget or time, or found no feasible plan
}

// SolveTimes are the wall-clock times of the solves, kept only when asked
// (Controller.TimeSolves): machine-dependent, never part of a result.
type SolveTimes struct {
	Count       int
	Total, Max  time.Duration
	durations   []time.Duration
	measurement bool
}

// Percentile is the p-th percentile (nearest rank) of the solve times.
func (s *SolveTimes) Percentile(p float64) time.Duration {
	if len(s.durations) == 0 {
		return 0
	}
	sorted := slices.Clone(s.durations)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(math.Ceil(p/100*float64(len(sorted))))-1)]
}

// Controller is the model-predictive controller. Give every run its own.
type Controller struct {
	plant Plant
	slo   SLO
	// firstTokenS is the time after its arrival by which a request must
	// have its first token: the TTFT objective, or the end-to-end one if
	// shorter.
	firstTokenS float64
	set         Settings
	levels      levelTable
	idleMinW    float64
	learn       learner

	clairvoyant bool
	future      []Request   // by arrival, clairvoyant only
	outputs     map[int]int // output lengths by request, clairvoyant only

	// The current period: its index, its level and the plan published at
	// the step that solved it (planned at that step only).
	period     int
	level      int
	periodEndS float64 // a step starting at or before it is in period (Holding)
	planMHz    []float64
	planStartS float64
	planned    bool

	diagnostics Diagnostics
	times       SolveTimes

	// What the learner has seen, and the completed requests' misses.
	seenArrived, seenCompleted int
	completedMisses            int

	// Scratch reused by every solve: the problem, plans, the outcome of
	// each constant plan, and the lowest feasible constant level found at
	// the last solve (where the next one starts looking).
	pr          problem
	sr          searchState
	plan, best  []int
	uniform     []uniformOutcome
	lastUniform int
	stat        statCache
}

// uniformOutcome is a constant plan's outcome, when evaluated at the
// current solve.
type uniformOutcome struct {
	outcome
	valid bool
}

// statCache remembers the stationary outcomes and what they were computed
// for.
type statCache struct {
	rate, prompts float64
	tables        int // the learner's tpotBuilds
	valid         bool
}

// New returns a controller for plant p judged by slo.
func New(p Plant, slo SLO, set Settings) (*Controller, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !(set.PeriodS > 0) || set.Horizon < 1 || set.Budget < 1 {
		return nil, errors.New("mpc: period, horizon and budget must be positive")
	}
	if !(slo.TTFTS > 0 && slo.TPOTS > 0) {
		return nil, errors.New("mpc: TTFT and TPOT objectives must be positive")
	}
	c := &Controller{
		plant:      p,
		slo:        slo,
		set:        set,
		levels:     newLevelTable(&p),
		idleMinW:   p.Levels[0].IdlePowerW,
		period:     -1,
		periodEndS: math.Inf(-1),
		planMHz:    make([]float64, set.Horizon),
		plan:       make([]int, set.Horizon),
		best:       make([]int, set.Horizon),
	}
	c.pr.stationary = make([]stationary, len(p.Levels))
	c.pr.alone = make([]float64, len(p.Levels))
	c.uniform = make([]uniformOutcome, len(c.levels.list))
	c.lastUniform = len(c.levels.list) - 1

	c.pr.dtS = p.TimeStepS
	c.pr.stepsPerS = 1 / p.TimeStepS
	c.firstTokenS = slo.TTFTS
	if slo.E2ES > 0 {
		c.firstTokenS = min(slo.TTFTS, slo.E2ES)
	}
	c.pr.ttftS = c.firstTokenS
	c.pr.e2eS = slo.E2ES
	c.pr.emptyTTFT = make([][2]float64, 2*len(p.Levels))
	c.pr.emptyTTFTFor = -1
	c.pr.layBlocks(set, p.ThermalTauS)
	return c, nil
}

// Foresee makes the controller clairvoyant: it is told every request of
// the run, future arrivals and output lengths included.
func (c *Controller) Foresee(requests []Request) {
	c.clairvoyant = true
	c.future = slices.Clone(requests)
	slices.SortStableFunc(c.future, func(a, b Request) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	c.outputs = make(map[int]int, len(requests))
	for _, r := range requests {
		c.outputs[r.ID] = r.Output
	}
}

// TimeSolves asks the controller to measure the wall-clock time of its
// solves (see Times).
func (c *Controller) TimeSolves() { c.times.measurement = true }

// Times returns the solve times measured with TimeSolves.
func (c *Controller) Times() *SolveTimes { return &c.times }

// Diagnostics returns the solve counts so far.
func (c *Controller) Diagnostics() Diagnostics { return c.diagnostics }

// Step decides the level of the current step (an index into the plant's
// levels). While anything is queued or decoding it runs the plan's level
// for the current period, solving once per period, at its first such step;
// otherwise it idles at the lowest level.
func (c *Controller) Step(s Server) int {
	c.planned = false
	if s.Queued() == 0 && s.Active() == 0 {
		return 0
	}
	period := c.periodOf(s.TimeS())
	if period != c.period {
		c.period = period
		c.periodEndS = c.lastStartIn(period)
		c.solve(s, period)
	}
	return c.level
}

// periodOf is the control period a step starting at timeS falls in.
func (c *Controller) periodOf(timeS float64) int {
	return int(math.Floor((timeS + TimeEpsilonS) / c.set.PeriodS))
}

// lastStartIn is a time at or before which every step start after the
// current one falls in period: periodOf is monotone in time, so any time
// whose period is at most period will do. It is the period's end within a
// few rounding errors, found from just below it.
func (c *Controller) lastStartIn(period int) float64 {
	end := float64(period+1) * c.set.PeriodS
	end -= 1e-9 * max(1, math.Abs(end))
	for c.periodOf(end) > period {
		end -= 1e-9 * max(1, math.Abs(end))
	}
	return end
}

// Holding is what Step returns without solving again, until a step that
// starts after untilS with anything queued or decoding: 0 at a step with
// nothing queued or decoding, level at any other, and no plan at either.
// Before the first solve, untilS is -Inf.
func (c *Controller) Holding() (level int, untilS float64) {
	return c.level, c.periodEndS
}

// Plan returns the plan made at the last step, if it made one.
func (c *Controller) Plan() (mhz []float64, startS float64, ok bool) {
	return c.planMHz, c.planStartS, c.planned
}

// solve plans the horizon from the current step and sets the period's
// level: the plan's first, or on failure the highest allowed level (race to
// idle).
func (c *Controller) solve(s Server, period int) {
	var start time.Time
	if c.times.measurement || c.set.DeadlineS > 0 {
		start = time.Now()
	}
	c.observe(s)
	c.build(s, period)
	ok := c.search(start)
	if c.times.measurement {
		d := time.Since(start)
		c.times.Count++
		c.times.Total += d
		c.times.Max = max(c.times.Max, d)
		c.times.durations = append(c.times.durations, d)
	}
	if !ok {
		c.diagnostics.Fallbacks++
		c.level = c.levels.top
		return
	}
	c.diagnostics.Solves++
	c.level = c.best[0]
	for k, l := range c.best {
		c.planMHz[k] = c.plant.Levels[l].MHz
	}
	c.planStartS = float64(period) * c.set.PeriodS
	c.planned = true
}

// observe feeds the learner the arrivals and completions since the last
// solve, and judges the completed requests.
func (c *Controller) observe(s Server) {
	for n := s.Arrived(); c.seenArrived < n; c.seenArrived++ {
		a := s.ArrivedAt(c.seenArrived)
		c.learn.arrive(a.ArrivalS, a.Prompt)
	}
	for n := s.Completed(); c.seenCompleted < n; c.seenCompleted++ {
		r := s.CompletedAt(c.seenCompleted)
		c.learn.complete(r.Output)
		if ttft := r.FirstTokenS - r.ArrivalS; ttft <= c.firstTokenS {
			c.learn.firstTokenInTime(ttft)
		}
		if !c.met(&r) {
			c.completedMisses++
		}
	}
	c.learn.prepare(c.plant.TimeStepS, c.slo.TPOTS, c.slo.E2ES, c.plant.MaxActive)
}

// met reports whether a completed request met every objective.
func (c *Controller) met(r *Completion) bool {
	tpot := (r.CompletionS - r.FirstTokenS) / float64(max(1, r.Output-1))
	return r.FirstTokenS-r.ArrivalS <= c.slo.TTFTS && tpot <= c.slo.TPOTS &&
		(c.slo.E2ES == 0 || r.CompletionS-r.ArrivalS <= c.slo.E2ES)
}
