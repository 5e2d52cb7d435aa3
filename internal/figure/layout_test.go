package figure

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
)

func TestLayoutAlignsDataAreasInAColumn(t *testing.T) {
	times := []float64{0, 10, 20, 30}
	series := func(name string, ys ...float64) []Series { return []Series{{Name: name, X: times, Y: ys}} }
	tests := []struct {
		name   string
		panels []*Panel
	}{
		{"narrow and wide tick labels", []*Panel{
			TimeSeries("small", "requests", series("queue", 0, 1, 2, 3), nil),
			TimeSeries("large", "tokens", series("kv", 0, 120000, 80000, 3), &Line{Name: "capacity", Value: 150000}),
			TimeSeries("fractional", "", series("x", 0.001, 0.002, 0.0015, 0.003), nil),
		}},
		{"with a message panel", []*Panel{
			Message("empty", "nothing was simulated"),
			TimeSeries("negative", "W", series("p", -1234.5, 20, 30, 40), nil),
			CDF("cdf", "s", []float64{0.1, 0.2, 0.3}, &Line{Name: "SLO", Value: 0.25}, "none"),
		}},
		{"bars", []*Panel{
			Bars("bars", "rps", []string{"a", "b"}, []BarGroup{{Name: "g", Values: []float64{1, 2e6}}}),
			ClassBars("classes", "ms", []ColoredBar{{Label: "w", Value: 3, Class: "c"}}, nil),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fig := Figure{Title: "t", Width: 10 * vg.Inch, Height: 8 * vg.Inch, Columns: []Column{
				{Weight: 2, Panels: tt.panels},
				{Panels: []*Panel{TimeSeries("other", "x", series("y", 1, 2, 3, 4), nil)}},
			}}
			cols := fig.layout(fig.size())
			require.Len(t, cols, 2)
			var areas []vg.Rectangle
			for _, c := range cols[0] {
				areas = append(areas, c.area)
				assert.True(t, c.area.Min.X > c.outer.Min.X && c.area.Max.X < c.outer.Max.X &&
					c.area.Min.Y > c.outer.Min.Y && c.area.Max.Y < c.outer.Max.Y, "%s: data area inside its cell", c.panel.title)
				widest := vg.Length(0)
				for _, tk := range c.yTicks {
					widest = max(widest, measure(tickSize).Width(tk.Label))
				}
				assert.GreaterOrEqual(t, c.area.Min.X-c.outer.Min.X, widest+tickLength, "%s: room for the y tick labels", c.panel.title)
			}
			require.GreaterOrEqual(t, len(areas), 2)
			for _, a := range areas[1:] {
				assert.Equal(t, areas[0].Min.X, a.Min.X, "same left edge of the data area")
				assert.Equal(t, areas[0].Max.X, a.Max.X, "same right edge of the data area")
			}
			assert.Greater(t, cols[1][0].area.Min.X, areas[0].Max.X, "the next column starts right of this one")
		})
	}
}

func TestPanelBoundsTileTheColumns(t *testing.T) {
	fig := Figure{Width: 6 * vg.Inch, Height: 4 * vg.Inch, Columns: []Column{
		{Panels: []*Panel{Message("a", "x"), Message("b", "y")}},
		{Weight: 3, Panels: []*Panel{Message("c", "z")}},
	}}
	bounds := fig.PanelBounds(600, 400)
	require.Len(t, bounds, 2)
	assert.Equal(t, [][2]int{{0, 0}, {150, 200}}, [][2]int{{bounds[0][0].Min.X, bounds[0][0].Min.Y}, {bounds[0][0].Max.X, bounds[0][0].Max.Y}})
	assert.Equal(t, 200, bounds[0][1].Min.Y)
	assert.Equal(t, 400, bounds[0][1].Max.Y)
	assert.Equal(t, 150, bounds[1][0].Min.X)
	assert.Equal(t, 600, bounds[1][0].Max.X)
}
