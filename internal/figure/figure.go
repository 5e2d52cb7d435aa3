// Package figure draws servesim's pictures with gonum.org/v1/plot: panels
// (time series, empirical CDFs, bar charts) laid out in aligned columns under
// a title and rendered to PNG or SVG bytes. It knows nothing of the domain:
// commands turn their results into panels.
package figure

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // registers png
	_ "gonum.org/v1/plot/vg/vgsvg" // registers svg
)

// Figure is a titled page of panels arranged in columns. Panels stacked in
// one column share their canvas width, so time axes line up.
type Figure struct {
	Title   string    // page title drawn above the columns
	Width   vg.Length // zero means 14 inches
	Height  vg.Length // zero means 10 inches
	Columns []Column  // columns, left to right
}

// Column is a vertical stack of panels; Weight sets its share of the width
// (zero counts as 1).
type Column struct {
	Weight float64      // relative share of the page width; zero counts as 1
	Panels []*plot.Plot // panels, top to bottom
}

// Format returns the image format for a file name's extension: "png" or
// "svg", or an error naming what is expected.
func Format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("plot file %q: expected a .png or .svg extension", path)
	}
}

// Render draws the figure in format ("png" or "svg") and returns the bytes.
func (f Figure) Render(format string) ([]byte, error) {
	w, h := f.Width, f.Height
	if w == 0 {
		w = 14 * vg.Inch
	}
	if h == 0 {
		h = 10 * vg.Inch
	}
	canvas, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	titleHeight := vg.Length(0)
	if f.Title != "" {
		style := textStyle(13)
		titleHeight = style.Height(f.Title) + 0.2*vg.Inch
		dc.FillText(style, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 0.1*vg.Inch}, f.Title)
	}
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)
	total := 0.0
	for _, c := range f.Columns {
		total += columnWeight(c)
	}
	left := body.Min.X
	width := body.Max.X - body.Min.X
	for _, c := range f.Columns {
		cw := vg.Length(columnWeight(c) / total * float64(width))
		col := body
		col.Min.X, col.Max.X = left, left+cw
		left += cw
		drawColumn(col, c.Panels)
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func columnWeight(c Column) float64 {
	if c.Weight <= 0 {
		return 1
	}
	return c.Weight
}

func drawColumn(c draw.Canvas, panels []*plot.Plot) {
	if len(panels) == 0 {
		return
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{
		Rows: len(panels), Cols: 1,
		PadX: vg.Millimeter, PadY: 3 * vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter,
	}
	canvases := plot.Align(grid, tiles, c)
	for i, p := range panels {
		canvas := canvases[i][0]
		if !finiteCanvas(canvas) {
			// Align fails for some panel mixes (a message panel has no
			// axes); fall back to plain tiles for that panel.
			canvas = tiles.At(c, 0, i)
		}
		p.Draw(canvas)
	}
}

func finiteCanvas(c draw.Canvas) bool {
	r := c.Rectangle
	return isFinite(float64(r.Min.X)) && isFinite(float64(r.Min.Y)) &&
		isFinite(float64(r.Max.X)) && isFinite(float64(r.Max.Y)) &&
		r.Max.X > r.Min.X && r.Max.Y > r.Min.Y
}

func textStyle(size float64) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, font.Length(size)),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// Palette is the colour cycle of series and categories (colour-blind safe).
var Palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{0, 0, 0, 255},       // black
}

// limitColor draws limits and objectives.
var limitColor = color.RGBA{200, 0, 0, 255}

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

// newPanel returns an empty plot with a title and axis labels.
func newPanel(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// Message returns a panel that shows msg instead of data, for runs with
// nothing to draw.
func Message(title, msg string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	labels, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{{X: 0.5, Y: 0.5}},
		Labels: []string{msg},
	})
	if err == nil {
		labels.TextStyle[0].XAlign = draw.XCenter
		labels.TextStyle[0].YAlign = draw.YCenter
		labels.TextStyle[0].Font.Size = font.Length(12)
		p.Add(labels)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	return p
}

