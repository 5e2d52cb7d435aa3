package texttable

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTableAlignsTextLeftAndNumbersRight(t *testing.T) {
	tab := Table{Columns: []Column{{Header: "engine", Text: true}, {Header: "TTFT p99 (ms)"}, {Header: "n"}}}
	tab.AddRow("baseline", "10235.30", "80")
	tab.AddRow("µ-engine", "1.00", "7")
	tab.AddRow("short")
	want := "" +
		"engine    TTFT p99 (ms)   n\n" +
		"baseline       10235.30  80\n" +
		"µ-engine           1.00   7\n" +
		"short\n"
	assert.Equal(t, want, tab.String())
}

func TestFixed(t *testing.T) {
	tests := []struct {
		x    float64
		d    int
		want string
	}{{1.23456, 2, "1.23"}, {2.5, 0, "2"}, {math.NaN(), 2, "-"}, {math.Inf(1), 1, "-"}, {-0.125, 2, "-0.12"}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Fixed(tt.x, tt.d))
	}
}
