package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tableColumn is one metric column of the table: its header (the JSON
// field name) and how a summary's value is printed.
type tableColumn struct {
	header string
	left   bool // text, aligned left; numbers align right
	value  func(BenchmarkSummary) string
}

func fixed(decimals int, get func(BenchmarkSummary) float64) func(BenchmarkSummary) string {
	return func(s BenchmarkSummary) string { return strconv.FormatFloat(get(s), 'f', decimals, 64) }
}

// tableColumns are the summary fields with the decimals the reference
// rounds them to.
var tableColumns = []tableColumn{
	{"engine", true, func(s BenchmarkSummary) string { return s.Engine }},
	{"workload", true, func(s BenchmarkSummary) string { return s.Workload }},
	{"total_requests", false, func(s BenchmarkSummary) string { return strconv.Itoa(s.TotalRequests) }},
	{"duration_s", false, fixed(3, func(s BenchmarkSummary) float64 { return s.DurationS })},
	{"ttft_p50_ms", false, fixed(2, func(s BenchmarkSummary) float64 { return s.TTFTP50MS })},
	{"ttft_p99_ms", false, fixed(2, func(s BenchmarkSummary) float64 { return s.TTFTP99MS })},
	{"tpot_p50_ms", false, fixed(2, func(s BenchmarkSummary) float64 { return s.TPOTP50MS })},
	{"tpot_p99_ms", false, fixed(2, func(s BenchmarkSummary) float64 { return s.TPOTP99MS })},
	{"raw_output_tokens_per_s", false, fixed(2, func(s BenchmarkSummary) float64 { return s.RawOutputTokensPerS })},
	{"request_throughput_rps", false, fixed(3, func(s BenchmarkSummary) float64 { return s.RequestThroughputRPS })},
	{"slo_goodput_rps", false, fixed(3, func(s BenchmarkSummary) float64 { return s.SLOGoodputRPS })},
	{"slo_attainment_ratio", false, fixed(4, func(s BenchmarkSummary) float64 { return s.SLOAttainmentRatio })},
}

// Table renders the report for people: a caption with the trace size and
// the SLO, then one aligned row of metrics per engine, then the fixed
// diagnostics in the same columns.
func (r Report) Table() string {
	rows := [][]string{headerRow()}
	for _, s := range r.ScenarioComparisons {
		rows = append(rows, summaryRow(s))
	}
	comparisonRows := len(rows)
	rows = append(rows, headerRow(), summaryRow(r.Diagnostics.OverbatchedUnbounded), summaryRow(r.Diagnostics.ClosedLoopBaseline))
	widths := make([]int, len(tableColumns))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario_comparisons: %d requests, SLO ttft <= %s ms and tpot <= %s ms\n",
		r.TraceRequests, strconv.FormatFloat(r.SLOTargets.TTFTSLOMS, 'f', -1, 64), strconv.FormatFloat(r.SLOTargets.TPOTSLOMS, 'f', -1, 64))
	for i, row := range rows {
		if i == comparisonRows {
			b.WriteString("\ndiagnostics (fixed definitions):\n")
		}
		writeRow(&b, row, widths)
	}
	return b.String()
}

func headerRow() []string {
	row := make([]string, len(tableColumns))
	for i, c := range tableColumns {
		row[i] = c.header
	}
	return row
}

func summaryRow(s BenchmarkSummary) []string {
	row := make([]string, len(tableColumns))
	for i, c := range tableColumns {
		row[i] = c.value(s)
	}
	return row
}

// writeRow writes cells padded to widths, two spaces apart, without
// trailing spaces.
func writeRow(b *strings.Builder, row []string, widths []int) {
	var line strings.Builder
	for i, cell := range row {
		if i > 0 {
			line.WriteString("  ")
		}
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
		if tableColumns[i].left {
			line.WriteString(cell + pad)
		} else {
			line.WriteString(pad + cell)
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}
