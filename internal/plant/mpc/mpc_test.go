package mpc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistogramBins(t *testing.T) {
	for v := 1; v < 1<<22; v = v*3/2 + 1 {
		b := binOf(v)
		require.LessOrEqual(t, binLow(b), float64(v), "value %d", v)
		require.Less(t, float64(v), binLow(b+1), "value %d", v)
		if v >= subBins {
			require.LessOrEqual(t, (binLow(b+1)-binLow(b))/binLow(b), 0.125+1e-12, "bins are within an eighth")
		} else {
			require.Equal(t, float64(v), binLow(b), "small values are exact")
		}
	}
}

func TestHistogramQueries(t *testing.T) {
	var h histogram
	for _, v := range []int{1, 2, 3, 4, 100, 100, 1000, 5000} {
		h.add(v)
	}
	h.prepare()
	assert.Equal(t, 8.0, h.n)
	assert.InDelta(t, 6210.0/8, h.mean(), 1e-9)
	// Exact at bin edges (100 is in [96, 104), 5000 in [4608, 5120)),
	// linear within a bin.
	tests := []struct{ x, want float64 }{
		{0, 0}, {1, 1.0 / 8}, {4, 4.0 / 8}, {95, 4.0 / 8}, {99, 5.0 / 8}, {103, 6.0 / 8}, {4607, 7.0 / 8}, {5119, 1}, {1e9, 1},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, h.cdf(tt.x), 1e-12, "cdf(%v)", tt.x)
	}
	count, sum := h.above(4)
	assert.InDelta(t, 4, count, 1e-9)
	assert.InDelta(t, 6200, sum, 1e-9)
	assert.InDelta(t, 0.5, h.finishWithin(4, 100), 0.02, "of the 4 above 4, the two of 100 end within 100 more")
	assert.Zero(t, h.finishWithin(1e7, 10), "nothing above")

	// Later additions update the prefix sums from the lowest bin touched.
	h.add(2)
	h.prepare()
	assert.InDelta(t, 5.0/9, h.cdf(4), 1e-12)
	assert.InDelta(t, 1, h.cdf(5119), 1e-12)
}

func TestLearnerRate(t *testing.T) {
	var l learner
	assert.Zero(t, l.rate(10))
	// Ten arrivals a second for two minutes: the last minute's rate.
	for i := range 1200 {
		l.arrive(float64(i)/10, 100)
	}
	assert.InDelta(t, 10, l.rate(120), 0.2)
	// A first burst does not look like a flood: 5 arrivals in the first
	// second count over the prior too.
	var burst learner
	for i := range 5 {
		burst.arrive(0.1*float64(i), 100)
	}
	assert.InDelta(t, 5/(1+ratePriorS), burst.rate(1), 1e-9)
}

func TestLearnerRemaining(t *testing.T) {
	var l learner
	assert.Equal(t, defaultOutputTokens-10, l.remaining(10), "before any completion")
	for _, o := range []int{10, 20, 30, 40} {
		l.complete(o)
	}
	l.prepare(0.1, 0.05, 0, 64)
	assert.InDelta(t, 25, l.meanOutput(), 1e-9)
	assert.InDelta(t, 30-15, l.remaining(15), 1.5, "of 20, 30, 40: 15 to go on average")
	assert.InDelta(t, 25, l.remaining(1000), 1e-9, "longer than any seen: its mean again")
}

func TestTPOTMet(t *testing.T) {
	dt, tpot := 0.1, 0.03
	tests := []struct {
		o, x float64
		want bool
	}{
		{1, 0.5, true},    // a single token has no TPOT
		{3, 4, true},      // done in the step of its first token
		{3, 1, false},     // two more steps for two tokens: 0.1 s per token
		{101, 4, true},    // 25 steps for 100 tokens: 0.025 s per token
		{101, 3, false},   // 33 steps: 0.033 s
		{1000, 3.4, true}, // 294 steps for 999 tokens
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tpotMet(tt.o, tt.x, dt, tpot, math.Inf(1)), "%v tokens at %v per step", tt.o, tt.x)
	}
}

