package figure

import (
	"image/color"
	"sync"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg/draw"
)

// Text sizes, in points.
const (
	figureTitleSize = 13
	panelTitleSize  = 11
	labelSize       = 10
	tickSize        = 9
	legendSize      = 9
	messageSize     = 11
)

// inkColor draws text, axes and tick marks.
var inkColor = color.Gray{Y: 0x26}

// textHandler parses the Liberation fonts the first time a figure measures
// or draws text, not when the program starts.
var textHandler = sync.OnceValue(func() text.Handler {
	return text.Plain{Fonts: font.NewCache(liberation.Collection())}
})

// textStyle returns the style of sans-serif text of the given size (points)
// anchored as x and y say.
func textStyle(size float64, x draw.XAlignment, y draw.YAlignment) draw.TextStyle {
	return draw.TextStyle{
		Color:   inkColor,
		Font:    font.Font{Typeface: "Liberation", Variant: "Sans", Size: font.Length(size)},
		XAlign:  x,
		YAlign:  y,
		Handler: textHandler(),
	}
}

// measure returns the style of text of the given size, to measure it.
func measure(size float64) draw.TextStyle {
	return textStyle(size, draw.XLeft, draw.YBottom)
}
