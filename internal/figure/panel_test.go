package figure

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legendNames returns the names in a panel's legend, in order.
func legendNames(p *Panel) []string {
	var names []string
	for _, e := range p.legend {
		names = append(names, e.name)
	}
	return names
}

func TestLegendNamesOnlyWhatIsDrawn(t *testing.T) {
	times := []float64{0, 1, 2, 3}
	nan := math.NaN()
	tests := []struct {
		name  string
		panel *Panel
		want  []string
		marks int
	}{
		{"time series with an empty and a NaN series",
			TimeSeries("t", "y", []Series{
				{Name: "drawn", X: times, Y: []float64{1, 2, 3, 4}},
				{Name: "empty", X: nil, Y: nil},
				{Name: "all NaN", X: times, Y: []float64{nan, nan, nan, nan}},
			}, &Line{Name: "limit", Value: 5}),
			[]string{"drawn", "limit"}, 2},
		{"time series with a NaN limit",
			TimeSeries("t", "y", []Series{{Name: "drawn", X: times, Y: []float64{1, 2, 3, 4}}}, &Line{Name: "limit", Value: nan}),
			[]string{"drawn"}, 1},
		{"a band is named after its line",
			TimeSeries("t", "y", []Series{
				{Name: "realized, mean", X: times, Y: []float64{1, 2, 3, 4}, Window: 2, Band: "realized, range"},
				{Name: "requested, mean", X: times, Y: []float64{4, 4, 4, 4}, Window: 2, Dashed: true},
			}, nil),
			[]string{"realized, mean", "realized, range", "requested, mean"}, 3},
		{"bars without a finite value in a group",
			Bars("b", "y", []string{"a", "b"}, []BarGroup{
				{Name: "drawn", Values: []float64{1, 0}},
				{Name: "all NaN", Values: []float64{nan, math.Inf(1)}},
				{Name: "no values", Values: nil},
			}),
			[]string{"drawn"}, 2},
		{"class bars whose only bar of a class is NaN",
			ClassBars("c", "y", []ColoredBar{{"w1", 3, "slow"}, {"w2", nan, "broken"}, {"w3", 1, "fine"}},
				&Series{Name: "p50", Y: []float64{nan, nan, nan}}),
			[]string{"slow", "fine"}, 2},
		{"CDF without objective",
			CDF("c", "s", []float64{1, 2}, nil, "none"),
			[]string{"2 requests"}, 1},
		{"CDF with a NaN objective",
			CDF("c", "s", []float64{1, 2}, &Line{Name: "SLO", Value: nan}, "none"),
			[]string{"2 requests"}, 1},
		{"CDF on a log axis with an objective at zero",
			CDF("c", "s", []float64{0.01, 0.1, 10}, &Line{Name: "SLO", Value: 0}, "none"),
			[]string{"3 requests"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, legendNames(tt.panel))
			assert.Len(t, tt.panel.marks, tt.marks)
		})
	}
}

func TestTimeSeriesDrawsBandsFirstAndHoldsThem(t *testing.T) {
	times := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5}
	clock := []float64{1000, 2000, 1000, 2000, 1000, 2000}
	p := TimeSeries("clock", "MHz", []Series{
		{Name: "realized", X: times, Y: clock, Window: 4, Band: "range"},
		{Name: "requested", X: times, Y: []float64{2100, 2100, 2100, 2100, 2100, 2100}, Window: 4, Dashed: true},
	}, nil)
	require.Len(t, p.marks, 3)
	b, ok := p.marks[0].(band)
	require.True(t, ok, "the band is drawn first")
	assert.Equal(t, 2000.0, b.upper[2].Y)
	assert.Equal(t, 1000.0, b.lower[2].Y)
	realized := p.marks[1].(polyline)
	assert.InDelta(t, 1500, realized.points[2].Y, 1e-9, "the line is the rolling mean")
	requested := p.marks[2].(polyline)
	assert.NotEmpty(t, requested.style.Dashes, "requested is dashed")
	assert.LessOrEqual(t, p.y.min, 1000.0)
	assert.GreaterOrEqual(t, p.y.max, 2100.0)
}

