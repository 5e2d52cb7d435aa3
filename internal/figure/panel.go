package figure

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Panel is one chart of a Figure: a title, data drawn over an x and a y axis
// with a legend, or a message in place of data. The constructors
// (TimeSeries, CDF, Bars, ClassBars, Message) make panels.
type Panel struct {
	title   string
	message string // drawn instead of axes and data when not empty
	x, y    axis
	marks   []mark
	legend  []legendEntry
}

// axis is one of a panel's axes: its label and the data range it shows,
// never of zero width (the constructors widen it). With categories, the
// ticks sit at 0, 1, ... and carry those names. A logarithmic axis (log)
// has a positive range and ticks at powers of ten.
type axis struct {
	label      string
	min, max   float64
	categories []string
	log        bool
}

// ticks returns the axis ticks, at most about most of them.
func (a axis) ticks(most int) []tick {
	switch {
	case a.categories != nil:
		ticks := make([]tick, len(a.categories))
		for i, name := range a.categories {
			ticks[i] = tick{Value: float64(i), Label: name}
		}
		return ticks
	case a.log:
		return logTicks(a.min, a.max, most)
	default:
		return niceTicks(a.min, a.max, most)
	}
}

// frac returns where v lies on the axis: 0 at its minimum, 1 at its
// maximum, linearly or logarithmically.
func (a axis) frac(v float64) float64 {
	if a.log {
		return math.Log(v/a.min) / math.Log(a.max/a.min)
	}
	return (v - a.min) / (a.max - a.min)
}

// frame maps data coordinates into a panel's data area.
type frame struct {
	area draw.Canvas
	x, y axis
}

func (f frame) point(x, y float64) vg.Point {
	return vg.Point{X: f.px(x), Y: f.py(y)}
}

func (f frame) px(x float64) vg.Length {
	return f.area.Min.X + vg.Length(f.x.frac(x))*(f.area.Max.X-f.area.Min.X)
}

func (f frame) py(y float64) vg.Length {
	return f.area.Min.Y + vg.Length(f.y.frac(y))*(f.area.Max.Y-f.area.Min.Y)
}

// mark is something drawn in data coordinates: a line, a band or a bar.
type mark interface {
	draw(f frame)
}

// polyline is a line through points, in order.
type polyline struct {
	points []point
	style  draw.LineStyle
}

func (l polyline) draw(f frame) {
	pts := make([]vg.Point, len(l.points))
	for i, p := range l.points {
		pts[i] = f.point(p.X, p.Y)
	}
	f.area.StrokeLines(l.style, f.area.ClipLinesXY(pts)...)
}

// band is the filled area between an upper and a lower line, each in
// increasing x.
type band struct {
	upper, lower []point
	color        color.Color
}

func (b band) draw(f frame) {
	pts := make([]vg.Point, 0, len(b.upper)+len(b.lower))
	for _, p := range b.upper {
		pts = append(pts, f.point(p.X, p.Y))
	}
	for i := len(b.lower) - 1; i >= 0; i-- {
		pts = append(pts, f.point(b.lower[i].X, b.lower[i].Y))
	}
	f.area.FillPolygon(b.color, f.area.ClipPolygonXY(pts))
}

// box is a filled rectangle in data coordinates, as a bar.
type box struct {
	x0, x1, y0, y1 float64
	color          color.Color
}

func (b box) draw(f frame) {
	lo, hi := f.point(b.x0, b.y0), f.point(b.x1, b.y1)
	f.area.FillPolygon(b.color, f.area.ClipPolygonXY([]vg.Point{lo, {X: hi.X, Y: lo.Y}, hi, {X: lo.X, Y: hi.Y}}))
}

// legendEntry names a line (when fill is nil) or a filled box.
type legendEntry struct {
	name string
	line draw.LineStyle
	fill color.Color
}

// addLine adds a line through points to the panel, with a legend entry;
// nothing without points, so the legend names only what is drawn.
func (p *Panel) addLine(name string, points []point, style draw.LineStyle) {
	if len(points) == 0 {
		return
	}
	p.marks = append(p.marks, polyline{points: points, style: style})
	p.legend = append(p.legend, legendEntry{name: name, line: style})
}

// addLines adds lines through each run of points to the panel, with one
// legend entry for them all; nothing without points.
func (p *Panel) addLines(name string, runs [][]point, style draw.LineStyle) {
	if len(runs) == 0 {
		return
	}
	for _, run := range runs {
		p.marks = append(p.marks, polyline{points: run, style: style})
	}
	p.legend = append(p.legend, legendEntry{name: name, line: style})
}

// limitStyle draws limits and objectives: a dashed red line.
var limitStyle = draw.LineStyle{
	Color:  color.RGBA{200, 0, 0, 255},
	Width:  vg.Points(1.2),
	Dashes: []vg.Length{vg.Points(5), vg.Points(3)},
}

// seriesStyle draws the i-th series of a panel.
func seriesStyle(i int, width float64) draw.LineStyle {
	return draw.LineStyle{Color: Palette[i%len(Palette)], Width: vg.Points(width)}
}

// dashes is the dash pattern of a dashed series.
var dashes = []vg.Length{vg.Points(6), vg.Points(3)}

// bandColor fills the band of the i-th series: its colour, translucent so
// that lines and other bands behind it show through.
func bandColor(i int) color.Color { return Translucent(Palette[i%len(Palette)]) }

// Translucent returns c with a low opacity, as bands are drawn: lines and
// bands behind it show through.
func Translucent(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 72}
}

// WithYRange fixes the panel's value axis to [lo, hi] whatever its data,
// e.g. 0 to 100 for percentages, and returns the panel. A message panel is
// returned unchanged.
func (p *Panel) WithYRange(lo, hi float64) *Panel {
	if p.message == "" {
		p.y.min, p.y.max = widen(lo, hi)
	}
	return p
}

// Message returns a panel that shows msg instead of data, for runs with
// nothing to draw.
func Message(title, msg string) *Panel {
	return &Panel{title: title, message: msg}
}

// point is one data point.
type point struct{ X, Y float64 }

// extent is the smallest range holding the values it was given.
type extent struct{ lo, hi float64 }

func emptyExtent() extent { return extent{lo: math.Inf(1), hi: math.Inf(-1)} }

func (e *extent) add(v float64) {
	e.lo, e.hi = math.Min(e.lo, v), math.Max(e.hi, v)
}

func (e extent) empty() bool { return e.lo > e.hi }

// padded returns the extent grown by a share of its width at each end, so
// data does not touch the axes.
func (e extent) padded(share float64) (lo, hi float64) {
	lo, hi = widen(e.lo, e.hi)
	pad := share * (hi/2 - lo/2) * 2
	return lo - pad, hi + pad
}

// paddedLog returns the positive extent grown at each end by a share of its
// width on a logarithmic axis.
func (e extent) paddedLog(share float64) (lo, hi float64) {
	lo, hi = widen(e.lo, e.hi)
	grow := math.Pow(hi/lo, share)
	return lo / grow, hi * grow
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
