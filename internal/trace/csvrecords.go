package trace

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
)

// csvRecords reads the records of a CSV input as encoding/csv does (RFC
// 4180: fields separated by commas; a field in double quotes may hold
// commas, line breaks and doubled quotes; a quote anywhere else is an
// error; blank lines are skipped; CRLF reads as LF). Lines without a double
// quote, the usual case, are split where they lie in the read buffer; from
// the first line holding a quote on, encoding/csv reads the rest.
type csvRecords struct {
	in     *input
	name   string
	fields [][]byte
	csv    *csv.Reader // reads the rest of the input once a line held a quote
	base   int         // lines before the first one csv read
}

func newCSVRecords(in *input, name string) *csvRecords {
	return &csvRecords{in: in, name: name}
}

// next returns the fields of the next record and the line it starts on,
// or io.EOF after the last. The fields are valid until the next call.
func (r *csvRecords) next() ([][]byte, int, error) {
	if r.csv != nil {
		return r.nextQuoted()
	}
	for {
		line, err := r.in.nextLine()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		if err != nil {
			return nil, 0, readError(r.name, err)
		}
		if bytes.IndexByte(line, '"') >= 0 {
			r.base = r.in.line - 1
			r.csv = csv.NewReader(io.MultiReader(bytes.NewReader(slices.Clone(line)), r.in.br))
			r.csv.FieldsPerRecord = -1
			r.csv.ReuseRecord = true
			return r.nextQuoted()
		}
		if line = trimEOL(line); len(line) == 0 {
			continue
		}
		r.fields = r.fields[:0]
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				break
			}
			r.fields = append(r.fields, line[:i])
			line = line[i+1:]
		}
		r.fields = append(r.fields, line)
		return r.fields, r.in.line, nil
	}
}

// nextQuoted is next once encoding/csv reads the input.
func (r *csvRecords) nextQuoted() ([][]byte, int, error) {
	record, err := r.csv.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		var parseErr *csv.ParseError
		if errors.As(err, &parseErr) {
			return nil, 0, fmt.Errorf("trace %s line %d: %v", r.name, r.base+parseErr.StartLine, parseErr.Err)
		}
		return nil, 0, readError(r.name, err)
	}
	line, _ := r.csv.FieldPos(0)
	r.fields = r.fields[:0]
	for _, field := range record {
		r.fields = append(r.fields, []byte(field))
	}
	return r.fields, r.base + line, nil
}
