package pycompat

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reference reads every number through Python's float() and int(). The
// accept/reject verdict of a bundle depends on their exact syntax, so this
// file reproduces it: surrounding whitespace (ASCII and Unicode), single
// underscores between digits, Unicode decimal digits, "inf"/"nan" in any
// case and sign, and integers of any size.

// maxIntDigits is Python's default limit on the digits int() converts.
const maxIntDigits = 4300

// isSpace reports whether str.strip() removes r (Py_UNICODE_ISSPACE).
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// Strip is Python's str.strip() without arguments.
func Strip(s string) string {
	return strings.TrimFunc(s, isSpace)
}

// ASCIILower lowers ASCII letters only: for the words the reference compares
// after .lower(), no other character lowers to a matching ASCII letter.
func ASCIILower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.Map(func(r rune) rune {
				if r >= 'A' && r <= 'Z' {
					return r + ('a' - 'A')
				}
				return r
			}, s)
		}
	}
	return s
}

// numberText prepares s for float() and int(): Unicode whitespace becomes a
// space and Unicode decimal digits become ASCII digits
// (_PyUnicode_TransformDecimalAndSpaceToASCII), then ASCII whitespace is
// trimmed. ok is false when s holds another non-ASCII character.
func numberText(s string) (string, bool) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f {
			ascii = false
			break
		}
	}
	if !ascii {
		var b strings.Builder
		for _, r := range s {
			switch {
			case r < 0x7f:
				b.WriteRune(r)
			case unicode.IsSpace(r):
				b.WriteByte(' ')
			case unicode.Is(unicode.Nd, r):
				b.WriteByte(byte('0' + decimalDigitValue(r)))
			default:
				return "", false
			}
		}
		s = b.String()
	}
	return strings.Trim(s, " \t\n\v\f\r"), true
}

// decimalDigitValue is the value of a Unicode decimal digit: decimal digits
// come in contiguous runs of ten starting at zero.
func decimalDigitValue(r rune) int {
	k := 0
	for unicode.Is(unicode.Nd, r-rune(k)-1) {
		k++
	}
	return k % 10
}

// stripDigitUnderscores removes underscores that each sit between two
// digits, as Python's number parsers allow; ok is false for any other
// underscore.
func stripDigitUnderscores(s string) (string, bool) {
	if !strings.Contains(s, "_") {
		return s, true
	}
	var b strings.Builder
	prev := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			if prev < '0' || prev > '9' {
				return "", false
			}
		} else {
			if prev == '_' && (c < '0' || c > '9') {
				return "", false
			}
			b.WriteByte(c)
		}
		prev = c
	}
	if prev == '_' {
		return "", false
	}
	return b.String(), true
}

// Float is Python's float(s) for a string.
func Float(s string) (float64, error) {
	text, ok := numberText(s)
	if ok {
		text, ok = stripDigitUnderscores(text)
	}
	if !ok || text == "" {
		return 0, floatSyntaxError(s)
	}
	body := text
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	if !isDecimalFloat(body) {
		return 0, floatSyntaxError(s)
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, floatSyntaxError(s)
	}
	return v, nil // out of range: ParseFloat returns ±Inf or ±0 as Python does
}

func floatSyntaxError(s string) error {
	return fmt.Errorf("could not convert string to float: %s", fieldRepr(s))
}

// isDecimalFloat reports whether s is digits[.digits][e[sign]digits] with at
// least one mantissa digit (no sign, no hexadecimal).
func isDecimalFloat(s string) bool {
	i, mantissa := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		mantissa++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			mantissa++
		}
	}
	if mantissa == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// Integer is a Python int of any size: Small when it fits in an int64,
// otherwise Big holds its canonical decimal text (sign and digits). It is
// comparable, so it can be a map key.
type Integer struct {
	Small int64
	Big   string
}

// IntOf returns the Integer of n.
func IntOf(n int64) Integer { return Integer{Small: n} }

// positive reports whether i > 0.
func (i Integer) Positive() bool {
	if i.Big != "" {
		return i.Big[0] != '-'
	}
	return i.Small > 0
}

// String is the decimal text of i.
func (i Integer) String() string {
	if i.Big != "" {
		return i.Big
	}
	return strconv.FormatInt(i.Small, 10)
}

