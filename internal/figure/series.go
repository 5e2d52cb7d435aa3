package figure

import (
	"fmt"
	"slices"
)

// Series is one named line of a panel.
type Series struct {
	Name string    // legend label
	X, Y []float64 // coordinates, paired by index
}

// Line is a named horizontal (limit) or vertical (objective) reference line.
type Line struct {
	Name  string  // legend label
	Value float64 // position on the value axis (y for a limit, x for an objective)
}

// dataPad is the share of a value range left free at each end of an axis.
const dataPad = 0.05

// TimeSeries returns a panel of lines over time with an optional horizontal
// limit line. Non-finite points are dropped. With no points at all it is a
// Message panel.
func TimeSeries(title, yLabel string, series []Series, limit *Line) *Panel {
	p := &Panel{title: title, x: axis{label: "simulated time (s)"}, y: axis{label: yLabel}}
	xs, ys := emptyExtent(), emptyExtent()
	for i, s := range series {
		pts := decimate(finitePoints(s.X, s.Y), maxLinePoints)
		if len(pts) == 0 {
			continue
		}
		for _, pt := range pts {
			xs.add(pt.X)
			ys.add(pt.Y)
		}
		p.addLine(s.Name, pts, seriesStyle(i, 1))
	}
	if xs.empty() {
		return Message(title, "nothing was simulated")
	}
	if limit != nil && isFinite(limit.Value) {
		ys.add(limit.Value)
		p.addLine(limit.Name, []point{{xs.lo, limit.Value}, {xs.hi, limit.Value}}, limitStyle)
	}
	p.x.min, p.x.max = widen(xs.lo, xs.hi)
	p.y.min, p.y.max = ys.padded(dataPad)
	return p
}

// CDF returns the empirical cumulative distribution of samples with an
// optional vertical objective line (an SLO). Non-finite samples are dropped;
// with none left it is a Message panel saying empty.
func CDF(title, xLabel string, samples []float64, objective *Line, empty string) *Panel {
	sorted := make([]float64, 0, len(samples))
	for _, v := range samples {
		if isFinite(v) {
			sorted = append(sorted, v)
		}
	}
	if len(sorted) == 0 {
		return Message(title, empty)
	}
	slices.Sort(sorted)
	p := &Panel{title: title, x: axis{label: xLabel}, y: axis{label: "fraction of requests"}}
	steps := make([]point, 0, 2*len(sorted))
	n := float64(len(sorted))
	for i, v := range sorted {
		steps = append(steps, point{v, float64(i) / n}, point{v, float64(i+1) / n})
	}
	name := fmt.Sprintf("%d requests", len(sorted))
	if len(sorted) == 1 {
		name = "1 request"
	}
	p.addLine(name, decimate(steps, maxLinePoints), seriesStyle(0, 1.5))
	xs := extent{lo: sorted[0], hi: sorted[len(sorted)-1]}
	p.y.min, p.y.max = extent{lo: 0, hi: 1}.padded(dataPad / 2)
	if objective != nil && isFinite(objective.Value) {
		xs.add(objective.Value)
		p.addLine(objective.Name, []point{{objective.Value, p.y.min}, {objective.Value, p.y.max}}, limitStyle)
	}
	p.x.min, p.x.max = xs.padded(dataPad / 2)
	return p
}

// finitePoints pairs xs and ys, dropping pairs with a non-finite value.
func finitePoints(xs, ys []float64) []point {
	n := min(len(xs), len(ys))
	out := make([]point, 0, n)
	for i := range n {
		if isFinite(xs[i]) && isFinite(ys[i]) {
			out = append(out, point{xs[i], ys[i]})
		}
	}
	return out
}
