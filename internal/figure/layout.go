package figure

import (
	"image"

	"gonum.org/v1/plot/vg"
)

// Spacing of the layout, in points.
const (
	figurePad  = 6  // around the figure title
	cellPad    = 6  // inside a panel's cell, left, top and bottom
	rightPad   = 18 // right of a data area, room for the last x tick label
	headerGap  = 6  // between a panel's title and legend and its data area
	tickLength = 4  // tick marks, outside the data area
	tickGap    = 3  // between a tick mark and its label
	labelGap   = 4  // between tick labels and an axis label
	ySpacing   = 30 // least room per y tick
	xSpacing   = 60 // least room per x tick
	maxTicks   = 8  // most ticks on an axis, however long
)

// cell is where a panel is drawn: its share of the page, its data area and
// the y ticks the layout chose for it.
type cell struct {
	panel  *Panel
	outer  vg.Rectangle
	area   vg.Rectangle
	yTicks []tick
	header header
}

// layout places every panel of a page of size w x h, column by column.
// The data areas of one column share their left and right edges: the left
// edge leaves room for the widest y tick label of the whole column.
func (f Figure) layout(w, h vg.Length) [][]cell {
	top := h
	if f.Title != "" {
		top -= measure(figureTitleSize).Height(f.Title) + 2*figurePad
	}
	total := 0.0
	for _, c := range f.Columns {
		total += columnWeight(c)
	}
	out := make([][]cell, len(f.Columns))
	left := vg.Length(0)
	for i, c := range f.Columns {
		right := left + vg.Length(columnWeight(c)/total)*w
		out[i] = layoutColumn(c.Panels, vg.Rectangle{Min: vg.Point{X: left, Y: 0}, Max: vg.Point{X: right, Y: top}})
		left = right
	}
	return out
}

func columnWeight(c Column) float64 {
	if c.Weight <= 0 {
		return 1
	}
	return c.Weight
}

// layoutColumn stacks panels in equal shares of col with aligned data areas.
func layoutColumn(panels []*Panel, col vg.Rectangle) []cell {
	cells := make([]cell, len(panels))
	if len(panels) == 0 {
		return cells
	}
	height := (col.Max.Y - col.Min.Y) / vg.Length(len(panels))
	tickStyle := measure(tickSize)
	labelRoom := vg.Length(0)
	widest := vg.Length(0)
	for i, p := range panels {
		c := &cells[i]
		c.panel = p
		c.outer = vg.Rectangle{
			Min: vg.Point{X: col.Min.X, Y: col.Max.Y - vg.Length(i+1)*height},
			Max: vg.Point{X: col.Max.X, Y: col.Max.Y - vg.Length(i)*height},
		}
		if p.message != "" {
			continue
		}
		estimate := height - p.bottomHeight() - 2*cellPad - headerGap - measure(panelTitleSize).Height(p.title)
		c.yTicks = p.y.ticks(min(maxTicks, int(estimate/ySpacing)))
		for _, t := range c.yTicks {
			widest = max(widest, tickStyle.Width(t.Label))
		}
		if p.y.label != "" {
			labelRoom = measure(labelSize).Height(p.y.label) + labelGap
		}
	}
	areaLeft := col.Min.X + cellPad + labelRoom + widest + tickGap + tickLength
	areaRight := max(areaLeft+1, col.Max.X-rightPad)
	for i := range cells {
		c := &cells[i]
		c.header = c.panel.layoutHeader(areaRight - areaLeft)
		c.area = vg.Rectangle{
			Min: vg.Point{X: areaLeft, Y: c.outer.Min.Y + cellPad + c.panel.bottomHeight()},
			Max: vg.Point{X: areaRight, Y: c.outer.Max.Y - cellPad - c.header.height - headerGap},
		}
		c.area.Max.Y = max(c.area.Max.Y, c.area.Min.Y+1)
	}
	return cells
}

// bottomHeight is the room below a panel's data area: tick marks, tick
// labels and the x axis label.
func (p *Panel) bottomHeight() vg.Length {
	h := tickLength + tickGap + measure(tickSize).Height("0")
	if p.x.label != "" {
		h += labelGap + measure(labelSize).Height(p.x.label)
	}
	return h
}

// PanelBounds returns, for an image of the given pixel size rendered from f,
// the pixel rectangle of every panel's cell, column by column. Tests use it
// to check that each panel drew something.
func (f Figure) PanelBounds(width, height int) [][]image.Rectangle {
	w, h := f.size()
	sx, sy := float64(width)/float64(w), float64(height)/float64(h)
	cells := f.layout(w, h)
	out := make([][]image.Rectangle, len(cells))
	for i, col := range cells {
		for _, c := range col {
			r := c.outer
			out[i] = append(out[i], image.Rect(int(float64(r.Min.X)*sx), int(float64(h-r.Max.Y)*sy),
				int(float64(r.Max.X)*sx), int(float64(h-r.Min.Y)*sy)))
		}
	}
	return out
}
