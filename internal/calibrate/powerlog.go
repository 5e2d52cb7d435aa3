package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"servesim/internal/limits"
)

// PowerLogQuery is the nvidia-smi command whose output ReadPowerLog reads:
// one GPU (-i picks it on a machine with several), these six fields in this
// order, CSV with its header, a row every 100 ms. `--format=csv,nounits`
// is read too (the same header, values without units).
const PowerLogQuery = "nvidia-smi -i 0 --query-gpu=timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv -lms 100"

// PowerLogHeader is the header nvidia-smi writes for PowerLogQuery: it
// names the clocks by their full names (clocks.current.sm for the
// clocks.sm asked for). A header naming them clocks.sm and clocks.mem, as
// asked, is read too.
const PowerLogHeader = "timestamp, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], temperature.gpu, utilization.gpu [%]"

// MaxPowerLogBytes caps a power log: 256 MiB, about four days of rows
// every 100 ms.
const MaxPowerLogBytes = 256 * limits.MiB

// powerLogTimeLayout is nvidia-smi's timestamp, "2024/05/14 09:21:03.123"
// (Go's parser takes the fraction of a second without it in the layout).
const powerLogTimeLayout = "2006/01/02 15:04:05"

// PowerSample is one row of a power log.
type PowerSample struct {
	// TimeS is the sample's time in seconds since the first sample.
	TimeS float64
	// PowerW is the board power draw, W.
	PowerW float64
	// SMClockMHz and MemClockMHz are the SM and memory clocks, MHz.
	SMClockMHz, MemClockMHz float64
	// TemperatureC is the GPU core temperature, °C (nvidia-smi writes
	// whole degrees).
	TemperatureC float64
	// UtilizationPct is the GPU utilization, %; NaN when the GPU does not
	// report it ([N/A], [Not Supported]).
	UtilizationPct float64
}

// PowerLog is an nvidia-smi power log of one GPU (PowerLogQuery).
type PowerLog struct {
	// File is where it was read from (errors name it).
	File string
	// Start is the first sample's timestamp: the local time nvidia-smi
	// wrote, read in the time zone of this machine.
	Start time.Time
	// Samples are the rows in the order written, their times increasing.
	Samples []PowerSample
}

// PowerLogError is a power log that cannot be read: the file, the 1-based
// line (0 for the file as a whole) and what is wrong and was expected.
type PowerLogError struct {
	File   string
	Line   int
	Reason string
}

// Error reads `power log gpu.csv line 17: power.draw "abc W": expected a
// number of W`.
func (e *PowerLogError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("power log %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("power log %s line %d: %s", e.File, e.Line, e.Reason)
}

// ReadPowerLog reads the power log at path (ParsePowerLog), refusing a
// file larger than MaxPowerLogBytes before reading it.
func ReadPowerLog(path string) (*PowerLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &PowerLogError{File: path, Reason: limits.OneLine(err.Error())}
	}
	defer f.Close()
	data, err := limits.ReadAll(f, MaxPowerLogBytes)
	if err != nil {
		return nil, &PowerLogError{File: path, Reason: limits.OneLine(err.Error())}
	}
	return ParsePowerLog(path, data)
}

