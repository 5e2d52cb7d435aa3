package diagnose

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
)

// csvScanner splits CSV (RFC 4180, as encoding/csv reads it with its
// defaults) into records without allocating per record: the fields of the
// current record live in one reused buffer. Empty lines are skipped, CRLF
// counts as LF, and quoted fields may hold commas, doubled quotes and line
// breaks.
type csvScanner struct {
	br        *bufio.Reader
	maxRecord int    // the most field bytes a record may hold
	line      int    // lines read so far
	recLine   int    // line on which the current record starts
	buf       []byte // the current record's field bytes, back to back
	ends      []int  // end offset in buf of each field
	pending   []byte // a line longer than the read buffer, being assembled
}

// Errors of the CSV syntax, worded as encoding/csv words them.
var (
	errBareQuote  = errors.New(`bare " in non-quoted-field`)
	errQuote      = errors.New(`extraneous or missing " in quoted-field`)
	errFieldCount = errors.New("wrong number of fields: every row must have as many fields as the header")
	errLongRecord = errors.New("a record longer than the line cap: is a quote left open?")
)

// newCSVScanner reads records of at most maxRecord field bytes from br.
func newCSVScanner(br *bufio.Reader, maxRecord int64) *csvScanner {
	return &csvScanner{br: br, maxRecord: int(min(maxRecord, math.MaxInt32))}
}

// readLine returns the next line with a CRLF ending turned into LF (a final
// CR before the end of input is dropped), or io.EOF. The line is valid until
// the next call.
func (s *csvScanner) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.pending = append(s.pending[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			s.pending = append(s.pending, line...)
		}
		line = s.pending
	}
	if len(line) > 0 && err == io.EOF {
		err = nil
		if line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
	}
	if err != nil {
		return nil, err
	}
	s.line++
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, nil
}

// next reads the next record; it returns io.EOF after the last one.
func (s *csvScanner) next() error {
	var line []byte
	for {
		var err error
		if line, err = s.readLine(); err != nil {
			return err
		}
		if len(line) > 0 && !(len(line) == 1 && line[0] == '\n') {
			break
		}
	}
	s.recLine = s.line
	s.buf, s.ends = s.buf[:0], s.ends[:0]
	for {
		if len(line) == 0 || line[0] != '"' {
			// An unquoted field runs to the next comma or the line's end.
			i := bytes.IndexByte(line, ',')
			field := line
			if i >= 0 {
				field = line[:i]
			} else {
				field = bytes.TrimSuffix(field, []byte{'\n'})
			}
			if bytes.IndexByte(field, '"') >= 0 {
				return errBareQuote
			}
			s.buf = append(s.buf, field...)
			s.ends = append(s.ends, len(s.buf))
			if i < 0 {
				return nil
			}
			line = line[i+1:]
			continue
		}
		// A quoted field: "" is a quote; it may continue on following lines.
		line = line[1:]
		for {
			i := bytes.IndexByte(line, '"')
			if i < 0 {
				if s.buf = append(s.buf, line...); len(s.buf) > s.maxRecord {
					return errLongRecord
				}
				var err error
				if line, err = s.readLine(); err != nil {
					if err == io.EOF {
						return errQuote
					}
					return err
				}
				continue
			}
			s.buf = append(s.buf, line[:i]...)
			line = line[i+1:]
			switch {
			case len(line) > 0 && line[0] == '"':
				s.buf = append(s.buf, '"')
				line = line[1:]
				continue
			case len(line) > 0 && line[0] == ',':
				s.ends = append(s.ends, len(s.buf))
				line = line[1:]
			case len(line) == 0 || (len(line) == 1 && line[0] == '\n'):
				s.ends = append(s.ends, len(s.buf))
				return nil
			default:
				return errQuote
			}
			break
		}
	}
}

// fields is the number of fields in the current record.
func (s *csvScanner) fields() int { return len(s.ends) }

// field returns field i of the current record, valid until the next call
// to next.
func (s *csvScanner) field(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.buf[start:s.ends[i]]
}