func TestWantsLogAxis(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   bool
	}{
		{0.05, 12, true},      // TTFT of a healthy run: 2.4 decades
		{0.2, 1100, true},     // TTFT of an overloaded run
		{0.01, 1, false},      // exactly two decades
		{0.012, 0.9, false},   // TPOT
		{0, 1000, false},      // no positive smallest sample
		{3, 3, false},         // one value
		{-1, 1000, false},     // negative
		{1e-6, 1e-3, true},    // small but wide
		{100, 10001, true},    // just over two decades
		{100, 10000, false},   // just two
		{1e-300, 1e300, true}, // no overflow
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, wantsLogAxis(tt.lo, tt.hi), "%g..%g", tt.lo, tt.hi)
	}
}

func TestCDFAxis(t *testing.T) {
	tests := []struct {
		name      string
		samples   []float64
		objective float64
		log       bool
		label     string
	}{
		{"narrow: linear", []float64{0.2, 0.5, 1, 1.9}, 0.5, false, "TTFT (s)"},
		{"wide: log", []float64{0.05, 0.3, 2, 40, 600}, 0.5, true, "TTFT (s), log scale"},
		{"wide with zeros: log from the smallest positive", []float64{0, 0, 0.001, 0.05, 1.2}, 0.035, true, "TTFT (s), log scale"},
		{"only zeros and one value: linear", []float64{0, 0, 0.5}, 0.1, false, "TTFT (s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := CDF("c", "TTFT (s)", tt.samples, &Line{Name: "SLO", Value: tt.objective}, "none")
			assert.Equal(t, tt.log, p.x.log)
			assert.Equal(t, tt.label, p.x.label)
			assert.Less(t, p.x.min, tt.objective, "the objective is inside the axis")
			assert.Greater(t, p.x.max, tt.objective)
			if tt.log {
				assert.Greater(t, p.x.min, 0.0)
				for _, pt := range p.marks[0].(polyline).points {
					assert.GreaterOrEqual(t, pt.X, p.x.min, "every step is on the axis")
				}
			}
		})
	}
}

func TestWithYRange(t *testing.T) {
	p := Bars("attainment", "%", []string{"a"}, []BarGroup{{Name: "x", Values: []float64{0.5}}}).WithYRange(0, 100)
	assert.Equal(t, [2]float64{0, 100}, [2]float64{p.y.min, p.y.max})
	m := Message("m", "nothing").WithYRange(0, 100)
	assert.Equal(t, [2]float64{0, 0}, [2]float64{m.y.min, m.y.max}, "a message has no axes")
}

func TestStepsDrawLevelsWithGaps(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		x, y   []float64
		want   [][]point
		legend []string
	}{
		{"adjacent levels join with risers",
			[]float64{0, 1, 2, 3}, []float64{1000, 2000, 1500},
			[][]point{{{0, 1000}, {1, 1000}, {1, 2000}, {2, 2000}, {2, 1500}, {3, 1500}}}, []string{"plan"}},
		{"a NaN level is a gap, not a slanted or held line",
			[]float64{0, 1, 2, 3, 4}, []float64{1000, nan, nan, 2000, nan},
			[][]point{{{0, 1000}, {1, 1000}}, {{3, 2000}, {4, 2000}}}, []string{"plan"}},
		{"the last y only ends the previous level",
			[]float64{0, 1, 2}, []float64{1000, 2000, 7777},
			[][]point{{{0, 1000}, {1, 1000}, {1, 2000}, {2, 2000}}}, []string{"plan"}},
		{"nothing finite draws nothing",
			[]float64{0, 1}, []float64{nan, nan}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := TimeSeries("clock", "MHz", []Series{
				{Name: "plan", X: tt.x, Y: tt.y, Steps: true},
				{Name: "other", X: []float64{0, 4}, Y: []float64{1, 1}},
			}, nil)
			var got [][]point
			for _, m := range p.marks[:len(p.marks)-1] {
				got = append(got, m.(polyline).points)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, append(tt.legend, "other"), legendNames(p), "one legend entry for all the runs")
		})
	}
}

func TestBandOnlyDrawsNoLine(t *testing.T) {
	times := []float64{0, 1, 2, 3}
	p := TimeSeries("clock", "MHz", []Series{
		{Name: "realized", X: times, Y: []float64{1, 3, 1, 3}, Window: 2, Band: "realized, range", BandOnly: true},
	}, nil)
	assert.Equal(t, []string{"realized, range"}, legendNames(p))
	require.Len(t, p.marks, 1)
	_, ok := p.marks[0].(band)
	assert.True(t, ok)
}
