package sweep

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
)

// sloRecords are three runs of a one-axis grid: max (an slo block, no
// mpc_diagnostics), mpc (both) and a failed run (neither).
func sloRecords(t *testing.T) (*Grid, []Record) {
	t.Helper()
	g, err := NewGrid([]Axis{{Name: AxisController, Values: []string{"max", "mpc", "fixed:1"}}}, func(_, v string) (any, error) { return v, nil })
	require.NoError(t, err)
	e2e := 4.0
	slo := &plant.SLOReport{TTFTSLOSeconds: 1.5, TPOTSLOSeconds: 0.012, E2ESLOSeconds: &e2e, RequestsMeetingSLO: 6, Attainment: 0.75,
		GoodputRequestsPerS: 0.88, TTFTS: plant.Percentiles{P50: 1, P90: 1.5, P99: 1.54}, TPOTS: plant.Percentiles{P50: 0.006, P90: 0.012, P99: 0.014},
		E2ES: plant.Percentiles{P50: 1.2, P90: 1.7, P99: math.NaN()}}
	summary := &plant.Summary{Controller: "c", Metrics: plant.Metrics{P95TTFTS: 1.5, EnergyPerOutputTokenJ: 1.3}}
	mpc := &plant.MPCDiagnostics{SuccessfulSolves: 5, FallbackCount: 1, ControlPeriodS: 1, HorizonSteps: 30}
	cell := func(i int) Cell { return Cell{Index: i, Values: []string{g.Axes[0].Values[i]}, Choices: []int{i}} }
	return g, []Record{
		{Cell: cell(0), Axes: jsonout.Object{{Key: "controller", Value: "max"}}, Summary: summary, SLO: slo},
		{Cell: cell(1), Axes: jsonout.Object{{Key: "controller", Value: "mpc"}}, Summary: summary, SLO: slo, MPCDiagnostics: mpc},
		{Cell: cell(2), Axes: jsonout.Object{{Key: "controller", Value: "fixed:1"}}, Err: errors.New("broken")},
	}
}

func TestRecordsCarryTheSLOBlockAndMPCDiagnostics(t *testing.T) {
	t.Parallel()
	_, recs := sloRecords(t)
	line := func(r Record) string {
		b, err := jsonout.AppendLine(nil, r.JSON(strings.Repeat("a", 64), 3))
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, line(recs[0]), `,"slo":{"ttft_slo_s":1.5,"tpot_slo_s":0.012,"e2e_slo_s":4,"requests_meeting_slo":6,"attainment":0.75,`+
		`"goodput_requests_per_s":0.88,"ttft_s":{"p50":1,"p90":1.5,"p99":1.54},"tpot_s":{"p50":0.006,"p90":0.012,"p99":0.014},`+
		`"e2e_s":{"p50":1.2,"p90":1.7,"p99":null}},"mpc_diagnostics":null}`+"\n")
	assert.Contains(t, line(recs[1]), `,"mpc_diagnostics":{"successful_solves":5,"fallback_count":1,"control_period_s":1,"horizon_steps":30,`+
		`"solve_time_deadline_s":null,"accepted_solves_met_deadline":false}}`+"\n")
	assert.Contains(t, line(recs[2]), `"error":"broken","metrics":null,"summary":null,"slo":null,"mpc_diagnostics":null}`+"\n")
	for _, r := range recs {
		parsed, err := ParseRunLine([]byte(line(r)))
		require.NoError(t, err, "a record reads back")
		assert.Equal(t, r.Cell.Index, parsed.Cell)
	}
}

func TestCSVAppendsTheSLOColumns(t *testing.T) {
	t.Parallel()
	g, recs := sloRecords(t)
	header := CSVHeader(g.Axes, func(a string) string { return a })
	summaryEnd := 3 + len(plant.SummaryColumns())
	require.Equal(t, []string{"cell", "controller", "error"}, header[:3], "the columns before stay where they were")
	assert.Equal(t, []string{"ttft_slo_s", "tpot_slo_s", "e2e_slo_s", "requests_meeting_slo", "attainment", "goodput_requests_per_s",
		"p50_ttft_s", "p90_ttft_s", "p99_ttft_s", "p50_tpot_s", "p90_tpot_s", "p99_tpot_s", "p50_e2e_s", "p90_e2e_s", "p99_e2e_s",
		"mpc_successful_solves", "mpc_fallback_count"}, header[summaryEnd:])
	slo := []string{"1.5", "0.012", "4", "6", "0.75", "0.88", "1", "1.5", "1.54", "0.006", "0.012", "0.014", "1.2", "1.7", ""}
	assert.Equal(t, append(slices.Clone(slo), "", ""), recs[0].CSVRow()[summaryEnd:], "max: no mpc columns; an undefined p99 is empty")
	assert.Equal(t, append(slices.Clone(slo), "5", "1"), recs[1].CSVRow()[summaryEnd:])
	failed := recs[2].CSVRow()
	assert.Len(t, failed, len(header))
	assert.Equal(t, make([]string, len(header)-summaryEnd), failed[summaryEnd:])
}

func TestTableShowsAttainmentGoodputAndP99s(t *testing.T) {
	t.Parallel()
	g, recs := sloRecords(t)
	lines := strings.Split(Table(g.Axes, recs, nil), "\n")
	assert.Regexp(t, `peak temp \(C\)  SLO met \(%\)  goodput \(req/s\)  p99 TTFT \(s\)  p99 TPOT \(ms\)  error$`, lines[0])
	assert.Regexp(t, ` 75\.00 +0\.880 +1\.540 +14\.00$`, lines[1])
	assert.Regexp(t, `^ +2  fixed:1 +broken$`, lines[3])
}

