package figure

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarGroup is one named set of bar heights, one per category.
type BarGroup struct {
	Name   string    // legend label
	Values []float64 // bar height per category, in category order
}

// ColoredBar is one bar whose colour is chosen by its class.
type ColoredBar struct {
	Label string  // category label under the bar
	Value float64 // bar height
	Class string  // class that selects the bar's colour
}

// Shares of a category's slot that bars fill.
const (
	clusterWidth = 0.8 // grouped bars of one category, together
	singleWidth  = 0.6 // one bar per category
)

// Bars returns a grouped bar chart: one cluster per category, one bar per
// group in each cluster. A non-finite height draws no bar; a group with no
// bar has no legend entry.
func Bars(title, yLabel string, categories []string, groups []BarGroup) *Panel {
	if len(categories) == 0 || len(groups) == 0 {
		return Message(title, "nothing to compare")
	}
	p := newBarPanel(title, yLabel, categories)
	width := clusterWidth / float64(len(groups))
	if len(groups) == 1 {
		width = singleWidth
	}
	ys := extent{}
	for i, g := range groups {
		fill := Palette[i%len(Palette)]
		left := -float64(len(groups))*width/2 + float64(i)*width
		drawn := false
		for j := range categories {
			if j < len(g.Values) && isFinite(g.Values[j]) {
				p.addBar(float64(j)+left, width, g.Values[j], fill, &ys)
				drawn = true
			}
		}
		if drawn {
			p.legend = append(p.legend, legendEntry{name: g.Name, fill: fill})
		}
	}
	p.y.min, p.y.max = barRange(ys)
	return p
}

// ClassBars returns a bar chart whose bars are coloured by class (with a
// legend entry per class) and an optional line series drawn across the bars,
// e.g. p99 latency per window coloured by the diagnosed cause, with p50.
// A non-finite height draws no bar; a class with no bar has no legend entry.
func ClassBars(title, yLabel string, bars []ColoredBar, overlay *Series) *Panel {
	if len(bars) == 0 {
		return Message(title, "nothing to draw")
	}
	labels := make([]string, len(bars))
	for i, b := range bars {
		labels[i] = b.Label
	}
	p := newBarPanel(title, yLabel, labels)
	var classes []string
	ys := extent{}
	for i, b := range bars {
		if !isFinite(b.Value) {
			continue
		}
		ci := slices.Index(classes, b.Class)
		if ci < 0 {
			ci = len(classes)
			classes = append(classes, b.Class)
			p.legend = append(p.legend, legendEntry{name: b.Class, fill: Palette[ci%len(Palette)]})
		}
		p.addBar(float64(i)-singleWidth/2, singleWidth, b.Value, Palette[ci%len(Palette)], &ys)
	}
	if overlay != nil {
		xs := make([]float64, len(overlay.Y))
		for i := range xs {
			xs[i] = float64(i)
		}
		if pts := finitePoints(xs, overlay.Y); len(pts) > 0 {
			for _, pt := range pts {
				ys.add(pt.Y)
			}
			p.addLine(overlay.Name, pts, draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)})
		}
	}
	p.y.min, p.y.max = barRange(ys)
	return p
}

// newBarPanel returns an empty bar chart panel with one slot per category.
func newBarPanel(title, yLabel string, categories []string) *Panel {
	return &Panel{
		title: title,
		x:     axis{min: -0.5, max: float64(len(categories)) - 0.5, categories: categories},
		y:     axis{label: yLabel},
	}
}

// addBar adds a bar from zero to value spanning [left, left+width] and
// widens ys to hold it.
func (p *Panel) addBar(left, width, value float64, fill color.Color, ys *extent) {
	p.marks = append(p.marks, box{x0: left, x1: left + width, y0: 0, y1: value, color: fill})
	ys.add(value)
}

// barRange returns the value range of a bar chart: from zero (or the lowest
// negative bar) to a little above the highest bar.
func barRange(ys extent) (lo, hi float64) {
	lo, hi = widen(min(0, ys.lo), max(0, ys.hi))
	span := hi - lo
	if lo < 0 {
		lo -= dataPad * span
	}
	return lo, hi + dataPad*span
}
