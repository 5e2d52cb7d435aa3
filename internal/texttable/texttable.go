// Package texttable writes aligned plain-text tables for terminals: a header
// row, then rows of cells padded to the widest cell of their column, text
// aligned left and numbers right, two spaces apart, no trailing spaces.
package texttable

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Column is a table column: its header (with the unit, e.g. "TTFT p99 (ms)")
// and whether its cells are text (aligned left) rather than numbers.
type Column struct {
	Header string // header text, with the unit
	Text   bool   // cells are text, aligned left; otherwise numbers, aligned right
}

// Table is a list of columns and rows of cells, one cell per column.
type Table struct {
	Columns []Column   // columns, left to right
	Rows    [][]string // rows of cells, one per column
}

// AddRow appends a row of cells.
func (t *Table) AddRow(cells ...string) {
	t.Rows = append(t.Rows, cells)
}

// String renders the header and the rows, each line ending in a newline.
func (t *Table) String() string {
	widths := make([]int, len(t.Columns))
	header := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		header[i] = c.Header
		widths[i] = utf8.RuneCountInString(c.Header)
	}
	for _, row := range t.Rows {
		for i, cell := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(cell))
			}
		}
	}
	var b strings.Builder
	t.writeRow(&b, header, widths)
	for _, row := range t.Rows {
		t.writeRow(&b, row, widths)
	}
	return b.String()
}

func (t *Table) writeRow(b *strings.Builder, row []string, widths []int) {
	var line strings.Builder
	for i, width := range widths {
		cell := ""
		if i < len(row) {
			cell = row[i]
		}
		if i > 0 {
			line.WriteString("  ")
		}
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(cell))
		if t.Columns[i].Text {
			line.WriteString(cell + pad)
		} else {
			line.WriteString(pad + cell)
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}

// Fixed formats x with the given number of decimals; "-" for NaN or an
// infinity (an undefined value).
func Fixed(x float64, decimals int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}
