package trace

import (
	"bytes"
	"io"
	"strconv"

	"servesim/internal/workload"
)

// Mooncake keys.
const (
	keyTimestamp = "timestamp"
	keyInput     = "input_length"
	keyOutput    = "output_length"
	keyHashIDs   = "hash_ids"
)

// mooncakeKeys are the keys read, quoted as they appear in a line without
// escapes, in the order of mooncakeLine's fields.
var mooncakeKeys = [...]string{`"` + keyTimestamp + `"`, `"` + keyInput + `"`, `"` + keyOutput + `"`, `"` + keyHashIDs + `"`}

// Indexes of mooncakeKeys.
const (
	mcTimestamp = iota
	mcInput
	mcOutput
	mcHashIDs
)

// mooncakeLine holds the values of the keys read from one line, each the
// text of its JSON value (nil when the key is absent; the last one when a
// key is repeated), and the parsed hash ids.
type mooncakeLine struct {
	values  [len(mooncakeKeys)][]byte
	hashIDs []int64
}

// scan checks that line is one JSON object (nested no deeper than
// encoding/json allows) and picks out the values of the keys read; any
// other key is checked and ignored.
func (m *mooncakeLine) scan(line []byte) error {
	m.values = [len(mooncakeKeys)][]byte{}
	s := jsonScanner{s: line}
	s.space()
	err := s.object(func(key []byte, escaped bool, start, end int) {
		for i, want := range mooncakeKeys {
			if string(key) == want || (escaped && `"`+unescapeKey(key)+`"` == want) {
				m.values[i] = line[start:end]
			}
		}
	})
	if err != nil {
		return err
	}
	s.space()
	if s.pos != len(line) {
		return s.fail("expected the end of the line after the object")
	}
	return nil
}

// readMooncake reads Mooncake JSON Lines: one object per line with
// timestamp (milliseconds, a number), input_length and output_length
// (positive integers) and hash_ids (an array of integers, optional); other
// keys are ignored and blank lines skipped. Each kept request is handed to
// s.
func readMooncake(in *input, name string, maxElapsedS float64, s sink) (workload.Workload, error) {
	b := newBuilder(name, maxElapsedS, s)
	var m mooncakeLine
	for {
		raw, err := in.nextLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return workload.Workload{}, readError(name, err)
		}
		line := bytes.TrimRight(raw, "\n")
		if len(bytes.Trim(line, " \t\r")) == 0 {
			continue
		}
		number := in.line
		if err := m.scan(line); err != nil {
			return workload.Workload{}, b.errorf(number, "%v", err)
		}
		us, err := m.micros(b, number)
		if err != nil {
			return workload.Workload{}, err
		}
		if err := b.row(number, keyTimestamp, m.values[mcTimestamp], us, false); err != nil {
			return workload.Workload{}, err
		}
		input, output, err := m.lengths(b, number)
		if err != nil {
			return workload.Workload{}, err
		}
		if err := m.parseHashIDs(b, number); err != nil {
			return workload.Workload{}, err
		}
		if err := b.keep(input, output, m.hashIDs, nil); err != nil {
			return workload.Workload{}, err
		}
	}
	return b.workload(in)
}

// micros is the line's timestamp in whole microseconds.
func (m *mooncakeLine) micros(b *builder, line int) (int64, error) {
	stamp := m.values[mcTimestamp]
	if stamp == nil {
		return 0, b.errorf(line, "missing %s", keyTimestamp)
	}
	if !isJSONNumber(stamp) {
		return 0, b.fieldError(line, keyTimestamp, stamp, "expected a number of milliseconds")
	}
	ms, err := strconv.ParseFloat(string(stamp), 64)
	if err != nil {
		return 0, b.fieldError(line, keyTimestamp, stamp, errTimeRange)
	}
	us, _, err := scaleMicros(ms, Milliseconds.microsPer())
	if err != nil {
		return 0, b.fieldError(line, keyTimestamp, stamp, err)
	}
	return us, nil
}

// lengths are the line's input and output lengths, positive integers.
func (m *mooncakeLine) lengths(b *builder, line int) (input, output int64, err error) {
	var n [2]int64
	for i, key := range []string{keyInput, keyOutput} {
		text := m.values[mcInput+i]
		if text == nil {
			return 0, 0, b.errorf(line, "missing %s", key)
		}
		var ok bool
		n[i], ok = jsonInt(text)
		switch {
		case !ok:
			return 0, 0, b.fieldError(line, key, text, "expected an integer token count")
		case n[i] <= 0:
			return 0, 0, b.fieldError(line, key, text, "token counts must be positive")
		}
	}
	return n[0], n[1], nil
}

// parseHashIDs parses the line's hash ids, an array of integers; none
// when the key is absent.
func (m *mooncakeLine) parseHashIDs(b *builder, line int) error {
	m.hashIDs = m.hashIDs[:0]
	ids := m.values[mcHashIDs]
	if ids == nil {
		return nil
	}
	s := jsonScanner{s: ids}
	err := s.array(func(start, end int) error {
		id, ok := jsonInt(ids[start:end])
		if !ok {
			return s.fail("not an integer")
		}
		m.hashIDs = append(m.hashIDs, id)
		return nil
	})
	if err != nil {
		return b.fieldError(line, keyHashIDs, ids, "expected an array of integers")
	}
	return nil
}

// jsonInt parses a JSON integer literal that fits an int64.
func jsonInt(text []byte) (int64, bool) {
	if !isJSONInteger(text) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(text), 10, 64)
	return n, err == nil
}
