package fleet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// MaxScheduleBytes caps the size of a schedule file.
const MaxScheduleBytes = 16 << 20

// ScheduleHeader is a schedule file's first line.
const ScheduleHeader = "start_s,replicas"

// Schedule is a replica count per time window: Replicas[i] from Starts[i]
// (s since the first arrival) to Starts[i+1], the last to the end. Lines
// are the file lines of the rows.
type Schedule struct {
	Path     string
	Starts   []float64
	Replicas []int
	Lines    []int
}

// ScheduleError is a bad schedule file: it names the file and the line (0
// for the file as a whole).
type ScheduleError struct {
	File string
	Line int
	Err  error
}

func (e *ScheduleError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("schedule %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("schedule %s line %d: %v", e.File, e.Line, e.Err)
}

func (e *ScheduleError) Unwrap() error { return e.Err }

// ReadSchedule reads the schedule file at path (see ParseSchedule).
func ReadSchedule(path string) (*Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ScheduleError{File: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScheduleBytes+1))
	if err != nil {
		return nil, &ScheduleError{File: path, Err: err}
	}
	if len(data) > MaxScheduleBytes {
		return nil, &ScheduleError{File: path, Err: fmt.Errorf("larger than %d bytes", MaxScheduleBytes)}
	}
	return ParseSchedule(path, data)
}

// ParseSchedule parses a schedule file: CSV with the header line
// "start_s,replicas", then rows of a window's start in seconds from the
// trace's start (the first 0, then strictly increasing, finite) and a whole
// replica count of 0 or more (at most MaxReplicas), which holds until the
// next row's start (the last row's until the end). Blank lines and CRLF
// line ends are allowed. Errors are *ScheduleError naming the line.
func ParseSchedule(path string, data []byte) (*Schedule, error) {
	s := &Schedule{Path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	header := false
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fail := func(format string, a ...any) (*Schedule, error) {
			return nil, &ScheduleError{File: path, Line: line, Err: fmt.Errorf(format, a...)}
		}
		if !header {
			if strings.TrimPrefix(strings.ReplaceAll(text, " ", ""), "\ufeff") != ScheduleHeader {
				return fail("header %q: expected %q", quoteShort(text), ScheduleHeader)
			}
			header = true
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != 2 {
			return fail("%d fields: expected start_s,replicas", len(fields))
		}
		start, err := strconv.ParseFloat(strings.TrimSpace(fields[0]), 64)
		if err != nil || math.IsNaN(start) || math.IsInf(start, 0) || start < 0 {
			return fail("start_s %q: expected a finite number of seconds, 0 or more", quoteShort(fields[0]))
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		if err != nil || n != math.Trunc(n) || n < 0 || n > MaxReplicas {
			return fail("replicas %q: expected a whole number from 0 to %d", quoteShort(fields[1]), MaxReplicas)
		}
		if k := len(s.Starts); k == 0 && start != 0 {
			return fail("start_s %s: the first window must start at 0", fmtG(start))
		} else if k > 0 && !(start > s.Starts[k-1]) {
			return fail("start_s %s: expected a start after the previous window's (%s): windows must not overlap or go backwards", fmtG(start), fmtG(s.Starts[k-1]))
		}
		s.Starts = append(s.Starts, start)
		s.Replicas = append(s.Replicas, int(n))
		s.Lines = append(s.Lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, &ScheduleError{File: path, Line: line + 1, Err: err}
	}
	if !header {
		return nil, &ScheduleError{File: path, Err: errors.New("empty: expected the header " + ScheduleHeader)}
	}
	if len(s.Starts) == 0 {
		return nil, &ScheduleError{File: path, Err: errors.New("no window: expected rows start_s,replicas after the header")}
	}
	return s, nil
}

// quoteShort is s cut to 40 bytes for an error.
func quoteShort(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// window is the index of the window holding time t.
func (s *Schedule) window(t float64) int {
	lo, hi := 0, len(s.Starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s.Starts[mid] <= t+1e-9 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// most is the largest count of the windows overlapping [from, to), and the
// index of the first window with it.
func (s *Schedule) most(from, to float64) (int, int) {
	i := s.window(from)
	best, at := s.Replicas[i], i
	for j := i + 1; j < len(s.Starts) && s.Starts[j] < to-1e-9; j++ {
		if s.Replicas[j] > best {
			best, at = s.Replicas[j], j
		}
	}
	return best, at
}
