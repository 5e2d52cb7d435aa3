package pycompat

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The reference opens every CSV with newline="" and encoding="utf-8" and
// reads it with csv.DictReader (the excel dialect). CSVReader is a port
// of CPython's _csv.c state machine for that dialect, so quoting, line
// endings (LF, CRLF, lone CR, newlines inside quoted fields), a byte order
// mark (kept, as Python's utf-8 codec keeps it), NUL characters and the
// field size limit behave exactly as in Python 3.11.

// CSVFieldLimit is csv.field_size_limit()'s default, in characters.
const CSVFieldLimit = 131072

type csvState int

const (
	startRecord csvState = iota
	startField
	inField
	inQuotedField
	quoteInQuotedField
	eatCRNL
)

// eol is the end-of-line event Python's reader processes after each line.
const eol = -1

// CSVReader yields the records of a CSV file. Read allocates nothing per
// record (it reuses one buffer); Strings copies a record out.
type CSVReader struct {
	data       []byte
	pos        int
	line       int // lines consumed so far (csv.reader.line_num)
	state      csvState
	buf        []byte
	ends       []int
	fieldStart int
	fieldChars int
	// RecordLine is the line on which the last record read starts.
	RecordLine int
}

// NewCSVReader reads data, which must be valid UTF-8.
func NewCSVReader(data []byte) *CSVReader {
	return &CSVReader{data: data}
}

// ErrFieldLimit is Python's error for a field of more than CSVFieldLimit
// characters.
var ErrFieldLimit = fmt.Errorf("field larger than field limit (%d)", CSVFieldLimit)

// errNewlineInField is Python's error for a line break inside an unquoted
// field.
var errNewlineInField = errors.New("new-line character seen in unquoted field")

// CSVError is a syntax error of a CSV text (Python's csv.Error) on the line
// the reader had reached: "line 7: field larger than field limit (131072)".
type CSVError struct {
	Line int   // the physical line, 1-based
	Err  error // what is wrong: ErrFieldLimit, or a line break in an unquoted field
}

