package diagnose

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/figure"
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

// TestWindowFigureShowsTheEmptyWindows: diagnose --by-window --plot draws
// every window from the first to the last, an empty one as a gap labelled
// "(empty)", a long run of them as one gap labelled with its count and
// span, and says in the panel's title how many there are: time never
// jumps unseen. The JSON document still lists the non-empty windows.
func TestWindowFigureShowsTheEmptyWindows(t *testing.T) {
	var log strings.Builder
	log.WriteString("arrival_s,request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival\n")
	for i, at := range []float64{1, 5, 25, 27, 200, 203} { // windows 0, 2 and 20 of 10 s
		fmt.Fprintf(&log, "%g,r%d,100,10,10,40,10,False,0,50,50\n", at, i)
	}
	path := filepath.Join(t.TempDir(), "gaps.csv")
	require.NoError(t, os.WriteFile(path, []byte(log.String()), 0o644))
	tests := []struct {
		name      string
		byWindowS float64
		want      []string
		windows   int
	}{
		{"empty windows", 10, []string{
			"[0s, 10s)", "empty", "[20s, 30s)", "17 empty", "[200s, 210s)",
			"p99 end-to-end latency per window, coloured by diagnosis; 18 empty windows (no request): gaps",
		}, 3},
		{"one empty window", 100, []string{"[0s, 100s)", "empty", "[200s, 300s)",
			"p99 end-to-end latency per window, coloured by diagnosis; 1 empty window (no request): a gap"}, 2},
		{"none", 1000, []string{"[0s, 1000s)", "p99 end-to-end latency per window, coloured by diagnosis"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := LogsOutcome([]string{path}, nil, "", tt.byWindowS, DefaultOptions())
			require.NoError(t, err)
			require.Len(t, out.Document.(WindowReport).Windows, tt.windows, "the document: the non-empty windows")
			assert.Subset(t, svgTexts(t, out.Figure), tt.want)
		})
	}
}

// TestWindowFigureKeepsLongGapsBounded: a run of empty windows longer than
// maxEmptySlots takes one slot, so two requests a year apart in one-second
// windows still make a small figure.
func TestWindowFigureKeepsLongGapsBounded(t *testing.T) {
	w, err := NewWindower(1)
	require.NoError(t, err)
	logs := steady(2, 10, 40)
	for i, at := range []float64{0, 365 * 86400} {
		require.NoError(t, w.Add(Record{Log: logs[i], ArrivalS: at, Arrival: ArrivalSeconds}))
	}
	report, err := w.Report("year", DefaultOptions())
	require.NoError(t, err)
	require.Equal(t, []emptyRun{{before: 1, first: 1, count: 365*86400 - 1}}, report.empty)
	assert.Contains(t, svgTexts(t, report.Figure("year")), "31535999 empty")
}

// svgTexts renders fig as SVG and returns its texts: title, labels, legend.
func svgTexts(t *testing.T, fig figure.Figure) []string {
	t.Helper()
	svg, err := fig.Render("svg")
	require.NoError(t, err)
	var texts []string
	for _, m := range regexp.MustCompile(`>([^<>]+)</text>`).FindAllStringSubmatch(string(svg), -1) {
		texts = append(texts, html.UnescapeString(m[1]))
	}
	return texts
}
