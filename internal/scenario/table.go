package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"servesim/internal/texttable"
)

// tableColumn is one column of the table: its header (with the unit) and
// how a summary's value is printed.
type tableColumn struct {
	column texttable.Column
	value  func(BenchmarkSummary) string
}

func fixed(decimals int, get func(BenchmarkSummary) float64) func(BenchmarkSummary) string {
	return func(s BenchmarkSummary) string { return texttable.Fixed(get(s), decimals) }
}

// tableColumns are the summary fields with the decimals the reference
// rounds them to (the attainment as a percentage).
var tableColumns = []tableColumn{
	{texttable.Column{Header: "engine", Text: true}, func(s BenchmarkSummary) string { return s.Engine }},
	{texttable.Column{Header: "workload", Text: true}, func(s BenchmarkSummary) string { return s.Workload }},
	{texttable.Column{Header: "requests"}, func(s BenchmarkSummary) string { return strconv.Itoa(s.TotalRequests) }},
	{texttable.Column{Header: "duration (s)"}, fixed(3, func(s BenchmarkSummary) float64 { return s.DurationS })},
	{texttable.Column{Header: "TTFT p50 (ms)"}, fixed(2, func(s BenchmarkSummary) float64 { return s.TTFTP50MS })},
	{texttable.Column{Header: "TTFT p99 (ms)"}, fixed(2, func(s BenchmarkSummary) float64 { return s.TTFTP99MS })},
	{texttable.Column{Header: "TPOT p50 (ms)"}, fixed(2, func(s BenchmarkSummary) float64 { return s.TPOTP50MS })},
	{texttable.Column{Header: "TPOT p99 (ms)"}, fixed(2, func(s BenchmarkSummary) float64 { return s.TPOTP99MS })},
	{texttable.Column{Header: "output (tok/s)"}, fixed(2, func(s BenchmarkSummary) float64 { return s.RawOutputTokensPerS })},
	{texttable.Column{Header: "throughput (req/s)"}, fixed(3, func(s BenchmarkSummary) float64 { return s.RequestThroughputRPS })},
	{texttable.Column{Header: "goodput (req/s)"}, fixed(3, func(s BenchmarkSummary) float64 { return s.SLOGoodputRPS })},
	{texttable.Column{Header: "SLO met (%)"}, fixed(2, func(s BenchmarkSummary) float64 { return 100 * s.SLOAttainmentRatio })},
}

// Table renders the report for people: a caption with the trace size and
// the SLO, then one aligned row of metrics per engine, then the fixed
// diagnostics in the same columns.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario comparisons: %d requests, SLO TTFT <= %s ms and TPOT <= %s ms\n",
		r.TraceRequests, strconv.FormatFloat(r.SLOTargets.TTFTSLOMilliseconds, 'f', -1, 64), strconv.FormatFloat(r.SLOTargets.TPOTSLOMilliseconds, 'f', -1, 64))
	b.WriteString(summaryTable(r.ScenarioComparisons))
	b.WriteString("\ndiagnostics (fixed definitions):\n")
	b.WriteString(summaryTable([]BenchmarkSummary{r.Diagnostics.OverbatchedUnbounded, r.Diagnostics.ClosedLoopBaseline}))
	return b.String()
}

func summaryTable(summaries []BenchmarkSummary) string {
	t := texttable.Table{Columns: make([]texttable.Column, len(tableColumns))}
	for i, c := range tableColumns {
		t.Columns[i] = c.column
	}
	for _, s := range summaries {
		row := make([]string, len(tableColumns))
		for i, c := range tableColumns {
			row[i] = c.value(s)
		}
		t.AddRow(row...)
	}
	return t.String()
}
