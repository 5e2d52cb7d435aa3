package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"servesim/internal/pycompat"
)

// recordsBuffer is the size of the read buffer of a records reader: lines
// up to it are split where they lie in the buffer.
const recordsBuffer = 32 << 10

// records reads the records of a CSV input one at a time, as it streams in,
// as Python's csv module reads them (pycompat.CSVReader): an empty line is
// a record without fields. A line without a quote and without a carriage
// return other than before its line feed or at the very end (every line of
// an Azure trace) is split in place, where it lies in the read buffer, as
// Python would split it. From the first line that needs the quoting rules
// on, the rest of the input is read whole and handed to pycompat.CSVReader.
// The input must be UTF-8: records checks each line as it comes.
type records struct {
	br     *bufio.Reader
	name   string // what errors call the input
	line   int    // lines read so far
	offset int64  // bytes read so far
	long   []byte // a line longer than the buffer
	fields [][]byte
	// py reads the rest of the input once a line needed the quoting
	// rules; pyLines is the number of lines before the first one it read.
	py      *pycompat.CSVReader
	pyLines int
}

// newRecords reads the records of r; name is what errors call it.
func newRecords(r io.Reader, name string) *records {
	return &records{br: bufio.NewReaderSize(r, recordsBuffer), name: name}
}

// next returns the fields of the next record, valid until the next call,
// and the line it starts on; io.EOF after the last. Its errors: r's read
// errors as they are, a *TraceError for text that is not UTF-8 and a
// *pycompat.CSVError for a syntax error.
func (r *records) next() ([][]byte, int, error) {
	if r.py != nil {
		return r.nextQuoted()
	}
	line, err := r.readLine()
	if err != nil {
		return nil, 0, err
	}
	start := r.offset
	r.offset += int64(len(line))
	r.line++
	if !utf8.Valid(line) {
		return nil, 0, r.notUTF8(line, start, r.line)
	}
	if needsQuotingRules(line) {
		if err := r.readRest(line); err != nil {
			return nil, 0, err
		}
		return r.nextQuoted()
	}
	line = trimEOL(line)
	r.fields = r.fields[:0]
	if len(line) == 0 {
		return r.fields, r.line, nil // a record without fields
	}
	if len(line) > pycompat.CSVFieldLimit && overLongField(line) {
		return nil, 0, &pycompat.CSVError{Line: r.line, Err: pycompat.ErrFieldLimit}
	}
	for {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			r.fields = append(r.fields, line)
			return r.fields, r.line, nil
		}
		r.fields = append(r.fields, line[:i])
		line = line[i+1:]
	}
}

// readLine returns the next line with its line feed (the last line may
// have none), or io.EOF after the last; it is valid until the next call.
func (r *records) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	return line, err
}

// needsQuotingRules reports whether a line holds a quote, or a carriage
// return other than one ending it (before its line feed, or at the very
// end of the input): then splitting it at commas would not read it as
// Python's csv module does.
func needsQuotingRules(line []byte) bool {
	if bytes.IndexByte(line, '"') >= 0 {
		return true
	}
	cr := bytes.IndexByte(line, '\r')
	return cr >= 0 && cr != len(line)-1 && !(cr == len(line)-2 && line[len(line)-1] == '\n')
}

// readRest reads the rest of the input after line, which needs the quoting
// rules, and reads line and the rest with pycompat.CSVReader from then on.
func (r *records) readRest(line []byte) error {
	text := slices.Clone(line)
	var rest bytes.Buffer
	if _, err := rest.ReadFrom(r.br); err != nil {
		return err
	}
	if !utf8.Valid(rest.Bytes()) {
		return r.notUTF8(rest.Bytes(), r.offset, r.line+1)
	}
	r.pyLines = r.line - 1
	r.py = pycompat.NewCSVReader(append(text, rest.Bytes()...))
	return nil
}

// nextQuoted is next once pycompat.CSVReader reads the input.
func (r *records) nextQuoted() ([][]byte, int, error) {
	if err := r.py.Read(); err != nil {
		if syntax, ok := err.(*pycompat.CSVError); ok {
			return nil, 0, &pycompat.CSVError{Line: r.pyLines + syntax.Line, Err: syntax.Err}
		}
		return nil, 0, err
	}
	r.fields = r.fields[:0]
	for _, field := range r.py.Strings() {
		r.fields = append(r.fields, []byte(field))
	}
	return r.fields, r.pyLines + r.py.RecordLine, nil
}

// notUTF8 is the error for text, which starts at offset in the input on
// line, when it is not UTF-8: it names the line and the byte offset of the
// first invalid sequence (the reference opens traces with
// encoding="utf-8", which rejects it).
func (r *records) notUTF8(text []byte, offset int64, line int) error {
	at := 0
	for at < len(text) {
		c, size := utf8.DecodeRune(text[at:])
		if c == utf8.RuneError && size == 1 {
			break
		}
		at += size
	}
	line += bytes.Count(text[:at], []byte{'\n'})
	return &TraceError{File: r.name, Line: line, Why: fmt.Sprintf("byte %d is not UTF-8: expected a UTF-8 text", offset+int64(at))}
}

// trimEOL drops a line's line feed and a carriage return before it.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'})
}

// overLongField reports whether a field of line has more characters than
// Python's csv module accepts.
func overLongField(line []byte) bool {
	for field := range bytes.SplitSeq(line, []byte{','}) {
		if len(field) > pycompat.CSVFieldLimit && utf8.RuneCount(field) > pycompat.CSVFieldLimit {
			return true
		}
	}
	return false
}
