// Package figuretest checks rendered figures in tests: that a PNG decodes to
// the expected size and that every panel drew coloured data, so an empty or
// broken panel is caught.
package figuretest

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure"
)

// RequirePanelsDrawn renders fig as PNG and checks its size and that every
// panel holds at least minColored coloured pixels.
func RequirePanelsDrawn(t testing.TB, fig figure.Figure, width, height, minColored int) {
	t.Helper()
	data, err := fig.Render("png")
	require.NoError(t, err)
	img := DecodePNG(t, data, width, height)
	for c, col := range ColoredPixels(img, fig) {
		for p, n := range col {
			assert.GreaterOrEqual(t, n, minColored, "column %d panel %d is empty", c, p)
		}
	}
}

// DecodePNG decodes data as a PNG and checks its pixel size.
func DecodePNG(t testing.TB, data []byte, width, height int) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "figure is not a PNG")
	require.Equal(t, image.Rect(0, 0, width, height), img.Bounds(), "figure size")
	return img
}

// ColoredPixels counts, per panel of f, the pixels of img that are clearly
// coloured (data lines and bars; not white, grey or black text and axes).
func ColoredPixels(img image.Image, f figure.Figure) [][]int {
	b := img.Bounds()
	bounds := f.PanelBounds(b.Dx(), b.Dy())
	counts := make([][]int, len(bounds))
	for c, col := range bounds {
		counts[c] = make([]int, len(col))
		for p, rect := range col {
			for y := rect.Min.Y; y < rect.Max.Y; y++ {
				for x := rect.Min.X; x < rect.Max.X; x++ {
					if isColored(img.At(x, y)) {
						counts[c][p]++
					}
				}
			}
		}
	}
	return counts
}

func isColored(c interface{ RGBA() (r, g, b, a uint32) }) bool {
	r, g, b, _ := c.RGBA()
	hi := max(r, g, b) >> 8
	lo := min(r, g, b) >> 8
	return hi-lo > 60
}