func TestTPOTTable(t *testing.T) {
	var l learner
	for o := 2; o <= 400; o += 2 {
		l.complete(o)
	}
	l.prepare(0.1, 0.05, 0, 64)
	tab := &l.tpot
	// More tokens per step, more requests meet the objective.
	previous := -1.0
	for x := 0.05; x < 100; x *= 1.3 {
		met := tab.at(x)
		require.GreaterOrEqual(t, met, previous-1e-12, "at %v", x)
		previous = met
	}
	assert.Zero(t, tab.at(0))
	assert.Equal(t, 1.0, tab.at(1e6))
	// Shared by a queue: a longer queue, fewer requests meet it.
	assert.Greater(t, tab.sharedAt(20, 0.5), tab.sharedAt(20, 5))
	assert.Greater(t, tab.sharedAt(20, 5), tab.sharedAt(20, 40))
	assert.InDelta(t, tab.at(20), tab.sharedAt(20, 0), 0.01, "an empty queue: the whole capacity")
	for _, x := range []float64{0.3, 1, 1.5, 3, 7.9, 100} {
		assert.InDelta(t, x, pseudoExp2(pseudoLog2(x)), 1e-12)
		assert.InDelta(t, math.Log2(x), pseudoLog2(x), 0.09)
	}
}

// proxyPlant is the embedded proxy's levels on the default plant.
func proxyPlant() Plant {
	levels := []Level{
		{420, 2600, 80, 28.0, 30.0, 16.5}, {690, 4300, 125, 35.5, 38.0, 17.8}, {960, 5800, 162, 43.0, 46.0, 19.2},
		{1230, 7100, 192, 50.5, 53.5, 20.8}, {1500, 8200, 215, 57.5, 60.5, 22.6}, {1770, 9000, 231, 64.0, 67.0, 24.6},
		{2040, 9500, 240, 70.0, 72.5, 26.8},
	}
	return Plant{
		Levels: levels, TimeStepS: 0.1, KVCapacityTokens: 131072, KVReserveTokensPerActive: 1024, MaxActive: 64,
		AmbientC: 25, ThermalTauS: 35, ThermalRCPerW: 0.55, ThermalLimitC: 75, PowerLimitW: 64.8,
		Governed: true, Scheduler: Chunked, ChunkTokens: 512, KVPressure: 0.7,
	}
}

func TestLevelTableFollowsThePlantsRules(t *testing.T) {
	p := proxyPlant()
	table := newLevelTable(&p)
	top := table.cool[6]
	assert.Equal(t, 512.0, top.chunk, "the chunk caps a prefill step")
	assert.Equal(t, 64.0, top.prefillPowerW, "2040 MHz prefills at 1770 under the 64.8 W governor")
	assert.Equal(t, 215.0, top.decodeRate, "and decodes at 1500")
	assert.Equal(t, table.cool[5].prefillPowerW, table.hot[6].prefillPowerW, "at the thermal limit, one level lower")
	assert.Equal(t, 6, table.top)
	assert.Len(t, table.list, 7)

	// A measured profile is not governed: the controller keeps to levels
	// within the limit.
	p.Governed = false
	table = newLevelTable(&p)
	assert.Equal(t, 4, table.top, "1500 MHz is the highest level within 64.8 W")
	assert.Equal(t, []int{0, 1, 2, 3, 4}, table.list)
}

// staticServer is a Server holding a fixed state.
type staticServer struct {
	now    float64
	queued []Queued
	active []Active
}

func (s *staticServer) TimeS() float64        { return s.now }
func (s *staticServer) StepIndex() int        { return int(s.now * 10) }
func (s *staticServer) TemperatureC() float64 { return 40 }
func (s *staticServer) KVTokens() float64     { return 0 }
func (s *staticServer) QueuedPromptTokens() float64 {
	total := 0.0
	for _, q := range s.queued {
		total += q.PrefillLeft
	}
	return total
}
func (s *staticServer) Arrived() int                       { return len(s.queued) + len(s.active) }
func (s *staticServer) ArrivedAt(i int) Arrival            { return s.all()[i] }
func (s *staticServer) Queued() int                        { return len(s.queued) }
func (s *staticServer) QueuedAt(i int) Queued              { return s.queued[i] }
func (s *staticServer) Active() int                        { return len(s.active) }
func (s *staticServer) AppendActive(dst []Active) []Active { return append(dst, s.active...) }
func (s *staticServer) Completed() int                     { return 0 }
func (s *staticServer) CompletedAt(int) Completion         { panic("no completion") }
func (s *staticServer) all() []Arrival {
	var all []Arrival
	for _, a := range s.active {
		all = append(all, a.Arrival)
	}
	for _, q := range s.queued {
		all = append(all, q.Arrival)
	}
	return all
}