// TestTableShowsTheUnfinishedRequests: beside "done (%)", each run's
// requests still unfinished when it ended (a run cut short by
// --max-sim-time); empty for a failed run. The JSON record carries the
// same count in its metrics.
func TestTableShowsTheUnfinishedRequests(t *testing.T) {
	t.Parallel()
	g, recs := sloRecords(t)
	cut := *recs[1].Summary
	cut.CompletedFraction, cut.UnfinishedRequestsAtEnd = 0.017, 2150
	recs[1].Summary = &cut
	lines := strings.Split(Table(g.Axes, recs, nil), "\n")
	assert.Regexp(t, `^cell  controller  done \(%\)  unfinished  p95 TTFT \(s\)  `, lines[0])
	tests := []struct {
		name string
		line string
		want string
	}{
		{"every request finished", lines[1], `^ +0  max +0\.0 +0  +1\.500  `},
		{"cut short", lines[2], `^ +1  mpc +1\.7 +2150  +1\.500  `},
		{"failed", lines[3], `^ +2  fixed:1 +broken$`},
	}
	for _, tt := range tests {
		assert.Regexp(t, tt.want, tt.line, tt.name)
	}
	b, err := jsonout.AppendLine(nil, recs[1].JSON(strings.Repeat("a", 64), 3))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"unfinished_requests_at_end":2150,`)
}

// TestTableNamesTheFilesOnceAbove: the profile and trace columns show file
// names (numbered by their place on the axis when two paths share one) and
// a legend above the rows gives each path once; the Pareto section names
// the groups the same way and rounds the objectives for people.
func TestTableNamesTheFilesOnceAbove(t *testing.T) {
	t.Parallel()
	const (
		profile = "../shared/data/l4_measured_aggregate/l4_profile.csv"
		conv    = "../shared/data/azure2023/AzureLLMInferenceTrace_conv.csv"
		a, b    = "/tmp/a/day.csv", "/tmp/b/day.csv"
	)
	axes := []Axis{
		{Name: AxisProfile, Values: []string{profile, "embedded"}},
		{Name: AxisTrace, Values: []string{conv, a, "eight.csv", b}},
		{Name: AxisController, Values: []string{"max"}},
	}
	g, err := NewGrid(axes, func(_, v string) (any, error) { return v, nil })
	require.NoError(t, err)
	summary := &plant.Summary{Metrics: plant.Metrics{CompletedFraction: 1, P95TTFTS: 0.5, P95TPOTS: 0.05, EnergyPerOutputTokenJ: 1.25}}
	var recs []Record
	var pareto Pareto[Brief]
	shard, err := Plan(axes, 1, 1, 1000)
	require.NoError(t, err)
	for c := range shard.All() {
		r := Record{Cell: c, Axes: CellAxes(g, c, func(a string) string { return a }), Summary: summary,
			TTFTSLOSeconds: 0.6289720200002193, TPOTSLOSeconds: 0.08558345566535629}
		recs = append(recs, r)
		pareto.Add(r.ParetoRun(g))
	}
	require.Len(t, recs, 8)
	out := Table(axes, recs, &pareto)
	legend, rest, ok := strings.Cut(out, "\n\n")
	require.True(t, ok, "a blank line after the legend:\n%s", out)
	assert.Equal(t, ""+
		"profile l4_profile.csv:                ../shared/data/l4_measured_aggregate/l4_profile.csv\n"+
		"trace AzureLLMInferenceTrace_conv.csv: ../shared/data/azure2023/AzureLLMInferenceTrace_conv.csv\n"+
		"trace day.csv#2:                       /tmp/a/day.csv\n"+
		"trace day.csv#4:                       /tmp/b/day.csv", legend)
	for _, path := range []string{profile, conv, a, b} {
		assert.Equal(t, 1, strings.Count(out, path), "%s: once", path)
	}
	lines := strings.Split(rest, "\n")
	tests := []struct {
		name, line, want string
	}{
		{"header", lines[0], `^cell  profile         trace                            controller  done \(%\)  `},
		{"a path by its file name", lines[1], `^ +0  l4_profile\.csv  AzureLLMInferenceTrace_conv\.csv  max  `},
		{"a shared file name, numbered", lines[2], `^ +1  l4_profile\.csv  day\.csv#2 +max  `},
		{"a value without a folder as given", lines[7], `^ +6  embedded +eight\.csv +max  `},
		{"the other shared file name", lines[8], `^ +7  embedded +day\.csv#4 +max  `},
	}
	for _, tt := range tests {
		assert.Regexp(t, tt.want, tt.line, tt.name)
	}
	assert.Contains(t, rest, "\nPareto front (energy per output token vs p95 TTFT), profile l4_profile.csv, trace day.csv#2:\n")
	assert.Contains(t, rest, "\nbest under SLO (p95 TTFT <= 0.629 s, p95 TPOT <= 0.08558 s, all completed): cell 0 (max), 1.250 J/token\n")
	for i, line := range lines[:9] {
		assert.LessOrEqual(t, len(line), 260, "row %d stays narrow", i)
	}

	_, recs = sloRecords(t)
	assert.True(t, strings.HasPrefix(Table([]Axis{{Name: AxisController, Values: []string{"max", "mpc", "fixed:1"}}}, recs, nil), "cell  controller  "),
		"no file axis: no legend")
}
