package workload

import (
	"errors"
	"strings"
	"time"
)

// errISOFormat is the reason given for a timestamp fromisoformat rejects.
var errISOFormat = errors.New("expected an ISO 8601 date-time such as 2023-11-16 18:17:03.9799600")

// ParseISOTimestamp is the timestamp parser of LoadWorkload, for the other
// trace readers that take ISO 8601 times: see parseISOTimestamp.
func ParseISOTimestamp(value string) (t time.Time, hasZone bool, err error) {
	return parseISOTimestamp(value)
}

// ParseISOMicros is ParseISOTimestamp as whole microseconds since the Unix
// epoch (the times of a trace have no finer part). The usual spellings,
// "2023-11-16 18:17:03.9799600" and "2024-05-10 00:00:00.009930+00:00"
// (any separator between date and time, a fraction of any length, an
// offset of hours and minutes), are read directly, without building a
// time.Time; anything else goes through ParseISOTimestamp.
func ParseISOMicros(value string) (us int64, hasZone bool, err error) {
	if us, hasZone, ok := isoMicrosFast(value); ok {
		return us, hasZone, nil
	}
	t, hasZone, err := parseISOTimestamp(value)
	if err != nil {
		return 0, false, err
	}
	return t.UnixMicro(), hasZone, nil
}

// isoMicrosFast reads YYYY-MM-DD?HH:MM:SS (? any ASCII character), then
// optionally a fraction
// ('.' or ',' and digits, the first six counting) and an offset
// (+HH:MM or -HH:MM), exactly as parseISOTimestamp would; ok is false for
// anything else, valid or not, which is left to parseISOTimestamp.
func isoMicrosFast[T string | []byte](s T) (us int64, hasZone, ok bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] >= 0x80 || s[13] != ':' || s[16] != ':' {
		return 0, false, false
	}
	var field [6]int // year, month, day, hour, minute, second
	for i, at := range [...]int{0, 5, 8, 11, 14, 17} {
		width := 2
		if i == 0 {
			width = 4
		}
		for j := at; j < at+width; j++ {
			if !isDigit(s[j]) {
				return 0, false, false
			}
			field[i] = field[i]*10 + int(s[j]-'0')
		}
	}
	year, month, day := field[0], field[1], field[2]
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || field[3] > 23 || field[4] > 59 || field[5] > 59 {
		return 0, false, false
	}
	rest := s[19:]
	fraction := 0
	if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			if n <= 6 {
				fraction = fraction*10 + int(rest[n]-'0')
			}
			n++
		}
		if n == 1 {
			return 0, false, false
		}
		if n <= 6 {
			fraction *= fractionScale[n-2]
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case len(rest) == 0:
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
		isDigit(rest[1]) && isDigit(rest[2]) && isDigit(rest[4]) && isDigit(rest[5]):
		hours, minutes := int(rest[1]-'0')*10+int(rest[2]-'0'), int(rest[4]-'0')*10+int(rest[5]-'0')
		offset = (hours*60 + minutes) * 60 * 1_000_000
		if offset >= 24*3600*1_000_000 {
			return 0, false, false
		}
		if rest[0] == '-' {
			offset = -offset
		}
		hasZone = true
	default:
		return 0, false, false
	}
	seconds := daysSinceEpoch(year, month, day)*86400 + int64((field[3]*60+field[4])*60+field[5])
	return seconds*1_000_000 + int64(fraction) - int64(offset), hasZone, true
}

