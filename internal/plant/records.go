package plant

import (
	"io"
	"strings"
	"unicode/utf8"

	"servesim/internal/pycompat"
)

// recordReader yields the records of a CSV text one at a time, with the
// line each starts on, as Python's csv module reads them: an empty line is
// a record without fields. It returns io.EOF after the last record; a
// syntax error is a *pycompat.CSVError.
type recordReader interface {
	next() (fields []string, line int, err error)
}

// newRecordReader reads the records of text, which must be valid UTF-8, as
// Python's csv module does (pycompat.CSVReader). Text without quotes and
// without a carriage return other than before a line feed or at the very
// end (every Azure trace) is split in place, without copying a field;
// anything else goes through pycompat.CSVReader.
func newRecordReader(text string) recordReader {
	if plainCSV(text) {
		return &plainRecords{text: text}
	}
	return &pyRecords{reader: pycompat.NewCSVReader([]byte(text))}
}

// plainCSV reports whether text has no quote and no carriage return but
// those that end a line or the text, so that splitting lines at line feeds
// and fields at commas reads it exactly as Python's csv module would.
func plainCSV(text string) bool {
	if strings.IndexByte(text, '"') >= 0 {
		return false
	}
	for i := strings.IndexByte(text, '\r'); i >= 0; {
		if i+1 < len(text) && text[i+1] != '\n' {
			return false
		}
		next := strings.IndexByte(text[i+1:], '\r')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return true
}

// plainRecords splits a plainCSV text. Its fields are substrings of the
// text; the slice holding them is reused by the next call.
type plainRecords struct {
	text   string
	line   int // lines consumed so far
	fields []string
}

func (p *plainRecords) next() ([]string, int, error) {
	if p.text == "" {
		return nil, 0, io.EOF
	}
	line, rest, _ := strings.Cut(p.text, "\n")
	p.text = rest
	p.line++
	line = strings.TrimSuffix(line, "\r")
	p.fields = p.fields[:0]
	if line == "" {
		return p.fields, p.line, nil // a record without fields
	}
	if len(line) > pycompat.CSVFieldLimit && overLongField(line) {
		return nil, 0, &pycompat.CSVError{Line: p.line, Err: pycompat.ErrFieldLimit}
	}
	for {
		field, after, more := strings.Cut(line, ",")
		p.fields = append(p.fields, field)
		if !more {
			return p.fields, p.line, nil
		}
		line = after
	}
}

// overLongField reports whether a field of line has more characters than
// Python's csv module accepts.
func overLongField(line string) bool {
	for field := range strings.SplitSeq(line, ",") {
		if len(field) > pycompat.CSVFieldLimit && utf8.RuneCountInString(field) > pycompat.CSVFieldLimit {
			return true
		}
	}
	return false
}

// pyRecords reads records with pycompat.CSVReader.
type pyRecords struct{ reader *pycompat.CSVReader }

func (r *pyRecords) next() ([]string, int, error) {
	if err := r.reader.Read(); err != nil {
		return nil, 0, err
	}
	return r.reader.Strings(), r.reader.RecordLine, nil
}
