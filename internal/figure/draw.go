package figure

import (
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Legend geometry, in points.
const (
	swatchWidth = 16 // line or box sample before a legend name
	swatchGap   = 4  // between the sample and the name
	entryGap    = 12 // between legend entries in a row
	titleGap    = 24 // least room between a title and a legend on its row
	rowGap      = 2  // between legend rows
)

// header is the title and legend above a panel's data area: legend rows
// right-aligned, the first on the title's row when everything fits there.
type header struct {
	height      vg.Length
	rows        [][]legendEntry
	besideTitle bool
	rowHeight   vg.Length
	titleHeight vg.Length
}

// layoutHeader wraps the legend into rows no wider than width.
func (p *Panel) layoutHeader(width vg.Length) header {
	ts := measure(panelTitleSize)
	ls := measure(legendSize)
	h := header{titleHeight: ts.Height(p.title), rowHeight: ls.Height("Mg") + rowGap}
	if len(p.legend) == 0 {
		h.height = h.titleHeight
		return h
	}
	all := entriesWidth(p.legend)
	if ts.Width(p.title)+titleGap+all <= width {
		h.rows = [][]legendEntry{p.legend}
		h.besideTitle = true
		h.height = max(h.titleHeight, h.rowHeight)
		return h
	}
	var row []legendEntry
	rowWidth := vg.Length(0)
	for _, e := range p.legend {
		w := entryWidth(e)
		if len(row) > 0 && rowWidth+entryGap+w > width {
			h.rows = append(h.rows, row)
			row, rowWidth = nil, 0
		}
		if len(row) > 0 {
			rowWidth += entryGap
		}
		row = append(row, e)
		rowWidth += w
	}
	h.rows = append(h.rows, row)
	h.height = h.titleHeight + rowGap + vg.Length(len(h.rows))*h.rowHeight
	return h
}

// entriesWidth is the width of legend entries drawn in one row.
func entriesWidth(entries []legendEntry) vg.Length {
	w := vg.Length(0)
	for i, e := range entries {
		if i > 0 {
			w += entryGap
		}
		w += entryWidth(e)
	}
	return w
}

// entryWidth is the width of one legend entry: its sample and its name.
func entryWidth(e legendEntry) vg.Length {
	return swatchWidth + swatchGap + measure(legendSize).Width(e.name)
}

// draw draws the panel into its cell of dc.
func (p *Panel) draw(dc draw.Canvas, c cell) {
	top := c.outer.Max.Y - cellPad
	dc.FillText(textStyle(panelTitleSize, draw.XLeft, draw.YTop), vg.Point{X: c.area.Min.X, Y: top}, p.title)
	if p.message != "" {
		dc.FillText(textStyle(messageSize, draw.XCenter, draw.YCenter),
			vg.Point{X: (c.area.Min.X + c.area.Max.X) / 2, Y: (c.area.Min.Y + c.area.Max.Y) / 2}, p.message)
		return
	}
	p.drawLegend(dc, c.header, c.area.Max.X, top)
	area := draw.Canvas{Canvas: dc.Canvas, Rectangle: c.area}
	fr := frame{area: area, x: p.x, y: p.y}
	for _, m := range p.marks {
		m.draw(fr)
	}
	p.drawAxes(dc, fr, c)
}

// drawLegend draws the legend rows right-aligned at right, from top down.
func (p *Panel) drawLegend(dc draw.Canvas, h header, right, top vg.Length) {
	if !h.besideTitle {
		top -= h.titleHeight + rowGap
	}
	ls := textStyle(legendSize, draw.XLeft, draw.YCenter)
	for _, row := range h.rows {
		mid := top - h.rowHeight/2
		x := right - entriesWidth(row)
		for _, e := range row {
			if e.fill != nil {
				side := h.rowHeight * 0.7
				dc.FillPolygon(e.fill, []vg.Point{
					{X: x + swatchWidth/2 - side/2, Y: mid - side/2}, {X: x + swatchWidth/2 + side/2, Y: mid - side/2},
					{X: x + swatchWidth/2 + side/2, Y: mid + side/2}, {X: x + swatchWidth/2 - side/2, Y: mid + side/2},
				})
			} else {
				style := e.line
				style.Width = max(style.Width, vg.Points(1.5))
				dc.StrokeLine2(style, x, mid, x+swatchWidth, mid)
			}
			x += swatchWidth + swatchGap
			dc.FillText(ls, vg.Point{X: x, Y: mid}, e.name)
			x += ls.Width(e.name) + entryGap
		}
		top -= h.rowHeight
	}
}

// axisStyle draws the axis lines and tick marks.
var axisStyle = draw.LineStyle{Color: inkColor, Width: vg.Points(0.8)}

// drawAxes draws the left and bottom axis lines with their ticks, tick
// labels and axis labels; the y ticks are the ones the layout chose.
func (p *Panel) drawAxes(dc draw.Canvas, fr frame, c cell) {
	a := fr.area.Rectangle
	dc.StrokeLines(axisStyle, []vg.Point{{X: a.Min.X, Y: a.Max.Y}, a.Min, {X: a.Max.X, Y: a.Min.Y}})

	ys := textStyle(tickSize, draw.XRight, draw.YCenter)
	for _, t := range c.yTicks {
		y := fr.py(t.Value)
		dc.StrokeLine2(axisStyle, a.Min.X-tickLength, y, a.Min.X, y)
		dc.FillText(ys, vg.Point{X: a.Min.X - tickLength - tickGap, Y: y}, t.Label)
	}
	if p.y.label != "" {
		label := textStyle(labelSize, draw.XCenter, draw.YTop)
		label.Rotation = math.Pi / 2
		dc.FillText(label, vg.Point{X: c.outer.Min.X + cellPad, Y: (a.Min.Y + a.Max.Y) / 2}, p.y.label)
	}

	xs := textStyle(tickSize, draw.XCenter, draw.YTop)
	ticks := p.x.ticks(min(maxTicks, int((a.Max.X-a.Min.X)/xSpacing)))
	every := labelStride(ticks, xs, (a.Max.X-a.Min.X)/vg.Length(max(1, len(ticks))))
	below := a.Min.Y - tickLength
	for i, t := range ticks {
		x := fr.px(t.Value)
		dc.StrokeLine2(axisStyle, x, below, x, a.Min.Y)
		if i%every == 0 {
			dc.FillText(xs, vg.Point{X: x, Y: below - tickGap}, t.Label)
		}
	}
	if p.x.label != "" {
		dc.FillText(textStyle(labelSize, draw.XCenter, draw.YTop),
			vg.Point{X: (a.Min.X + a.Max.X) / 2, Y: below - tickGap - xs.Height("0") - labelGap}, p.x.label)
	}
}

// labelStride returns n such that labelling every n-th tick keeps the
// labels, each given room apart, from overlapping.
func labelStride(ticks []tick, style draw.TextStyle, room vg.Length) int {
	widest := vg.Length(0)
	for _, t := range ticks {
		widest = max(widest, style.Width(t.Label))
	}
	return max(1, int(math.Ceil(float64((widest+entryGap)/room))))
}
