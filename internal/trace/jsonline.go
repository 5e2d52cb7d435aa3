package trace

import (
	"encoding/json"
	"fmt"
)

// maxJSONDepth is how deep JSON values may nest, as in encoding/json.
const maxJSONDepth = 10000

// jsonScanner checks the JSON syntax (RFC 8259, as encoding/json reads it)
// of one line holding one value, without building it.
type jsonScanner struct {
	s     []byte
	pos   int
	depth int
}

// jsonSyntaxError is a JSON syntax error at a byte offset of the line.
type jsonSyntaxError struct {
	offset int
	msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.offset+1, e.msg)
}

func (s *jsonScanner) fail(msg string) error { return &jsonSyntaxError{s.pos, msg} }

// space skips JSON whitespace.
func (s *jsonScanner) space() {
	for s.pos < len(s.s) {
		switch s.s[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// object scans an object, calling member with each key (its text with its
// quotes, and whether it holds an escape) and the span of its value.
func (s *jsonScanner) object(member func(key []byte, escaped bool, start, end int)) error {
	if s.pos >= len(s.s) || s.s[s.pos] != '{' {
		return s.fail("expected an object")
	}
	if s.depth++; s.depth > maxJSONDepth {
		return s.fail("nested too deep")
	}
	s.pos++
	s.space()
	if s.pos < len(s.s) && s.s[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if s.pos >= len(s.s) || s.s[s.pos] != '"' {
			return s.fail("expected a string key")
		}
		keyStart := s.pos
		escaped, err := s.str()
		if err != nil {
			return err
		}
		key := s.s[keyStart:s.pos]
		s.space()
		if s.pos >= len(s.s) || s.s[s.pos] != ':' {
			return s.fail("expected ':' after an object key")
		}
		s.pos++
		s.space()
		start := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if member != nil {
			member(key, escaped, start, s.pos)
		}
		s.space()
		if s.pos < len(s.s) && s.s[s.pos] == ',' {
			s.pos++
			s.space()
			continue
		}
		if s.pos < len(s.s) && s.s[s.pos] == '}' {
			s.pos++
			s.depth--
			return nil
		}
		return s.fail("expected ',' or '}' in an object")
	}
}

// array scans an array, calling element with the span of each element.
func (s *jsonScanner) array(element func(start, end int) error) error {
	if s.pos >= len(s.s) || s.s[s.pos] != '[' {
		return s.fail("expected an array")
	}
	if s.depth++; s.depth > maxJSONDepth {
		return s.fail("nested too deep")
	}
	s.pos++
	s.space()
	if s.pos < len(s.s) && s.s[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		start := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if element != nil {
			if err := element(start, s.pos); err != nil {
				return err
			}
		}
		s.space()
		if s.pos < len(s.s) && s.s[s.pos] == ',' {
			s.pos++
			s.space()
			continue
		}
		if s.pos < len(s.s) && s.s[s.pos] == ']' {
			s.pos++
			s.depth--
			return nil
		}
		return s.fail("expected ',' or ']' in an array")
	}
}

// value scans any value.
func (s *jsonScanner) value() error {
	if s.pos >= len(s.s) {
		return s.fail("expected a value")
	}
	switch c := s.s[s.pos]; {
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array(nil)
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return s.fail("expected a value")
}

// literal scans the literal word.
func (s *jsonScanner) literal(word string) error {
	if len(s.s)-s.pos < len(word) || string(s.s[s.pos:s.pos+len(word)]) != word {
		return s.fail("expected " + word)
	}
	s.pos += len(word)
	return nil
}

// str scans a string and reports whether it holds an escape.
func (s *jsonScanner) str() (escaped bool, err error) {
	s.pos++ // the opening quote
	for s.pos < len(s.s) {
		c := s.s[s.pos]
		switch {
		case c == '"':
			s.pos++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.s) {
				return escaped, s.fail("unfinished escape in a string")
			}
			switch s.s[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				for range 4 {
					if s.pos >= len(s.s) || !isHex(s.s[s.pos]) {
						return escaped, s.fail("expected four hexadecimal digits after \\u")
					}
					s.pos++
				}
			default:
				return escaped, s.fail("invalid escape in a string")
			}
		case c < 0x20:
			return escaped, s.fail("control character in a string")
		default:
			s.pos++
		}
	}
	return escaped, s.fail("unterminated string")
}

// number scans a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() error {
	if s.s[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.s) && s.s[s.pos] == '0':
		s.pos++
	case s.pos < len(s.s) && isDigit(s.s[s.pos]):
		s.digits()
	default:
		return s.fail("expected a digit")
	}
	if s.pos < len(s.s) && s.s[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.fail("expected a digit after the decimal point")
		}
	}
	if s.pos < len(s.s) && (s.s[s.pos] == 'e' || s.s[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.s) && (s.s[s.pos] == '+' || s.s[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.fail("expected a digit in the exponent")
		}
	}
	return nil
}

// digits skips decimal digits and returns how many.
func (s *jsonScanner) digits() int {
	start := s.pos
	for s.pos < len(s.s) && isDigit(s.s[s.pos]) {
		s.pos++
	}
	return s.pos - start
}

func isHex(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// isJSONInteger reports whether a number's text is an integer literal:
// no fraction, no exponent.
func isJSONInteger(number []byte) bool {
	for _, c := range number {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return len(number) > 0 && (number[0] == '-' || isDigit(number[0]))
}

// isJSONNumber reports whether a scanned value is a number.
func isJSONNumber(value []byte) bool {
	return len(value) > 0 && (value[0] == '-' || isDigit(value[0]))
}

// unescapeKey decodes an object key holding an escape.
func unescapeKey(quoted []byte) string {
	var key string
	_ = json.Unmarshal(quoted, &key) // the scanner checked its syntax
	return key
}
