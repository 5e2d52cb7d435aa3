package figure_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	. "servesim/internal/figure"
	"servesim/internal/figure/figuretest"
)

var keep = flag.String("keep", "", "also write the test figures into this folder, to look at them")

func sampleFigure(empty bool) Figure {
	t := []float64{0, 1, 2, 3, 4, 5}
	var samples []float64
	if !empty {
		samples = []float64{0.1, 0.2, 0.25, 0.4, 0.9}
	}
	return Figure{
		Title:  "sample figure",
		Width:  8 * vg.Inch,
		Height: 6 * vg.Inch,
		Columns: []Column{
			{Weight: 2, Panels: []*Panel{
				TimeSeries("queue", "requests", []Series{{Name: "queue", X: t, Y: []float64{0, 3, 5, 2, 1, 0}}}, nil),
				TimeSeries("power", "W", []Series{{Name: "power", X: t, Y: []float64{20, 60, 70, 65, math.NaN(), 20}}}, &Line{Name: "limit", Value: 64.8}),
			}},
			{Panels: []*Panel{
				CDF("TTFT", "s", samples, &Line{Name: "SLO", Value: 0.5}, "no request completed"),
				Bars("goodput", "rps", []string{"a", "b"}, []BarGroup{{Name: "x", Values: []float64{1, 2}}, {Name: "y", Values: []float64{2, math.Inf(1)}}}),
			}},
		},
	}
}

func keepFile(t *testing.T, name string, data []byte) {
	if *keep != "" {
		require.NoError(t, os.WriteFile(filepath.Join(*keep, name), data, 0o644))
	}
}

func TestRenderPNGDrawsEveryPanel(t *testing.T) {
	tests := []struct {
		name  string
		empty bool
	}{{"with data", false}, {"nothing completed", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fig := sampleFigure(tt.empty)
			data, err := fig.Render("png")
			require.NoError(t, err)
			keepFile(t, tt.name+".png", data)
			img := figuretest.DecodePNG(t, data, 8*96, 6*96)
			counts := figuretest.ColoredPixels(img, fig)
			assert.Greater(t, counts[0][0], 100, "queue panel")
			assert.Greater(t, counts[0][1], 100, "power panel")
			if tt.empty {
				assert.Less(t, counts[1][0], 20, "empty CDF shows only its message")
			} else {
				assert.Greater(t, counts[1][0], 100, "CDF panel")
			}
			assert.Greater(t, counts[1][1], 1000, "bar panel")
		})
	}
}

func TestRenderSVG(t *testing.T) {
	data, err := sampleFigure(false).Render("svg")
	require.NoError(t, err)
	var root struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
	}
	require.NoError(t, xml.NewDecoder(bytes.NewReader(data)).Decode(&root))
	assert.Equal(t, "svg", root.XMLName.Local)
	assert.Equal(t, "576pt", root.Width)
	assert.Equal(t, "432pt", root.Height)
	assert.Greater(t, bytes.Count(data, []byte("<path")), 20)
}

func TestFormat(t *testing.T) {
	tests := []struct {
		path, want string
		ok         bool
	}{{"a.png", "png", true}, {"b.SVG", "svg", true}, {"c.jpg", "", false}, {"d", "", false}}
	for _, tt := range tests {
		got, err := Format(tt.path)
		if !tt.ok {
			assert.Error(t, err, tt.path)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
}