// TestControllerPlansFastEnoughForTheDeadline: a long prompt just queued
// meets its TTFT objective only at a level whose prefill step is a whole
// chunk, so the plan's first period runs at least there; an idle server
// requests the lowest level and makes no plan.
func TestControllerPlansFastEnoughForTheDeadline(t *testing.T) {
	c, err := New(proxyPlant(), SLO{TTFTS: 0.5, TPOTS: 0.03}, Settings{PeriodS: 1, Horizon: 30, Budget: 2000})
	require.NoError(t, err)
	idle := &staticServer{now: 5}
	assert.Zero(t, c.Step(idle))
	_, _, planned := c.Plan()
	assert.False(t, planned)

	// 2000 tokens need four 512-token steps back to back: 0.4 s.
	busy := &staticServer{now: 10, queued: []Queued{{Arrival{ID: 1, ArrivalS: 9.95, Prompt: 2000}, 2000}}}
	level := c.Step(busy)
	mhz, start, planned := c.Plan()
	require.True(t, planned)
	assert.Equal(t, 10.0, start)
	assert.Len(t, mhz, 30)
	assert.Equal(t, proxyPlant().Levels[level].MHz, mhz[0])
	assert.GreaterOrEqual(t, level, 2, "960 MHz is the lowest level prefilling 512 tokens a step")
	assert.Equal(t, Diagnostics{Solves: 1}, c.Diagnostics())

	// The same period is not solved again.
	assert.Equal(t, level, c.Step(busy))
	_, _, planned = c.Plan()
	assert.False(t, planned)

	// A budget of one state cannot solve: race to idle at the top level.
	starved, err := New(proxyPlant(), SLO{TTFTS: 0.5, TPOTS: 0.03}, Settings{PeriodS: 1, Horizon: 30, Budget: 1})
	require.NoError(t, err)
	assert.Equal(t, 6, starved.Step(busy))
	assert.Equal(t, Diagnostics{Fallbacks: 1}, starved.Diagnostics())
}

func TestNewRejectsBadSettings(t *testing.T) {
	slo := SLO{TTFTS: 0.5, TPOTS: 0.03}
	for _, set := range []Settings{{PeriodS: 0, Horizon: 30, Budget: 10}, {PeriodS: 1, Horizon: 0, Budget: 10}, {PeriodS: 1, Horizon: 30}} {
		_, err := New(proxyPlant(), slo, set)
		assert.Error(t, err, "%+v", set)
	}
	_, err := New(Plant{}, slo, Settings{PeriodS: 1, Horizon: 1, Budget: 1})
	assert.ErrorContains(t, err, "no clock levels")
	_, err = New(proxyPlant(), SLO{}, Settings{PeriodS: 1, Horizon: 1, Budget: 1})
	assert.ErrorContains(t, err, "objectives")
}

// TestLastStartIn: the time a period's hold lasts to is in the period (or
// before it), within a few rounding errors of its end.
func TestLastStartIn(t *testing.T) {
	for _, periodS := range []float64{1, 0.37, 0.1, 3, 1e-3} {
		c := &Controller{set: Settings{PeriodS: periodS}}
		for _, period := range []int{0, 1, 7, 99, 12345, 1000000} {
			end := c.lastStartIn(period)
			assert.LessOrEqual(t, c.periodOf(end), period, "period %d of %v s", period, periodS)
			assert.Equal(t, period+1, c.periodOf(end+3e-9*max(1, end)), "period %d of %v s", period, periodS)
		}
	}
}