// daysSinceEpoch is the number of days from 1970-01-01 to the date, in the
// proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func daysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	m := int64(month)
	var doy int64
	if m > 2 {
		doy = (153*(m-3)+2)/5 + int64(day) - 1
	} else {
		doy = (153*(m+9)+2)/5 + int64(day) - 1
	}
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseISOTimestamp parses value the way the reference does: surrounding
// whitespace stripped, a trailing "Z" read as +00:00, then Python 3.11's
// datetime.fromisoformat. Fractional seconds beyond six digits are
// truncated to microseconds, as Python does. hasZone reports whether the
// value carried a UTC offset (Python cannot subtract naive and aware times).
func parseISOTimestamp(value string) (t time.Time, hasZone bool, err error) {
	s := strings.TrimSpace(value)
	if strings.HasSuffix(s, "Z") {
		s = s[:len(s)-1] + "+00:00"
	}
	if len(s) < 7 || !isASCII(s) {
		return time.Time{}, false, errISOFormat
	}
	sep, err := isoDateTimeSeparator(s)
	if err != nil || sep > len(s) {
		return time.Time{}, false, errISOFormat
	}
	year, month, day, err := parseISODate(s[:sep])
	if err != nil {
		return time.Time{}, false, err
	}
	var clock [4]int
	offset, hasZone := 0, false
	if sep+1 < len(s) {
		if clock, offset, hasZone, err = parseISOTime(s[sep+1:]); err != nil {
			return time.Time{}, false, err
		}
	} else if sep < len(s) {
		return time.Time{}, false, errISOFormat // a separator with nothing after it
	}
	if clock[0] > 23 || clock[1] > 59 || clock[2] > 59 {
		return time.Time{}, false, errISOFormat
	}
	loc := time.UTC
	if hasZone {
		loc = time.FixedZone("", 0)
	}
	t = time.Date(year, time.Month(month), day, clock[0], clock[1], clock[2], clock[3]*1000, loc)
	return t.Add(-time.Duration(offset) * time.Microsecond), hasZone, nil
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits parses s as a run of ASCII digits only.
func digits[T string | []byte](s T) (int, error) {
	if len(s) == 0 {
		return 0, errISOFormat
	}
	n := 0
	for i := range len(s) {
		if !isDigit(s[i]) {
			return 0, errISOFormat
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}

// isoDateTimeSeparator is CPython's _find_isoformat_datetime_separator: the
// length of the date part (7, 8 or 10) for the forms YYYY-MM-DD, YYYYMMDD,
// YYYY-Www, YYYY-Www-D, YYYYWww and YYYYWwwD.
func isoDateTimeSeparator(s string) (int, error) {
	n := len(s)
	if n == 7 {
		return 7, nil
	}
	if s[4] == '-' {
		if s[5] != 'W' {
			return 10, nil
		}
		if n > 8 && s[8] == '-' {
			if n == 9 {
				return 0, errISOFormat
			}
			if n > 10 && isDigit(s[10]) {
				return 8, nil
			}
			return 10, nil
		}
		return 8, nil
	}
	if s[4] == 'W' {
		idx := 7
		for idx < n && isDigit(s[idx]) {
			idx++
		}
		if idx < 9 {
			return idx, nil
		}
		if idx%2 == 0 {
			return 7, nil
		}
		return 8, nil
	}
	return 8, nil
}

// parseISODate parses the date part (CPython's _parse_isoformat_date).
func parseISODate(s string) (year, month, day int, err error) {
	if len(s) != 7 && len(s) != 8 && len(s) != 10 {
		return 0, 0, 0, errISOFormat
	}
	if year, err = digits(s[:4]); err != nil {
		return 0, 0, 0, err
	}
	hasSep := s[4] == '-'
	pos := 4
	if hasSep {
		pos++
	}
	if pos < len(s) && s[pos] == 'W' {
		pos++
		if pos+2 > len(s) {
			return 0, 0, 0, errISOFormat
		}
		week, err := digits(s[pos : pos+2])
		if err != nil {
			return 0, 0, 0, err
		}
		pos += 2
		weekday := 1
		if len(s) > pos {
			if (s[pos] == '-') != hasSep {
				return 0, 0, 0, errISOFormat
			}
			if hasSep {
				pos++
			}
			if pos+1 != len(s) {
				return 0, 0, 0, errISOFormat
			}
			if weekday, err = digits(s[pos : pos+1]); err != nil {
				return 0, 0, 0, err
			}
		}
		return isoWeekToDate(year, week, weekday)
	}
	if pos+2 > len(s) {
		return 0, 0, 0, errISOFormat
	}
	if month, err = digits(s[pos : pos+2]); err != nil {
		return 0, 0, 0, err
	}
	pos += 2
	if (pos < len(s) && s[pos] == '-') != hasSep {
		return 0, 0, 0, errISOFormat
	}
	if hasSep {
		pos++
	}
	if pos+2 != len(s) {
		return 0, 0, 0, errISOFormat
	}
	if day, err = digits(s[pos : pos+2]); err != nil {
		return 0, 0, 0, err
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return 0, 0, 0, errISOFormat
	}
	return year, month, day, nil
}

// daysIn is the number of days of month (1-12) in year, in the proleptic
// Gregorian calendar that Python's datetime and Go's time share.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

// isoWeekToDate converts an ISO week date to a calendar date, accepting week
// 53 only in years that have one (CPython's _isoweek_to_gregorian).
func isoWeekToDate(year, week, weekday int) (int, int, int, error) {
	if year < 1 || year > 9999 || weekday < 1 || weekday > 7 || week < 1 || week > 53 {
		return 0, 0, 0, errISOFormat
	}
	jan4 := time.Date(year, 1, 4, 0, 0, 0, 0, time.UTC)
	monday1 := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	if week == 53 {
		if _, w := monday1.AddDate(0, 0, 52*7).ISOWeek(); w != 53 {
			return 0, 0, 0, errISOFormat
		}
	}
	d := monday1.AddDate(0, 0, (week-1)*7+weekday-1)
	return d.Year(), int(d.Month()), d.Day(), nil
}

// parseISOTime parses HH[:MM[:SS[{.,}f+]]] with an optional UTC offset
// (CPython's _parse_isoformat_time). It returns hour, minute, second and
// microsecond, and the offset in microseconds east of UTC.
func parseISOTime(s string) (clock [4]int, offsetMicros int, hasZone bool, err error) {
	if len(s) < 2 {
		return clock, 0, false, errISOFormat
	}
	zone := strings.IndexAny(s, "+-")
	if zone < 0 {
		zone = strings.IndexByte(s, 'Z') // "Z" inside; a trailing one was rewritten
	}
	timePart := s
	if zone >= 0 {
		timePart = s[:zone]
	}
	if clock, err = parseHHMMSSFF(timePart); err != nil {
		return clock, 0, false, err
	}
	if zone < 0 {
		return clock, 0, false, nil
	}
	tz := s[zone+1:]
	if s[zone] == 'Z' || len(tz) == 0 || len(tz) == 1 || len(tz) == 3 {
		return clock, 0, false, errISOFormat
	}
	parts, err := parseHHMMSSFF(tz)
	if err != nil {
		return clock, 0, false, err
	}
	offset := ((parts[0]*60+parts[1])*60+parts[2])*1_000_000 + parts[3]
	if parts[0] == 0 && parts[1] == 0 && parts[2] == 0 {
		offset = 0 // CPython makes UTC of a zero whole-second offset, dropping its fraction
	}
	if offset >= 24*3600*1_000_000 {
		return clock, 0, false, errISOFormat
	}
	if s[zone] == '-' {
		offset = -offset
	}
	return clock, offset, true, nil
}

// fractionScale turns a fraction of 1 to 5 digits into microseconds.
var fractionScale = [...]int{100000, 10000, 1000, 100, 10}

// parseHHMMSSFF parses HH[:?MM[:?SS]][{.,}f+] like CPython 3.11's C
// parse_hh_mm_ss_ff: the colon is used throughout or not at all, a fraction
// may follow any component, and only its first six digits count.
func parseHHMMSSFF(s string) ([4]int, error) {
	var comps [4]int
	pos, hasSep := 0, false
	for comp := range 3 {
		if len(s)-pos < 2 {
			return comps, errISOFormat
		}
		v, err := digits(s[pos : pos+2])
		if err != nil {
			return comps, err
		}
		comps[comp] = v
		pos += 2
		if pos >= len(s) {
			return comps, nil
		}
		if comp == 0 {
			hasSep = s[pos] == ':'
		}
		if s[pos] == '.' || s[pos] == ',' || comp == 2 {
			break
		}
		if hasSep {
			if s[pos] != ':' {
				return comps, errISOFormat
			}
			pos++
		}
	}
	if s[pos] != '.' && s[pos] != ',' {
		return comps, errISOFormat
	}
	rest := s[pos+1:]
	take := min(len(rest), 6)
	v, err := digits(rest[:take])
	if err != nil {
		return comps, err
	}
	if take < 6 {
		v *= fractionScale[take-1]
	}
	if take < len(rest) {
		if _, err := digits(rest[take:]); err != nil {
			return comps, err
		}
	}
	comps[3] = v
	return comps, nil
}
