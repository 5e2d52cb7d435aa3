package trace

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"servesim/internal/workload"
)

// TimeUnit is the unit of a CSV log's arrival times.
type TimeUnit string

// The time units of a CSV log's arrival column.
const (
	Seconds      TimeUnit = "s"   // a decimal number of seconds
	Milliseconds TimeUnit = "ms"  // a decimal number of milliseconds
	Microseconds TimeUnit = "us"  // a decimal number of microseconds
	ISO          TimeUnit = "iso" // an ISO 8601 date-time, read as the Azure reader does
)

// TimeUnits lists every time unit.
var TimeUnits = []TimeUnit{Seconds, Milliseconds, Microseconds, ISO}

// ParseTimeUnit returns the time unit called name.
func ParseTimeUnit(name string) (TimeUnit, error) {
	for _, u := range TimeUnits {
		if string(u) == name {
			return u, nil
		}
	}
	return "", fmt.Errorf("unknown time unit %q: expected s, ms, us or iso", name)
}

// microsPer is how many microseconds one unit of a numeric time unit is.
func (u TimeUnit) microsPer() float64 {
	switch u {
	case Milliseconds:
		return 1e3
	case Microseconds:
		return 1
	}
	return 1e6
}

// describe names what a time of the unit looks like, for error messages.
func (u TimeUnit) describe() string {
	switch u {
	case Milliseconds:
		return "a number of milliseconds"
	case Microseconds:
		return "a number of microseconds"
	case ISO:
		return "an ISO 8601 date-time"
	}
	return "a number of seconds"
}

// maxMicros bounds a numeric time in microseconds (2^53, about 285 years),
// so that times and their differences are exact in a float64.
const maxMicros = 1 << 53

// errTimeRange is the reason given for a time beyond maxMicros.
var errTimeRange = errors.New("out of range: expected a time within 2^53 microseconds (285 years) of zero")

// micros reads a time in unit u as whole microseconds (rounded to the
// nearest) and, for ISO times, whether it carries a UTC offset. Spaces and
// tabs around a number are ignored.
func (u TimeUnit) micros(text []byte) (us int64, hasZone bool, err error) {
	if u == ISO {
		return workload.ParseISOMicros(string(text))
	}
	x, ok := parseDecimal(trimSpace(text))
	if !ok {
		return 0, false, fmt.Errorf("expected %s", u.describe())
	}
	return scaleMicros(x, u.microsPer())
}

// scaleMicros is x units of scale microseconds each, as whole microseconds.
func scaleMicros(x, scale float64) (int64, bool, error) {
	us := math.Round(x * scale)
	if !(math.Abs(us) <= maxMicros) {
		return 0, false, errTimeRange
	}
	return int64(us), false, nil
}

// parseDecimal parses a decimal number: an optional sign, digits with an
// optional fraction (or a fraction alone) and an optional exponent; no
// spaces, no infinities, no hexadecimal, no underscores. It must be finite.
func parseDecimal(text []byte) (float64, bool) {
	i := 0
	if i < len(text) && (text[i] == '+' || text[i] == '-') {
		i++
	}
	mantissa := i
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	digits := i - mantissa
	if i < len(text) && text[i] == '.' {
		i++
		for i < len(text) && isDigit(text[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		exponent := i
		for i < len(text) && isDigit(text[i]) {
			i++
		}
		if i == exponent {
			return 0, false
		}
	}
	if i != len(text) {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(text), 64)
	return x, err == nil
}

// parseCount parses a token count: an optional sign and decimal digits
// that fit an int64, spaces and tabs around them ignored.
func parseCount(text []byte) (int64, bool) {
	text = trimSpace(text)
	negative := false
	if len(text) > 0 && (text[0] == '+' || text[0] == '-') {
		negative = text[0] == '-'
		text = text[1:]
	}
	if len(text) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if !isDigit(c) || n > (math.MaxInt64+1)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case negative && n <= math.MaxInt64+1:
		return -int64(n-1) - 1, true
	case !negative && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// trimSpace drops spaces and tabs around text.
func trimSpace(text []byte) []byte {
	for len(text) > 0 && (text[0] == ' ' || text[0] == '\t') {
		text = text[1:]
	}
	for len(text) > 0 && (text[len(text)-1] == ' ' || text[len(text)-1] == '\t') {
		text = text[:len(text)-1]
	}
	return text
}
