package pycompat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON is read with Python's json.loads semantics (the reference reads
// profile manifests so): NaN, Infinity and -Infinity are accepted,
// integers keep their exact value (Python int), duplicate keys keep the
// last value at the first key's position, and key order is kept because
// the reference's verdict can depend on it (a JSON object passes where the
// reference expects a sequence of its keys).
//
// Decoded values are: nil, bool, JSONInt, float64, string, []any and
// *Object.

// JSONInt is a JSON integer literal in canonical decimal form.
type JSONInt string

// Object is a JSON object with its key order.
type Object struct {
	Keys   []string
	Values map[string]any
}

// get returns the value of key and whether it is present.
func (o *Object) Get(key string) (any, bool) {
	v, ok := o.Values[key]
	return v, ok
}

// MaxJSONDepth bounds nesting like Python's recursion limit does.
const MaxJSONDepth = 1000

// ParseJSON decodes data (which must be valid UTF-8) as json.loads does.
func ParseJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	p := jsonParser{s: string(data)}
	if strings.HasPrefix(p.s, "\ufeff") {
		return nil, errors.New("unexpected UTF-8 BOM (decode using utf-8-sig)")
	}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, p.errorf("extra data")
	}
	return v, nil
}

type jsonParser struct {
	s   string
	pos int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.s[:p.pos], "\n")
	col := p.pos - strings.LastIndex(p.s[:p.pos], "\n")
	return fmt.Errorf("%s: line %d column %d (char %d)", fmt.Sprintf(format, args...), line, col, p.pos)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, p.errorf("maximum nesting depth exceeded")
	}
	if p.pos >= len(p.s) {
		return nil, p.errorf("expecting value")
	}
	rest := p.s[p.pos:]
	switch c := rest[0]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case strings.HasPrefix(rest, "null"):
		p.pos += 4
		return nil, nil
	case strings.HasPrefix(rest, "true"):
		p.pos += 4
		return true, nil
	case strings.HasPrefix(rest, "false"):
		p.pos += 5
		return false, nil
	case strings.HasPrefix(rest, "NaN"):
		p.pos += 3
		return math.NaN(), nil
	case strings.HasPrefix(rest, "Infinity"):
		p.pos += 8
		return math.Inf(1), nil
	case c == '-' || (c >= '0' && c <= '9'):
		if v, ok, err := p.number(); ok || err != nil {
			return v, err
		}
		if strings.HasPrefix(rest, "-Infinity") {
			p.pos += 9
			return math.Inf(-1), nil
		}
	}
	return nil, p.errorf("expecting value")
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?; ok is false
// when no number starts here.
func (p *jsonParser) number() (any, bool, error) {
	s, i := p.s, p.pos
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return nil, false, nil
	}
	isFloat := false
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		isFloat = true
		i += 2
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			isFloat = true
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	text := s[p.pos:i]
	p.pos = i
	if isFloat {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, true, p.errorf("invalid number %q", text)
		}
		return v, true, nil
	}
	if len(strings.TrimPrefix(text, "-")) > maxIntDigits {
		return nil, true, fmt.Errorf("exceeds the limit (%d digits) for integer string conversion", maxIntDigits)
	}
	return JSONInt(integerFromDigits(text).String()), true, nil
}

func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return "", p.errorf("unterminated string starting")
		}
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("invalid control character")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.s) {
			return "", p.errorf("unterminated string starting")
		}
		esc := p.s[p.pos+1]
		p.pos += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.pos:], `\u`) {
				save := p.pos
				p.pos += 2
				if r2, err := p.hex4(); err == nil && utf16.DecodeRune(r, r2) != utf8.RuneError {
					r = utf16.DecodeRune(r, r2)
				} else {
					p.pos = save
				}
			}
			b.WriteRune(r) // a lone surrogate becomes U+FFFD
		default:
			return "", p.errorf("invalid \\escape")
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.s) {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	v, err := strconv.ParseUint(p.s[p.pos:p.pos+4], 16, 32)
	if err != nil || strings.ContainsAny(p.s[p.pos:p.pos+4], "+-_xX") {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	p.pos += 4
	return rune(v), nil
}

// afterMember reads what follows an array element or object member: a
// comma (more to come) or the closing bracket (done), as json.loads does.
func (p *jsonParser) afterMember(closing byte) (done bool, err error) {
	p.skipSpace()
	if p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ',':
			p.pos++
			return false, nil
		case closing:
			p.pos++
			return true, nil
		}
	}
	return false, p.errorf("expecting ',' delimiter")
}

func (p *jsonParser) array(depth int) (any, error) {
	p.pos++
	out := []any{}
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if done, err := p.afterMember(']'); err != nil || done {
			return out, err
		}
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	p.pos++
	obj := &Object{Values: map[string]any{}}
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, p.errorf("expecting property name enclosed in double quotes")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errorf("expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, seen := obj.Values[key]; !seen {
			obj.Keys = append(obj.Keys, key)
		}
		obj.Values[key] = v
		if done, err := p.afterMember('}'); err != nil || done {
			return obj, err
		}
	}
}

// TypeName is Python's type name of a decoded JSON value.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case JSONInt:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	default:
		return "dict"
	}
}

// Str is Python's str() of a decoded JSON value.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ReprOf(v)
}

// ReprOf is Python's repr() of a decoded JSON value.
func ReprOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case JSONInt:
		return string(x)
	case float64:
		return FloatRepr(x)
	case string:
		return Repr(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = ReprOf(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Object:
		parts := make([]string, len(x.Keys))
		for i, k := range x.Keys {
			parts[i] = Repr(k) + ": " + ReprOf(x.Values[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// FloatOf is Python's float() of a decoded JSON value.
func FloatOf(v any) (float64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case JSONInt:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, errors.New("int too large to convert to float")
		}
		return f, nil
	case float64:
		return x, nil
	case string:
		return Float(x)
	}
	return 0, fmt.Errorf("float() argument must be a string or a real number, not '%s'", TypeName(v))
}

// IntOfValue is Python's int() of a decoded JSON value.
func IntOfValue(v any) (Integer, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return IntOf(1), nil
		}
		return IntOf(0), nil
	case JSONInt:
		return integerFromDigits(string(x)), nil
	case float64:
		return IntFromFloat(x)
	case string:
		return Int(x)
	}
	return Integer{}, fmt.Errorf("int() argument must be a string, a bytes-like object or a real number, not '%s'", TypeName(v))
}

// EqualsInt is Python's v == n for a decoded JSON value (True == 1,
// 5.0 == 5).
func EqualsInt(v any, n int64) bool {
	switch x := v.(type) {
	case bool:
		return (x && n == 1) || (!x && n == 0)
	case JSONInt:
		return string(x) == strconv.FormatInt(n, 10)
	case float64:
		return x == float64(n)
	}
	return false
}

// Tuple is Python's tuple(v) for a decoded JSON value: the items of a
// list, the keys of a dict, the characters of a string; ok is false where
// Python raises TypeError.
func Tuple(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case *Object:
		out := make([]any, len(x.Keys))
		for i, k := range x.Keys {
			out[i] = k
		}
		return out, true
	case string:
		out := []any{}
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, true
	}
	return nil, false
}

// Plain converts a decoded value to what encoding/json would give for
// map[string]any: numbers become float64, objects map[string]any.
func Plain(v any) any {
	switch x := v.(type) {
	case JSONInt:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	case *Object:
		out := make(map[string]any, len(x.Keys))
		for _, k := range x.Keys {
			out[k] = Plain(x.Values[k])
		}
		return out
	}
	return v
}
