// Package figure draws servesim's pictures: panels (time series, empirical
// CDFs, bar charts) laid out in aligned columns under a title and rendered
// to PNG or SVG bytes. It draws with gonum.org/v1/plot's vg canvases only,
// not its plot package, whose init parses every font at start-up of any
// command; here fonts are parsed when a figure is first rendered. It knows
// nothing of the domain: commands turn their results into panels.
package figure

import (
	"bytes"
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // registers png
	_ "gonum.org/v1/plot/vg/vgsvg" // registers svg
)

// Figure is a titled page of panels arranged in columns. Panels stacked in
// one column share the left and right edges of their data areas, so time
// axes line up.
type Figure struct {
	Title   string    // page title drawn above the columns
	Width   vg.Length // zero means 14 inches
	Height  vg.Length // zero means 10 inches
	Columns []Column  // columns, left to right
}

// Column is a vertical stack of panels; Weight sets its share of the width
// (zero counts as 1).
type Column struct {
	Weight float64  // relative share of the page width; zero counts as 1
	Panels []*Panel // panels, top to bottom
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

// size returns the page size, with the defaults for zero.
func (f Figure) size() (w, h vg.Length) {
	w, h = f.Width, f.Height
	if w == 0 {
		w = 14 * vg.Inch
	}
	if h == 0 {
		h = 10 * vg.Inch
	}
	return w, h
}

// Render draws the figure in format ("png" or "svg") and returns the bytes.
func (f Figure) Render(format string) ([]byte, error) {
	w, h := f.size()
	canvas, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if f.Title != "" {
		dc.FillText(textStyle(figureTitleSize, draw.XCenter, draw.YTop),
			vg.Point{X: dc.Center().X, Y: dc.Max.Y - figurePad}, f.Title)
	}
	for _, col := range f.layout(w, h) {
		for _, cell := range col {
			cell.panel.draw(dc, cell)
		}
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
