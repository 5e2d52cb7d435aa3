package sweep

// ParetoRun is what the Pareto record needs of one run: its group (the
// profile and trace values), the SLOs it is judged by, its metrics, and
// what the caller writes of it (Data).
type ParetoRun[T any] struct {
	Cell           int
	Profile, Trace string // the run's group: its profile and trace axis values
	OK             bool   // the run has metrics
	// TTFTSLOSeconds and TPOTSLOSeconds are the p95 objectives the run is
	// judged by (0: none).
	TTFTSLOSeconds, TPOTSLOSeconds float64
	// EnergyPerOutputTokenJ, P95TTFTS and P95TPOTS are the run's metrics;
	// UnfinishedRequests its requests left at the end.
	EnergyPerOutputTokenJ, P95TTFTS, P95TPOTS, UnfinishedRequests float64
	Data                                                          T
}

// ParetoGroup is the Pareto front and the best run of one profile on one
// trace.
type ParetoGroup[T any] struct {
	Profile, Trace string
	// TTFTSLOSeconds and TPOTSLOSeconds are the group's objectives: those
	// of its first run with metrics, else of its first run; zero when its
	// runs with metrics have different ones (runs under different service
	// models take different defaults): each run is then judged by its own.
	TTFTSLOSeconds, TPOTSLOSeconds float64
	// Best is, among the runs in which every request completed and p95
	// TTFT and p95 TPOT meet the run's objectives, the one with the lowest
	// energy per output token (the earlier on a tie); nil when none does.
	Best  *ParetoRun[T]
	anyOK bool
	front Front[*ParetoRun[T]]
}

// Front returns the group's Pareto front of energy per output token (X)
// against p95 TTFT (Y), in Front's order.
func (g *ParetoGroup[T]) Front() []*ParetoRun[T] { return g.front.Values() }

// Pareto keeps, for each profile and trace, the Pareto front and the best
// run under the SLOs of the runs added so far. It keeps the fronts and the
// best runs, never the runs: its memory does not grow with the grid.
type Pareto[T any] struct {
	groups []*ParetoGroup[T]
	index  map[[2]string]*ParetoGroup[T]
}

// Add adds a run; runs must come in grid order (ties go to the earlier).
func (p *Pareto[T]) Add(r ParetoRun[T]) {
	key := [2]string{r.Profile, r.Trace}
	g := p.index[key]
	if g == nil {
		if p.index == nil {
			p.index = map[[2]string]*ParetoGroup[T]{}
		}
		g = &ParetoGroup[T]{Profile: r.Profile, Trace: r.Trace, TTFTSLOSeconds: r.TTFTSLOSeconds, TPOTSLOSeconds: r.TPOTSLOSeconds}
		p.index[key] = g
		p.groups = append(p.groups, g)
	}
	if !r.OK {
		return
	}
	if !g.anyOK {
		g.anyOK = true
		g.TTFTSLOSeconds, g.TPOTSLOSeconds = r.TTFTSLOSeconds, r.TPOTSLOSeconds
	}
	if r.TTFTSLOSeconds != g.TTFTSLOSeconds {
		g.TTFTSLOSeconds = 0
	}
	if r.TPOTSLOSeconds != g.TPOTSLOSeconds {
		g.TPOTSLOSeconds = 0
	}
	run := &r
	g.front.Add(Point{Index: r.Cell, X: r.EnergyPerOutputTokenJ, Y: r.P95TTFTS}, run)
	feasible := r.UnfinishedRequests == 0 && r.P95TTFTS <= r.TTFTSLOSeconds && r.P95TPOTS <= r.TPOTSLOSeconds
	if feasible && (g.Best == nil || r.EnergyPerOutputTokenJ < g.Best.EnergyPerOutputTokenJ) {
		g.Best = run
	}
}

// Groups returns the groups in the order their first runs came.
func (p *Pareto[T]) Groups() []*ParetoGroup[T] { return p.groups }
