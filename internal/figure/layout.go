package figure

import "image"

// titleFraction approximates the share of the height the title takes.
const titleFraction = 0.045

// PanelBounds returns, for an image of the given pixel size rendered from f,
// the approximate pixel rectangle of every panel, column by column. Tests use
// it to check that each panel drew something.
func (f Figure) PanelBounds(width, height int) [][]image.Rectangle {
	top := 0
	if f.Title != "" {
		top = int(titleFraction * float64(height))
	}
	total := 0.0
	for _, c := range f.Columns {
		total += columnWeight(c)
	}
	out := make([][]image.Rectangle, len(f.Columns))
	left := 0.0
	for i, c := range f.Columns {
		cw := columnWeight(c) / total * float64(width)
		rows := len(c.Panels)
		for r := range rows {
			y0 := top + r*(height-top)/rows
			y1 := top + (r+1)*(height-top)/rows
			out[i] = append(out[i], image.Rect(int(left), y0, int(left+cw), y1))
		}
		left += cw
	}
	return out
}
