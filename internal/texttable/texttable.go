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

// Sig formats x for people: rounded to digits significant digits (at least
// one) in plain decimals, without trailing zeros, the integer digits always
// kept (0.08558345566535629 is "0.08558" with 4, 0.5 is "0.5", 123456.7 is
// "123457"); a magnitude below 10^-4 or from 10^21 up in exponent form
// ("1.235e-05"); "-" for NaN or an infinity. For values a table prints
// once (an objective, a limit, a setting), where a column of Fixed
// decimals has no column to align with; JSON keeps the exact value.
func Sig(x float64, digits int) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "-"
	case x == 0:
		return "0"
	}
	digits = max(1, digits)
	rounded := strconv.FormatFloat(x, 'e', digits-1, 64) // the exponent after rounding: 9.99996 -> 1.000e+01
	exp, err := strconv.Atoi(rounded[strings.IndexByte(rounded, 'e')+1:])
	if err != nil || exp < -4 || exp >= 21 {
		return strconv.FormatFloat(x, 'g', digits, 64)
	}
	s := strconv.FormatFloat(x, 'f', max(0, digits-1-exp), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
