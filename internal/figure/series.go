package figure

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/vg"
)

// Series is one named line of a panel.
type Series struct {
	Name string    // legend label of the line
	X, Y []float64 // coordinates, paired by index
	// Window, above 1, draws the mean of the Window points centred on each
	// point instead of the point (a rolling mean, over fewer at the ends):
	// a series that changes every step reads as a level, not a solid block.
	Window int
	// Band, with Window, also fills the range from the minimum to the
	// maximum of the same windows behind every line, named Band in the
	// legend; empty draws no band.
	Band string
	// Dashed draws the line dashed, e.g. to tell a target from what was
	// achieved when they coincide.
	Dashed bool
	// Width is the line width in points; zero is the default.
	Width float64
	// Color is the colour of the line and its band; nil is the palette's
	// colour for the series' position in the panel.
	Color color.Color
	// BandOnly, with Window and Band, draws the band alone: no line and no
	// legend entry for one.
	BandOnly bool
	// Steps draws a level held over each interval instead of a line
	// through the points: Y[i] from X[i] to X[i+1] (the last Y is not
	// drawn), so X holds the interval edges in increasing order. A
	// non-finite Y[i] leaves a gap from X[i] to X[i+1]; adjacent levels
	// join with a vertical riser. Window and Band do not apply.
	Steps bool
}

// Line is a named horizontal (limit) or vertical (objective) reference line.
type Line struct {
	Name  string  // legend label
	Value float64 // position on the value axis (y for a limit, x for an objective)
}

// dataPad is the share of a value range left free at each end of an axis.
const dataPad = 0.05

// TimeSeries returns a panel of lines over time with an optional horizontal
// limit line. Non-finite points are dropped; a series with none left is not
// drawn and has no legend entry. The bands of all series are drawn first,
// then the lines in order (the last on top), then the limit. With no points
// at all it is a Message panel.
func TimeSeries(title, yLabel string, series []Series, limit *Line) *Panel {
	p := &Panel{title: title, x: axis{label: "simulated time (s)"}, y: axis{label: yLabel}}
	xs, ys := emptyExtent(), emptyExtent()
	var bands []mark
	for i, s := range series {
		style, fill := seriesStyle(i, 1), bandColor(i)
		if s.Color != nil {
			style.Color, fill = s.Color, Translucent(s.Color)
		}
		if s.Dashed {
			style.Dashes = dashes
		}
		if s.Steps {
			runs := stepRuns(s.X, s.Y)
			for _, run := range runs {
				for _, pt := range run {
					xs.add(pt.X)
					ys.add(pt.Y)
				}
			}
			style.Width = vg.Points(1.5)
			if s.Width > 0 {
				style.Width = vg.Points(s.Width)
			}
			p.addLines(s.Name, runs, style)
			continue
		}
		pts := finitePoints(s.X, s.Y)
		if len(pts) == 0 {
			continue
		}
		var lo, hi []point
		if s.Window > 1 {
			style.Width = vg.Points(1.5)
			lo, hi = smooth(pts, s.Window)
		}
		if s.Width > 0 {
			style.Width = vg.Points(s.Width)
		}
		pts = decimate(pts, maxLinePoints)
		for _, pt := range pts {
			xs.add(pt.X)
			ys.add(pt.Y)
		}
		if !s.BandOnly || lo == nil || s.Band == "" {
			p.addLine(s.Name, pts, style)
		}
		if s.Band != "" && lo != nil {
			lo, hi = envelope(lo, hi, maxLinePoints)
			for k := range lo {
				ys.add(lo[k].Y)
			}
			for k := range hi {
				ys.add(hi[k].Y)
			}
			bands = append(bands, band{upper: hi, lower: lo, color: fill})
			p.legend = append(p.legend, legendEntry{name: s.Band, fill: fill})
		}
	}
	if xs.empty() {
		return Message(title, "nothing was simulated")
	}
	p.marks = append(bands, p.marks...)
	if limit != nil && isFinite(limit.Value) {
		ys.add(limit.Value)
		p.addLine(limit.Name, []point{{xs.lo, limit.Value}, {xs.hi, limit.Value}}, limitStyle)
	}
	if xs.lo > 0 && xs.lo <= dataPad*(xs.hi-xs.lo) {
		xs.lo = 0 // a run that starts at its first step's end starts at 0
	}
	p.x.min, p.x.max = widen(xs.lo, xs.hi)
	p.y.min, p.y.max = ys.padded(dataPad)
	return p
}