// ParsePowerLog reads an nvidia-smi power log (PowerLogQuery) held in
// data; file names it in errors. Lines end in LF or CRLF. The header must
// be PowerLogHeader; each row holds a timestamp "2024/05/14 09:21:03.123",
// the power "61.32 W", the SM and memory clocks "1410 MHz", the
// temperature "57" and the utilization "98 %" (the units may be left out,
// as --format=csv,nounits does). Power, clocks and temperature must be
// reported; the utilization may be [N/A] or [Not Supported] (NaN). The
// timestamps must increase: a timestamp that repeats is a log of several
// GPUs, which nvidia-smi writes one row each per timestamp with nothing to
// tell them apart here, and is refused.
func ParsePowerLog(file string, data []byte) (*PowerLog, error) {
	if int64(len(data)) > MaxPowerLogBytes {
		return nil, &PowerLogError{File: file, Reason: (&limits.TooLargeError{Size: int64(len(data)), Cap: MaxPowerLogBytes}).Error()}
	}
	fail := func(line int, format string, args ...any) error {
		return &PowerLogError{File: file, Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	log := &PowerLog{File: file}
	var first, prev time.Time
	prevLine := 0
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if end := bytes.IndexByte(data, '\n'); end >= 0 {
			line, data = data[:end], data[end+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		text := string(line)
		if lineNo == 1 {
			if !powerLogHeaderOK(text) {
				return nil, fail(1, "header %s: expected %q (the header of %s)", limits.Quote(text), PowerLogHeader, PowerLogQuery)
			}
			continue
		}
		if powerLogHeaderOK(text) {
			return nil, fail(lineNo, "a second header: expected one nvidia-smi run per file")
		}
		fields := strings.Split(text, ",")
		if len(fields) != 6 {
			return nil, fail(lineNo, "%d fields: expected 6 (timestamp, power.draw, clocks.sm, clocks.mem, temperature.gpu, utilization.gpu)", len(fields))
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		wall, err := time.Parse(powerLogTimeLayout, fields[0])
		if err != nil {
			return nil, fail(lineNo, "timestamp %s: expected YYYY/MM/DD HH:MM:SS.mmm", limits.Quote(fields[0]))
		}
		if len(log.Samples) == 0 {
			first = wall
			log.Start, _ = time.ParseInLocation(powerLogTimeLayout, fields[0], time.Local)
		} else if wall.Equal(prev) {
			return nil, fail(lineNo, "timestamp %s repeats line %d's: expected the log of one GPU (nvidia-smi writes a row per GPU per timestamp; pick one with -i)", limits.Quote(fields[0]), prevLine)
		} else if wall.Before(prev) {
			return nil, fail(lineNo, "timestamp goes back: %s after line %d's %s", limits.Quote(fields[0]), prevLine, prev.Format(powerLogTimeLayout+".000"))
		}
		prev, prevLine = wall, lineNo
		s := PowerSample{TimeS: wall.Sub(first).Seconds()}
		for i, v := range []struct {
			name, unit, expected string
			dst                  *float64
			unknownOK            bool
			max                  float64
		}{
			{"power.draw", "W", "a number of W", &s.PowerW, false, math.Inf(1)},
			{"clocks.sm", "MHz", "a number of MHz", &s.SMClockMHz, false, math.Inf(1)},
			{"clocks.mem", "MHz", "a number of MHz", &s.MemClockMHz, false, math.Inf(1)},
			{"temperature.gpu", "", "a number of °C", &s.TemperatureC, false, math.Inf(1)},
			{"utilization.gpu", "%", "a percentage from 0 to 100, [N/A] or [Not Supported]", &s.UtilizationPct, true, 100},
		} {
			raw := fields[1+i]
			value, ok := parsePowerLogValue(raw, v.unit, v.unknownOK)
			if !ok || value > v.max {
				return nil, fail(lineNo, "%s %s: expected %s", v.name, limits.Quote(raw), v.expected)
			}
			*v.dst = value
		}
		log.Samples = append(log.Samples, s)
	}
	if lineNo == 0 {
		return nil, fail(1, "empty: expected the header %q", PowerLogHeader)
	}
	if len(log.Samples) == 0 {
		return nil, fail(lineNo+1, "no samples: expected rows after the header")
	}
	return log, nil
}

// powerLogHeaderOK reports whether line is PowerLogHeader, the clocks
// named by their full names or as asked (clocks.sm, clocks.mem).
func powerLogHeaderOK(line string) bool {
	want := [][]string{
		{"timestamp"},
		{"power.draw [W]"},
		{"clocks.current.sm [MHz]", "clocks.sm [MHz]"},
		{"clocks.current.memory [MHz]", "clocks.mem [MHz]"},
		{"temperature.gpu"},
		{"utilization.gpu [%]"},
	}
	fields := strings.Split(line, ",")
	if len(fields) != len(want) {
		return false
	}
	for i, f := range fields {
		f = strings.TrimSpace(f)
		ok := false
		for _, w := range want[i] {
			ok = ok || f == w
		}
		if !ok {
			return false
		}
	}
	return true
}

// parsePowerLogValue reads a finite non-negative number followed by " unit"
// (or by nothing); [N/A] and [Not Supported] are NaN when unknownOK.
func parsePowerLogValue(raw, unit string, unknownOK bool) (float64, bool) {
	if raw == "[N/A]" || raw == "[Not Supported]" {
		return math.NaN(), unknownOK
	}
	if unit != "" {
		raw = strings.TrimSuffix(raw, " "+unit)
	}
	if raw == "" || !strings.ContainsAny(raw[:1], "0123456789.") {
		return 0, false // no sign, no "inf", no "nan"
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
