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

func TestSig(t *testing.T) {
	tests := []struct {
		name string
		x    float64
		d    int
		want string
	}{
		{"a profile's TPOT objective", 0.08558345566535629, 4, "0.08558"},
		{"trailing zeros dropped", 0.5, 4, "0.5"},
		{"an integer", 60, 4, "60"},
		{"integer digits kept", 123456.7, 4, "123457"},
		{"rounding carries a digit", 9.99996, 4, "10"},
		{"a float sum", 0.1 + 0.2, 4, "0.3"},
		{"negative", -0.6289720200002193, 4, "-0.629"},
		{"small", 0.00012345, 3, "0.000123"},
		{"tiny: exponent form", 1.23456e-300, 4, "1.235e-300"},
		{"huge: exponent form", 1e300, 4, "1e+300"},
		{"zero", 0, 4, "0"},
		{"at least one digit", 0.26, 0, "0.3"},
		{"undefined", math.NaN(), 4, "-"},
		{"infinite", math.Inf(-1), 4, "-"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Sig(tt.x, tt.d), tt.name)
	}
}
