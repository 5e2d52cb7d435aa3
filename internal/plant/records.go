package plant

import (
	"encoding/csv"
	"io"
	"strings"
)

// recordReader yields the records of a CSV text one at a time, with the
// line each starts on; it returns io.EOF after the last.
type recordReader interface {
	next() (fields []string, line int, err error)
}

// newRecordReader reads the records of text as encoding/csv does with
// LazyQuotes and a variable number of fields. Text without quotes and
// without a carriage return other than before a line feed or at the very
// end (every Azure trace) is split in place, without copying a field;
// anything else goes through encoding/csv.
func newRecordReader(text string) recordReader {
	if plainCSV(text) {
		return &plainRecords{text: text}
	}
	reader := csv.NewReader(strings.NewReader(text))
	reader.FieldsPerRecord = -1
	reader.LazyQuotes = true
	reader.ReuseRecord = true
	return csvRecords{reader}
}

// plainCSV reports whether text has no quote and no carriage return but
// those that end a line or the text, so that splitting lines at line feeds
// and fields at commas reads it exactly as encoding/csv would.
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
	for p.text != "" {
		line, rest, _ := strings.Cut(p.text, "\n")
		p.text = rest
		p.line++
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue // encoding/csv skips empty lines
		}
		p.fields = p.fields[:0]
		for {
			field, after, more := strings.Cut(line, ",")
			p.fields = append(p.fields, field)
			if !more {
				break
			}
			line = after
		}
		return p.fields, p.line, nil
	}
	return nil, 0, io.EOF
}

// csvRecords reads records with encoding/csv.
type csvRecords struct{ reader *csv.Reader }

func (c csvRecords) next() ([]string, int, error) {
	record, err := c.reader.Read()
	if err != nil {
		return nil, 0, err
	}
	line, _ := c.reader.FieldPos(0)
	return record, line, nil
}
