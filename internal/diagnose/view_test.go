package diagnose

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure/figuretest"
)

func TestDiagnoseFigure(t *testing.T) {
	report, err := Demo(DefaultOptions())
	require.NoError(t, err)
	snapshots := []Snapshot{report.BeforeRemediation, report.AfterRemediation}
	fig := Figure("demo", snapshots)
	figuretest.RequirePanelsDrawn(t, fig, 12*96, 6*96, 5000)
}

func TestBarLabel(t *testing.T) {
	tests := []struct{ log, window, want string }{
		{"a.csv", "a.csv [60s, 80s)", "[60s, 80s)"},
		{"h.jsonl", "h.jsonl [2023-11-16T18:17:10Z, 2023-11-16T18:17:20Z)", "18:17:10"},
		{"x", "unbounded_98pct_kv_watermark", "unbounded_98pct_kv_watermark"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, barLabel(tt.log, tt.window))
	}
}