// Error reads "line N: what".
func (e *CSVError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns what is wrong.
func (e *CSVError) Unwrap() error { return e.Err }

// Read advances to the next record; io.EOF at the end. An empty line is a
// record with no fields, as in Python.
func (r *CSVReader) Read() error {
	r.buf = r.buf[:0]
	r.ends = r.ends[:0]
	r.fieldStart, r.fieldChars = 0, 0
	r.RecordLine = r.line + 1
	if r.pos >= len(r.data) {
		return io.EOF
	}
	for {
		if r.pos >= len(r.data) {
			// End of input inside a quoted field: Python keeps what it has.
			r.saveField()
			return nil
		}
		// One physical line: up to and including \n, \r\n or a lone \r.
		r.line++
		for r.pos < len(r.data) {
			if r.state == inField {
				if err := r.scanUnquoted(); err != nil {
					return &CSVError{Line: r.line, Err: err}
				}
				if r.pos >= len(r.data) {
					break
				}
			}
			c := r.data[r.pos]
			r.pos++
			if err := r.process(int(c)); err != nil {
				return &CSVError{Line: r.line, Err: err}
			}
			if c == '\n' {
				break
			}
			if c == '\r' {
				if r.pos < len(r.data) && r.data[r.pos] == '\n' {
					continue
				}
				break
			}
		}
		if err := r.process(eol); err != nil {
			return &CSVError{Line: r.line, Err: err}
		}
		if r.state == startRecord {
			return nil
		}
	}
}

// scanUnquoted adds the run of ordinary bytes that continues an unquoted
// field in one step (the hot path; process would add them one by one).
func (r *CSVReader) scanUnquoted() error {
	j := r.pos
	chars := 0
	for ; j < len(r.data); j++ {
		c := r.data[j]
		if c == ',' || c == '\r' || c == '\n' {
			break
		}
		if c&0xc0 != 0x80 {
			chars++
		}
	}
	if r.fieldChars+chars > CSVFieldLimit {
		return ErrFieldLimit
	}
	r.buf = append(r.buf, r.data[r.pos:j]...)
	r.fieldChars += chars
	r.pos = j
	return nil
}

func (r *CSVReader) saveField() {
	r.ends = append(r.ends, len(r.buf))
	r.fieldStart = len(r.buf)
	r.fieldChars = 0
}

func (r *CSVReader) addChar(c int) error {
	if byte(c)&0xc0 != 0x80 { // count characters, not UTF-8 continuation bytes
		if r.fieldChars >= CSVFieldLimit {
			return ErrFieldLimit
		}
		r.fieldChars++
	}
	r.buf = append(r.buf, byte(c))
	return nil
}

// endLine saves the field and moves to the next record or eats the newline.
func (r *CSVReader) endLine(c int) {
	r.saveField()
	if c == eol {
		r.state = startRecord
	} else {
		r.state = eatCRNL
	}
}

func (r *CSVReader) process(c int) error {
	isNewline := c == '\n' || c == '\r'
	switch r.state {
	case startRecord:
		if c == eol {
			return nil
		}
		if isNewline {
			r.state = eatCRNL
			return nil
		}
		r.state = startField
		return r.startField(c, isNewline)
	case startField:
		return r.startField(c, isNewline)
	case inField:
		switch {
		case isNewline || c == eol:
			r.endLine(c)
		case c == ',':
			r.saveField()
			r.state = startField
		default:
			return r.addChar(c)
		}
	case inQuotedField:
		switch c {
		case eol:
		case '"':
			r.state = quoteInQuotedField
		default:
			return r.addChar(c)
		}
	case quoteInQuotedField:
		switch {
		case c == '"':
			r.state = inQuotedField
			return r.addChar(c)
		case c == ',':
			r.saveField()
			r.state = startField
		case isNewline || c == eol:
			r.endLine(c)
		default:
			r.state = inField
			return r.addChar(c)
		}
	case eatCRNL:
		switch {
		case isNewline:
		case c == eol:
			r.state = startRecord
		default:
			return errNewlineInField
		}
	}
	return nil
}

func (r *CSVReader) startField(c int, isNewline bool) error {
	switch {
	case isNewline || c == eol:
		r.endLine(c)
	case c == '"':
		r.state = inQuotedField
	case c == ',':
		r.saveField()
	default:
		r.state = inField
		return r.addChar(c)
	}
	return nil
}

// NumFields is the number of fields of the current record.
func (r *CSVReader) NumFields() int { return len(r.ends) }

// Strings copies the current record: one string holds all its fields,
// which are slices of it.
func (r *CSVReader) Strings() []string {
	all := string(r.buf)
	out := make([]string, len(r.ends))
	start := 0
	for i, end := range r.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// Table is a CSV file as csv.DictReader sees it: the first record (even
// an empty one) names the fields, empty records after it are skipped.
type Table struct {
	Name      string     // the file name used in messages
	HasHeader bool       // false when the file holds no record at all
	Header    []string   // DictReader.fieldnames
	Rows      [][]string // nil when read with countOnly
	RowLines  []int      // the line each row starts on
	RowCount  int
	FirstRow  []string // the first row, kept even with countOnly
	index     map[string]int
}

// ReadTable parses data as csv.DictReader would. With countOnly the rows
// are counted but not kept (for the telemetry file).
func ReadTable(name string, data []byte, countOnly bool) (*Table, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not valid UTF-8 (byte %d)", name, invalidUTF8Offset(data))
	}
	t := &Table{Name: name}
	r := NewCSVReader(data)
	for {
		err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s %w", name, err)
		}
		if !t.HasHeader {
			t.HasHeader = true
			t.Header = r.Strings()
			continue
		}
		if r.NumFields() == 0 {
			continue
		}
		if t.RowCount == 0 {
			t.FirstRow = r.Strings()
		}
		t.RowCount++
		if !countOnly {
			t.Rows = append(t.Rows, r.Strings())
			t.RowLines = append(t.RowLines, r.RecordLine)
		}
	}
	t.index = make(map[string]int, len(t.Header))
	for i, h := range t.Header {
		t.index[h] = i // the last of duplicate names wins, as in a dict
	}
	return t, nil
}

func invalidUTF8Offset(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}

// keys is tuple(row) for a DictReader row: the distinct field names in
// order, plus None (reported as a nil entry) for extra fields.
func (t *Table) Keys(row []string) []*string {
	var out []*string
	seen := map[string]bool{}
	for i := range t.Header {
		h := t.Header[i]
		if !seen[h] {
			seen[h] = true
			out = append(out, &t.Header[i])
		}
	}
	if len(row) > len(t.Header) {
		out = append(out, nil)
	}
	return out
}

// hasColumn reports whether rows have the key name.
func (t *Table) HasColumn(name string) bool {
	_, ok := t.index[name]
	return ok
}

// value is row[name]: ok is false when the row is too short, where Python
// holds None.
func (t *Table) Value(row []string, name string) (string, bool) {
	i, known := t.index[name]
	if !known || i >= len(row) {
		return "", false
	}
	return row[i], true
}

// FloatAt is float(row[name]) with the file, line and field in the error.
func (t *Table) FloatAt(row []string, line int, name string) (float64, error) {
	s, ok := t.Value(row, name)
	if !ok {
		return 0, fmt.Errorf("%s line %d: %s: missing field (float() argument must be a string or a real number, not 'NoneType')", t.Name, line, name)
	}
	v, err := Float(s)
	if err != nil {
		return 0, fmt.Errorf("%s line %d: %s: %w", t.Name, line, name, err)
	}
	return v, nil
}

// IntAt is int(row[name]) with the file, line and field in the error.
func (t *Table) IntAt(row []string, line int, name string) (Integer, error) {
	s, ok := t.Value(row, name)
	if !ok {
		return Integer{}, fmt.Errorf("%s line %d: %s: missing field (int() argument must be a string, a bytes-like object or a real number, not 'NoneType')", t.Name, line, name)
	}
	v, err := Int(s)
	if err != nil {
		return Integer{}, fmt.Errorf("%s line %d: %s: %w", t.Name, line, name, err)
	}
	return v, nil
}