// stepRuns turns levels held over intervals (Series.Steps) into the
// polylines that draw them: one per run of adjacent finite levels, each
// level a horizontal segment, adjacent ones joined by a vertical riser.
// Every run is decimated alone.
func stepRuns(xs, ys []float64) [][]point {
	var runs [][]point
	var run []point
	end := func() {
		if len(run) > 0 {
			runs = append(runs, decimate(run, maxLinePoints))
			run = nil
		}
	}
	for i := 0; i+1 < min(len(xs), len(ys)+1); i++ {
		x0, x1, y := xs[i], xs[i+1], ys[i]
		if !isFinite(x0) || !isFinite(x1) || !isFinite(y) || x1 <= x0 {
			end()
			continue
		}
		if len(run) > 0 && run[len(run)-1].X != x0 {
			end()
		}
		run = append(run, point{x0, y}, point{x1, y})
	}
	end()
	return runs
}

// smooth replaces the y of every point by its rolling mean over window
// points and returns the rolling minimum and maximum as points too.
func smooth(pts []point, window int) (lo, hi []point) {
	ys := make([]float64, len(pts))
	for i, pt := range pts {
		ys[i] = pt.Y
	}
	mean, mins, maxs := rolling(ys, window)
	lo, hi = make([]point, len(pts)), make([]point, len(pts))
	for i := range pts {
		pts[i].Y = mean[i]
		lo[i], hi[i] = point{pts[i].X, mins[i]}, point{pts[i].X, maxs[i]}
	}
	return lo, hi
}

// logDecades is how many decades samples must span (the largest over the
// smallest positive one) for a CDF to use a logarithmic value axis.
const logDecades = 2

// wantsLogAxis says whether samples from lo (the smallest positive one) to
// hi span more than logDecades decades, too many to read on a linear axis.
func wantsLogAxis(lo, hi float64) bool {
	return lo > 0 && hi/lo > math.Pow10(logDecades)
}

// CDF returns the empirical cumulative distribution of samples with an
// optional vertical objective line (an SLO). Non-finite samples are dropped;
// with none left it is a Message panel saying empty. When the positive
// samples span more than two decades the value axis is logarithmic (so that
// the bulk, the tail and the objective all show), labelled so; samples at
// or below zero then sit at its left end.
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
	xs := extent{lo: sorted[0], hi: sorted[len(sorted)-1]}
	if i, _ := slices.BinarySearch(sorted, math.SmallestNonzeroFloat64); i < len(sorted) && wantsLogAxis(sorted[i], xs.hi) {
		p.x.log, p.x.label = true, xLabel+", log scale"
		xs.lo = sorted[i]
	}
	p.y.min, p.y.max = extent{lo: 0, hi: 1}.padded(dataPad / 2)
	var objectiveLine []point
	if objective != nil && isFinite(objective.Value) && (!p.x.log || objective.Value > 0) {
		xs.add(objective.Value)
		objectiveLine = []point{{objective.Value, p.y.min}, {objective.Value, p.y.max}}
	}
	if p.x.log {
		p.x.min, p.x.max = xs.paddedLog(dataPad / 2)
	} else {
		p.x.min, p.x.max = xs.padded(dataPad / 2)
	}
	steps := make([]point, 0, 2*len(sorted))
	n := float64(len(sorted))
	for i, v := range sorted {
		if p.x.log {
			v = max(v, p.x.min)
		}
		steps = append(steps, point{v, float64(i) / n}, point{v, float64(i+1) / n})
	}
	name := fmt.Sprintf("%d requests", len(sorted))
	if len(sorted) == 1 {
		name = "1 request"
	}
	p.addLine(name, decimate(steps, maxLinePoints), seriesStyle(0, 1.5))
	if objectiveLine != nil {
		p.addLine(objective.Name, objectiveLine, limitStyle)
	}
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