// TimeSeries returns a panel of lines over time with an optional horizontal
// limit line. Non-finite points are dropped. With no points at all it is a
// Message panel.
func TimeSeries(title, yLabel string, series []Series, limit *Line) *plot.Plot {
	if !hasPoints(series) {
		return Message(title, "nothing was simulated")
	}
	p := newPanel(title, "simulated time (s)", yLabel)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, s := range series {
		xys := decimate(finitePoints(s.X, s.Y), maxLinePoints)
		if len(xys) == 0 {
			continue
		}
		xmin, xmax = math.Min(xmin, xys[0].X), math.Max(xmax, xys[len(xys)-1].X)
		line, err := plotter.NewLine(xys)
		if err != nil {
			continue
		}
		line.Color = Palette[i%len(Palette)]
		line.Width = vg.Points(1)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	if limit != nil && !math.IsInf(xmin, 0) {
		addHorizontal(p, *limit, xmin, xmax)
	}
	addLegendRoom(p)
	return p
}

// maxLinePoints bounds the points drawn per line: a day of 0.1 s steps
// would otherwise make a huge, slow image that shows nothing more.
const maxLinePoints = 4000

// decimate keeps, of every bucket of consecutive points, the first, the
// lowest and the highest (in order), so peaks and dips survive, until at
// most about limit points remain.
func decimate(xys plotter.XYs, limit int) plotter.XYs {
	buckets := limit / 3
	if len(xys) <= limit || buckets < 1 {
		return xys
	}
	out := make(plotter.XYs, 0, 3*buckets+1)
	size := (len(xys) + buckets - 1) / buckets
	for start := 0; start < len(xys); start += size {
		bucket := xys[start:min(start+size, len(xys))]
		lo, hi := 0, 0
		for i, p := range bucket {
			if p.Y < bucket[lo].Y {
				lo = i
			}
			if p.Y > bucket[hi].Y {
				hi = i
			}
		}
		keep := []int{0, lo, hi}
		slices.Sort(keep)
		for k, i := range keep {
			if k == 0 || i != keep[k-1] {
				out = append(out, bucket[i])
			}
		}
	}
	if last := xys[len(xys)-1]; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

func hasPoints(series []Series) bool {
	for _, s := range series {
		if len(finitePoints(s.X, s.Y)) > 0 {
			return true
		}
	}
	return false
}

func finitePoints(xs, ys []float64) plotter.XYs {
	n := min(len(xs), len(ys))
	out := make(plotter.XYs, 0, n)
	for i := range n {
		if isFinite(xs[i]) && isFinite(ys[i]) {
			out = append(out, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	return out
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func addHorizontal(p *plot.Plot, l Line, xmin, xmax float64) {
	addReference(p, l, plotter.XYs{{X: xmin, Y: l.Value}, {X: xmax, Y: l.Value}})
}

func addVertical(p *plot.Plot, l Line) {
	addReference(p, l, plotter.XYs{{X: l.Value, Y: 0}, {X: l.Value, Y: 1}})
}

// addReference draws a limit or objective: a dashed red segment.
func addReference(p *plot.Plot, l Line, ends plotter.XYs) {
	if !isFinite(l.Value) {
		return
	}
	line, err := plotter.NewLine(ends)
	if err != nil {
		return
	}
	line.Color = limitColor
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(l.Name, line)
}

// addLegendRoom raises the top of the y axis so the legend, drawn in the
// top corner, does not cover the data.
func addLegendRoom(p *plot.Plot) {
	span := p.Y.Max - p.Y.Min
	if span <= 0 {
		span = math.Max(1, math.Abs(p.Y.Max))
	}
	p.Y.Max += 0.25 * span
}

// CDF returns the empirical cumulative distribution of samples with an
// optional vertical objective line (an SLO). Non-finite samples are dropped;
// with none left it is a Message panel saying empty.
func CDF(title, xLabel string, samples []float64, objective *Line, empty string) *plot.Plot {
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
	p := newPanel(title, xLabel, "fraction of requests")
	p.Legend.Top = false
	p.Legend.Left = false
	xys := make(plotter.XYs, 0, 2*len(sorted))
	n := float64(len(sorted))
	for i, v := range sorted {
		xys = append(xys, plotter.XY{X: v, Y: float64(i) / n}, plotter.XY{X: v, Y: float64(i+1) / n})
	}
	line, err := plotter.NewLine(xys)
	if err == nil {
		line.Color = Palette[0]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%d requests", len(sorted)), line)
	}
	if objective != nil {
		addVertical(p, *objective)
	}
	p.Y.Min, p.Y.Max = 0, 1
	return p
}

// BarGroup is one named set of bar heights, one per category.
type BarGroup struct {
	Name   string    // legend label
	Values []float64 // bar height per category, in category order
}

// Bars returns a grouped bar chart: one cluster per category, one bar per
// group in each cluster. Non-finite heights are drawn as zero.
func Bars(title, yLabel string, categories []string, groups []BarGroup) *plot.Plot {
	if len(categories) == 0 || len(groups) == 0 {
		return Message(title, "nothing to compare")
	}
	p := newPanel(title, "", yLabel)
	width := vg.Points(max(4, 36/float64(len(groups))))
	for i, g := range groups {
		values := make(plotter.Values, len(categories))
		for j := range categories {
			if j < len(g.Values) && isFinite(g.Values[j]) {
				values[j] = g.Values[j]
			}
		}
		bars, err := plotter.NewBarChart(values, width)
		if err != nil {
			continue
		}
		bars.Color = Palette[i%len(Palette)]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(groups)-1)/2) * width
		p.Add(bars)
		p.Legend.Add(g.Name, bars)
	}
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	p.Y.Min = 0
	addLegendRoom(p)
	return p
}

// ColoredBar is one bar whose colour is chosen by its class.
type ColoredBar struct {
	Label string  // category label under the bar
	Value float64 // bar height
	Class string  // class that selects the bar's colour
}

// ClassBars returns a bar chart whose bars are coloured by class (with a
// legend entry per class) and an optional line series drawn across the bars,
// e.g. p99 latency per window coloured by the diagnosed cause, with p50.
func ClassBars(title, yLabel string, bars []ColoredBar, overlay *Series) *plot.Plot {
	if len(bars) == 0 {
		return Message(title, "nothing to draw")
	}
	p := newPanel(title, "", yLabel)
	var classes []string
	for _, b := range bars {
		if !slices.Contains(classes, b.Class) {
			classes = append(classes, b.Class)
		}
	}
	width := max(vg.Points(3), min(vg.Points(30), vg.Points(400/float64(len(bars)))))
	for ci, class := range classes {
		values := make(plotter.Values, len(bars))
		for i, b := range bars {
			if b.Class == class && isFinite(b.Value) {
				values[i] = b.Value
			}
		}
		chart, err := plotter.NewBarChart(values, width)
		if err != nil {
			continue
		}
		chart.Color = Palette[ci%len(Palette)]
		chart.LineStyle.Width = 0
		p.Add(chart)
		p.Legend.Add(class, chart)
	}
	if overlay != nil {
		xs := make([]float64, len(overlay.Y))
		for i := range xs {
			xs[i] = float64(i)
		}
		if pts := finitePoints(xs, overlay.Y); len(pts) > 0 {
			line, err := plotter.NewLine(pts)
			if err == nil {
				line.Color = color.Black
				line.Width = vg.Points(1.5)
				p.Add(line)
				p.Legend.Add(overlay.Name, line)
			}
		}
	}
	labels := make([]string, len(bars))
	for i, b := range bars {
		labels[i] = b.Label
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	p.Y.Min = 0
	addLegendRoom(p)
	return p
}