// float is float(i); Python raises OverflowError beyond the float range.
func (i Integer) Float() (float64, error) {
	if i.Big == "" {
		return float64(i.Small), nil
	}
	v, err := strconv.ParseFloat(i.Big, 64)
	if err != nil {
		return 0, errors.New("int too large to convert to float")
	}
	return v, nil
}

// integerFromDigits builds a Integer from an optional sign and ASCII
// digits (leading zeros allowed).
func integerFromDigits(text string) Integer {
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		return Integer{Small: v}
	}
	var b big.Int
	b.SetString(text, 10)
	return Integer{Big: b.String()}
}

// Int is Python's int(s) for a string (base 10).
func Int(s string) (Integer, error) {
	invalid := func() error { return fmt.Errorf("invalid literal for int() with base 10: %s", fieldRepr(s)) }
	text, ok := numberText(s)
	if ok {
		text, ok = stripDigitUnderscores(text)
	}
	if !ok || text == "" {
		return Integer{}, invalid()
	}
	digits := text
	if digits[0] == '+' || digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return Integer{}, invalid()
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return Integer{}, invalid()
		}
	}
	if len(digits) > maxIntDigits {
		return Integer{}, fmt.Errorf("exceeds the limit (%d digits) for integer string conversion", maxIntDigits)
	}
	return integerFromDigits(text), nil
}

// Mul is Python's exact integer product.
func Mul(a, b Integer) Integer {
	if a.Big == "" && b.Big == "" {
		hi, lo := a.Small, b.Small
		if p := hi * lo; hi == 0 || (p/hi == lo && !(hi == -1 && lo == math.MinInt64) && !(lo == -1 && hi == math.MinInt64)) {
			return Integer{Small: p}
		}
	}
	var x, y big.Int
	x.SetString(a.String(), 10)
	y.SetString(b.String(), 10)
	return integerFromDigits(x.Mul(&x, &y).String())
}

// IntFromFloat is int(x) for a float: truncation toward zero.
func IntFromFloat(x float64) (Integer, error) {
	switch {
	case math.IsNaN(x):
		return Integer{}, errors.New("cannot convert float NaN to integer")
	case math.IsInf(x, 0):
		return Integer{}, errors.New("cannot convert float infinity to integer")
	}
	t := math.Trunc(x)
	if t >= -(1<<63) && t < 1<<63 {
		return Integer{Small: int64(t)}, nil
	}
	b, _ := big.NewFloat(t).Int(nil)
	return Integer{Big: b.String()}, nil
}

// nonFinite is how Python spells NaN and the infinities in str, repr and
// format; ok is false for a finite x.
func nonFinite(x float64) (string, bool) {
	switch {
	case math.IsNaN(x):
		return "nan", true
	case math.IsInf(x, 1):
		return "inf", true
	case math.IsInf(x, -1):
		return "-inf", true
	}
	return "", false
}

// FormatG is Python's format(x, "g"): six significant digits.
func FormatG(x float64) string {
	if special, ok := nonFinite(x); ok {
		return special
	}
	s := strconv.FormatFloat(x, 'g', 6, 64)
	if mant, exp, ok := strings.Cut(s, "e"); ok && strings.Contains(mant, ".") {
		s = strings.TrimRight(strings.TrimRight(mant, "0"), ".") + "e" + exp
	} else if !ok && strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// FloatRepr is Python's repr(x) for a float: the shortest round-trip
// digits, positional for exponents in [-4, 16), with ".0" for integers.
func FloatRepr(x float64) string {
	if special, ok := nonFinite(x); ok {
		return special
	}
	e := strconv.FormatFloat(x, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	f := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(f, ".") {
		f += ".0"
	}
	return f
}

// maxReprChars is the most characters of a field that fieldRepr quotes.
const maxReprChars = 80

// fieldRepr is Repr(s) for a field of at most maxReprChars characters, as
// Python's messages quote it; a longer field (which Python would quote
// whole, up to the csv module's 131,072 characters) is cut there and
// followed by "..." and its length in bytes, so a message stays one short
// line.
func fieldRepr(s string) string {
	if utf8.RuneCountInString(s) <= maxReprChars {
		return Repr(s)
	}
	cut, chars := 0, 0
	for chars < maxReprChars {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
		chars++
	}
	return fmt.Sprintf("%s... (%d bytes)", Repr(s[:cut]), len(s))
}

// Repr is Python's repr(s) for a string: single quotes unless s holds a
// single quote and no double quote; escapes for backslash, the quote and
// unprintable characters.
func Repr(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
