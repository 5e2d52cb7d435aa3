package figure

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		most   int
		want   []string // labels, when the case pins them
	}{
		{name: "unit", lo: 0, hi: 1, most: 6, want: []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{name: "small integers", lo: 0, hi: 7, most: 6, want: []string{"0", "2", "4", "6"}},
		{name: "narrow offset", lo: 3.2, hi: 3.9, most: 6, want: []string{"3.2", "3.4", "3.6", "3.8"}},
		{name: "ten hours in seconds", lo: 0, hi: 36000, most: 8, want: []string{"0", "5000", "10000", "15000", "20000", "25000", "30000", "35000"}},
		{name: "tiny", lo: 1e-4, hi: 3e-4, most: 6, want: []string{"0.0001", "0.00015", "0.0002", "0.00025", "0.0003"}},
		{name: "around zero", lo: -5, hi: 5, most: 6, want: []string{"-4", "-2", "0", "2", "4"}},
		{name: "zero width", lo: 3, hi: 3, most: 6},
		{name: "zero width at zero", lo: 0, hi: 0, most: 6},
		{name: "millions", lo: 0, hi: 1.3e6, most: 8, want: []string{"0", "200000", "400000", "600000", "800000", "1000000", "1200000"}},
		{name: "huge", lo: 0, hi: 1e300, most: 6},
		{name: "huge both signs", lo: -1.7e308, hi: 1.7e308, most: 6},
		{name: "padded CDF", lo: -0.025, hi: 1.025, most: 8},
		{name: "short axis", lo: 0.085, hi: 0.92, most: 2},
		{name: "no room", lo: 17, hi: 683, most: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks := niceTicks(tt.lo, tt.hi, tt.most)
			labels := make([]string, len(ticks))
			for i, tk := range ticks {
				labels[i] = tk.Label
			}
			if tt.want != nil {
				assert.Equal(t, tt.want, labels)
			}
			require.GreaterOrEqual(t, len(ticks), 2, "%v", labels)
			assert.LessOrEqual(t, len(ticks), 10, "%v", labels)
			lo, hi := widen(tt.lo, tt.hi)
			slack := 1e-9 * (hi/2 - lo/2)
			step := ticks[1].Value - ticks[0].Value
			assertNiceStep(t, step)
			seen := map[string]bool{}
			for i, tk := range ticks {
				assert.GreaterOrEqual(t, tk.Value, lo-slack, "tick %s below the range", tk.Label)
				assert.LessOrEqual(t, tk.Value, hi+slack, "tick %s above the range", tk.Label)
				if i > 0 {
					assert.InEpsilon(t, step, tk.Value-ticks[i-1].Value, 1e-9, "uneven step at %s", tk.Label)
				}
				assert.False(t, seen[tk.Label], "label %s twice", tk.Label)
				seen[tk.Label] = true
				parsed, err := strconv.ParseFloat(tk.Label, 64)
				require.NoError(t, err)
				assert.Equal(t, tk.Value, parsed, "label %s spells its value", tk.Label)
			}
		})
	}
}

// assertNiceStep checks that step is 1, 2 or 5 times a power of ten.
func assertNiceStep(t *testing.T, step float64) {
	t.Helper()
	mantissa := step / math.Pow10(int(math.Floor(math.Log10(step))))
	for _, m := range []float64{1, 2, 5, 10} {
		if math.Abs(mantissa-m) < 1e-9*m {
			return
		}
	}
	t.Errorf("step %g is not 1, 2 or 5 times a power of ten", step)
}

func TestTickLabel(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{math.Copysign(0, -1), "0"},
		{0, "0"},
		{2.5, "2.5"},
		{-40, "-40"},
		{0.001, "0.001"},
		{0.0001, "0.0001"},
		{3.5e6, "3500000"},
		{1e14, "100000000000000"},
		{0.00002, "2e-05"},
		{1e15, "1e+15"},
		{-1.7e308, "-1.7e+308"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tickLabel(tt.v), "%g", tt.v)
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		most   int
		want   []string
	}{
		{"four decades", 0.03, 600, 8, []string{"0.1", "1", "10", "100"}},
		{"decades at the ends", 0.01, 1000, 8, []string{"0.01", "0.1", "1", "10", "100", "1000"}},
		{"three powers: 1, 2 and 5", 0.2, 600, 8, []string{"0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500"}},
		{"a little over two decades: 1, 2 and 5", 0.15, 20, 8, []string{"0.2", "0.5", "1", "2", "5", "10", "20"}},
		{"milliseconds", 0.4, 90, 8, []string{"0.5", "1", "2", "5", "10", "20", "50"}},
		{"many decades: every other", 1e-3, 1e9, 6, []string{"0.01", "1", "100", "10000", "1000000", "100000000"}},
		{"narrow: linear ticks", 2, 3, 6, []string{"2", "2.2", "2.4", "2.6", "2.8", "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks := logTicks(tt.lo, tt.hi, tt.most)
			labels := make([]string, len(ticks))
			for i, tk := range ticks {
				labels[i] = tk.Label
				assert.True(t, tk.Value >= tt.lo && tk.Value <= tt.hi, "tick %s inside the range", tk.Label)
				if i > 0 {
					assert.Greater(t, tk.Value, ticks[i-1].Value, "increasing")
				}
				parsed, err := strconv.ParseFloat(tk.Label, 64)
				require.NoError(t, err)
				assert.Equal(t, tk.Value, parsed, "label %s spells its value", tk.Label)
			}
			assert.Equal(t, tt.want, labels)
		})
	}
}
