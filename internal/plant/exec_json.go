package plant

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"servesim/internal/execsession"
)

// This file is the exec: controller's wire format (JSON Lines, see
// ExecController): appendObservation writes one observation line and
// parseAnswer reads one answer line, both without allocating.

// appendObservation appends obs to b as one line of JSON: an object with the
// reference's ServingObservation fields under their own names, integers as
// integers and every float as Python's json.dumps writes it (pyFloat).
func appendObservation(b []byte, obs *Observation) []byte {
	b = append(b, `{"time_s":`...)
	b = appendPyFloat(b, obs.TimeS)
	b = append(b, `,"step_index":`...)
	b = strconv.AppendInt(b, int64(obs.StepIndex), 10)
	b = append(b, `,"prefill_queue":`...)
	b = strconv.AppendInt(b, int64(obs.PrefillQueue), 10)
	b = append(b, `,"decode_active":`...)
	b = strconv.AppendInt(b, int64(obs.DecodeActive), 10)
	b = append(b, `,"prefill_remaining_tokens":`...)
	b = appendPyFloat(b, obs.PrefillRemainingTokens)
	b = append(b, `,"generated_decode_tokens":`...)
	b = appendPyFloat(b, obs.GeneratedDecodeTokens)
	b = append(b, `,"oldest_prefill_age_s":`...)
	b = appendPyFloat(b, obs.OldestPrefillAgeS)
	b = append(b, `,"kv_tokens":`...)
	b = appendPyFloat(b, obs.KVTokens)
	b = append(b, `,"kv_capacity_tokens":`...)
	b = appendPyFloat(b, obs.KVCapacityTokens)
	b = append(b, `,"temperature_c":`...)
	b = appendPyFloat(b, obs.TemperatureC)
	b = append(b, `,"previous_clock_mhz":`...)
	b = appendPyFloat(b, obs.PreviousClockMHz)
	b = append(b, `,"previous_power_w":`...)
	b = appendPyFloat(b, obs.PreviousPowerW)
	b = append(b, `,"clock_levels_mhz":`...)
	b = appendPyFloats(b, obs.ClockLevelsMHz)
	b = append(b, `,"arrived_requests":`...)
	b = strconv.AppendInt(b, int64(obs.ArrivedRequests), 10)
	b = append(b, `,"completed_requests":`...)
	b = strconv.AppendInt(b, int64(obs.CompletedRequests), 10)
	b = append(b, `,"realized_clock_levels_mhz":`...)
	b = appendPyFloats(b, obs.RealizedClockLevelsMHz)
	if finite(obs.PowerCapW) {
		// Only under a fleet power budget: the line is otherwise the
		// reference's observation.
		b = append(b, `,"power_cap_w":`...)
		b = appendPyFloat(b, obs.PowerCapW)
	}
	return append(b, "}\n"...)
}

// appendPyFloats appends xs as a JSON array of floats.
func appendPyFloats(b []byte, xs []float64) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPyFloat(b, x)
	}
	return append(b, ']')
}

// appendPyFloat appends x as Python's repr (and so json.dumps) writes a
// float: the shortest digits that read back as x, positional from 1e-4 up
// to 1e16 with at least one digit after the point (660.0), in exponent
// form otherwise (1e-05, 1e+16). Python reads it back as the same float.
// NaN and infinities, which an observation never holds, are written as
// null, as everywhere in servesim's JSON.
func appendPyFloat(b []byte, x float64) []byte {
	if !finite(x) {
		return append(b, "null"...)
	}
	if abs := math.Abs(x); abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		return strconv.AppendFloat(b, x, 'e', -1, 64)
	}
	start := len(b)
	b = strconv.AppendFloat(b, x, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// Answer field names.
const (
	answerClock = "clock_mhz"
	answerPlan  = "plan"
)

// errMalformed says that an answer is not JSON as the protocol wants it.
var errMalformed = errors.New(`not a JSON object like {"clock_mhz": 1500}`)

// parseAnswer reads one answer line: a JSON object with a finite number
// clock_mhz and optionally plan, an array of finite numbers (accepted and
// checked, not used), each at most once and nothing else. Whitespace may
// surround the tokens, the line its end of line included.
func parseAnswer(line []byte) (float64, error) {
	s := answerScanner{b: line}
	s.space()
	if !s.take('{') {
		return 0, errMalformed
	}
	clock, seenClock, seenPlan := 0.0, false, false
	s.space()
	if !s.take('}') {
		for {
			key, err := s.key()
			if err != nil {
				return 0, err
			}
			s.space()
			if !s.take(':') {
				return 0, errMalformed
			}
			s.space()
			switch key {
			case answerClock:
				if seenClock {
					return 0, fmt.Errorf("%s given twice", answerClock)
				}
				seenClock = true
				if clock, err = s.finiteNumber(answerClock); err != nil {
					return 0, err
				}
			case answerPlan:
				if seenPlan {
					return 0, fmt.Errorf("%s given twice", answerPlan)
				}
				seenPlan = true
				if err := s.plan(); err != nil {
					return 0, err
				}
			default:
				return 0, fmt.Errorf("unknown field %s: expected %s and optionally %s", key, answerClock, answerPlan)
			}
			s.space()
			if s.take('}') {
				break
			}
			if !s.take(',') {
				return 0, errMalformed
			}
			s.space()
		}
	}
	s.space()
	if s.i != len(s.b) {
		return 0, errors.New("more after the JSON object")
	}
	if !seenClock {
		return 0, fmt.Errorf("no %s", answerClock)
	}
	return clock, nil
}

// answerScanner reads the tokens of an answer line.
type answerScanner struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (s *answerScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// take consumes c when it comes next.
func (s *answerScanner) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// maxKeyBytes bounds the object keys that parseAnswer decodes: longer
// ones are unknown fields anyway.
const maxKeyBytes = 32

// key reads an object key. It returns clock_mhz or plan when the key
// decodes to one (escapes included), else the key as written, quoted and
// cut to 32 bytes, for an unknown-field message: a known key costs no
// allocation.
func (s *answerScanner) key() (string, error) {
	start := s.i
	if !s.take('"') {
		return "", errMalformed
	}
	var buf [maxKeyBytes]byte
	n := 0
	for {
		if s.i >= len(s.b) {
			return "", errMalformed
		}
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			if n <= maxKeyBytes {
				switch string(buf[:n]) {
				case answerClock:
					return answerClock, nil
				case answerPlan:
					return answerPlan, nil
				}
			}
			return execsession.QuoteAtMost(s.b[start+1:s.i-1], maxKeyBytes), nil
		case c < 0x20:
			return "", errMalformed
		case c == '\\':
			r, ok := s.escape()
			if !ok {
				return "", errMalformed
			}
			c = r
		}
		if n < maxKeyBytes {
			buf[n] = c
		}
		n++
	}
}

// escape reads the rest of a string escape after its backslash. It returns
// the character for an ASCII one, and 0xff (never part of a known key) for
// the others.
func (s *answerScanner) escape() (byte, bool) {
	if s.i >= len(s.b) {
		return 0, false
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
		if s.i+4 > len(s.b) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
		if err != nil {
			return 0, false
		}
		s.i += 4
		if v < 0x80 {
			return byte(v), true
		}
		return 0xff, true
	}
	return 0, false
}

// finiteNumber reads the value of field, which must be a finite JSON
// number. Python's json.dumps writes NaN, Infinity and -Infinity for its
// non-finite floats: they are named as such.
func (s *answerScanner) finiteNumber(field string) (float64, error) {
	if s.i >= len(s.b) {
		return 0, errMalformed
	}
	for _, word := range []string{"NaN", "Infinity", "-Infinity"} {
		if s.word(word) {
			return 0, fmt.Errorf("%s %s: expected a finite number", field, word)
		}
	}
	for _, word := range []string{"null", "true", "false"} {
		if s.word(word) {
			return 0, fmt.Errorf("%s is %s: expected a finite number", field, word)
		}
	}
	switch c := s.b[s.i]; {
	case c == '-' || ('0' <= c && c <= '9'):
	case c == '"':
		return 0, fmt.Errorf("%s is a string: expected a finite number", field)
	case c == '[' || c == '{':
		return 0, fmt.Errorf("%s is not a number: expected a finite number", field)
	default:
		return 0, errMalformed
	}
	start := s.i
	if !s.number() {
		return 0, errMalformed
	}
	x, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil || !finite(x) {
		return 0, fmt.Errorf("%s %s: expected a finite number", field, execsession.QuoteAtMost(s.b[start:s.i], 24))
	}
	return x, nil
}

// word consumes w when it comes next.
func (s *answerScanner) word(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// number consumes a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *answerScanner) number() bool {
	s.take('-')
	switch {
	case s.take('0'):
	case s.digits() == 0:
		return false
	}
	if s.take('.') && s.digits() == 0 {
		return false
	}
	if s.take('e') || s.take('E') {
		if !s.take('+') {
			s.take('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// digits consumes decimal digits and returns how many.
func (s *answerScanner) digits() int {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// plan reads a plan: an array of finite numbers, possibly empty.
func (s *answerScanner) plan() error {
	if !s.take('[') {
		return errors.New(answerPlan + ": expected an array of finite numbers")
	}
	s.space()
	if s.take(']') {
		return nil
	}
	for {
		if _, err := s.finiteNumber(answerPlan + " value"); err != nil {
			return err
		}
		s.space()
		if s.take(']') {
			return nil
		}
		if !s.take(',') {
			return errMalformed
		}
		s.space()
	}
}
