// Package workload holds the requests and workloads the simulator runs:
// the Azure trace reader as the reference reads it (LoadWorkload,
// ReadWorkload, with its CSV records and ISO 8601 times), the workload
// checksum, and seeded synthetic traces. It imports no simulator package,
// so that the trace readers (package trace) need not; package plant names
// its types in its API (plant.Request is Request).
package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"servesim/internal/limits"
	"servesim/internal/pycompat"
)

// Request is one request of an arrival trace (the reference's Request).
// OutputTokens is the exogenous output length: the plant uses it to decide
// when decoding ends, and it is never shown to a plant.Scheduler or
// plant.ClockController.
type Request struct {
	ID           int     // request_id, nonnegative and unique in a workload
	ArrivalTimeS float64 // arrival_time_s, relative to the first request
	PromptTokens int     // prompt_tokens, positive
	OutputTokens int     // output_tokens, positive
}

// Validate applies the reference's Request.validate.
func (r Request) Validate() error {
	switch {
	case r.ID < 0:
		return errors.New("request_id must be nonnegative")
	case math.IsNaN(r.ArrivalTimeS) || math.IsInf(r.ArrivalTimeS, 0) || r.ArrivalTimeS < 0:
		return errors.New("arrival_time_s must be finite and nonnegative")
	case r.PromptTokens <= 0 || r.OutputTokens <= 0:
		return errors.New("token counts must be positive")
	}
	return nil
}

// ArrivalMicroseconds is ArrivalTimeS in whole microseconds. LoadWorkload
// (and SyntheticTrace) compute arrivals as whole microseconds divided by
// 1e6, so this recovers them exactly for any span under 70 years; other
// arrival times are rounded to the nearest microsecond.
func (r Request) ArrivalMicroseconds() int64 {
	return int64(math.Round(r.ArrivalTimeS * 1e6))
}

// Workload is a loaded arrival trace with the identity of its source.
type Workload struct {
	Requests []Request // requests in trace order
	Source   string    // the path it was read from, "stdin" or "(embedded)"
	SHA256   string    // SHA-256 of the bytes read
	// Skipped counts the rows a trace format's rule left out, by reason
	// (package trace: "failed_response", "filtered"); nil when none was.
	Skipped map[string]int
	// checksums remembers the workload checksums of its runs (plant.Run), for
	// a workload whose requests were given by WithRequests; nil
	// otherwise (each run computes its own).
	checksums *checksumMemo
}

// WithRequests is w holding requests, which must not change afterwards:
// its runs (plant.Run, without plant.Config.NormalizeInPlace) then compute the
// workload checksum of each normalization once, however many they are (a
// sweep's cells).
func (w Workload) WithRequests(requests []Request) Workload {
	w.Requests, w.checksums = requests, &checksumMemo{}
	return w
}

// Azure trace column names.
const (
	columnTimestamp = "TIMESTAMP"
	columnContext   = "ContextTokens"
	columnGenerated = "GeneratedTokens"
)

// TimeEpsilonS is the time tolerance of the trace readers, seconds: a row
// at most maxElapsedS + TimeEpsilonS after a trace's first is kept, as in
// the reference's reader (seed003_plant.py line 1130). It is the plant's
// step-grid tolerance too: plant.TimeEpsilonS is this constant, and its doc
// comment says why it is 1e-12.
const TimeEpsilonS = 1e-12

// NoElapsedLimit keeps every row of a trace (the reference's
// maximum_elapsed_s=None).
var NoElapsedLimit = math.Inf(1)

// Input caps of a trace. A trace is read as a stream (only a file that
// needs the CSV quoting rules is held whole, from its first quoted line
// on), so the byte cap bounds the work of reading it rather than its
// memory: the Azure traces are far below it (the 2023 code trace is 0.3
// MB; a week of the 2024 traces 1-2 GB).
const (
	MaxTraceBytes     = 4 * limits.GiB // a longer trace fails with a *limits.TooLargeError
	MaxTraceLineBytes = 1 * limits.MiB // a longer line fails with a *limits.LineError
)

// MaxHeldRequests bounds the requests a command holds at once: the rows
// of one trace, or of all the traces of a sweep. 5e7 is nearly twice the
// Azure 2024 week of conversations (27.3M requests).
const MaxHeldRequests = 50_000_000

// MaxTraceSpanMicros bounds the time from a trace's first row to any
// other, microseconds: 2^53 (285 years), the span of every trace format
// (package trace), so that the count of microseconds is exact in a float64
// and a time.Duration holds it (a trace converts to any format). A row past
// it is an error naming its line.
const MaxTraceSpanMicros = 1 << 53

// errTraceSpan is the reason given for a row past MaxTraceSpanMicros, in
// the words of the other trace formats' readers.
const errTraceSpan = "more than 2^53 microseconds (285 years) after the first row"

// traceCaps are the bounds LoadWorkload reads a trace with.
type traceCaps struct{ maxBytes, maxLine int64 }

var defaultTraceCaps = traceCaps{MaxTraceBytes, MaxTraceLineBytes}

// LoadWorkload reads an Azure-format trace (TIMESTAMP, ContextTokens,
// GeneratedTokens; extra columns ignored; LF or CRLF), the reference's
// load_workload: ReadWorkload, with the requests collected.
func LoadWorkload(r io.Reader, name string, maxElapsedS float64) (Workload, error) {
	return loadWorkload(r, name, maxElapsedS, defaultTraceCaps)
}

func loadWorkload(r io.Reader, name string, maxElapsedS float64, caps traceCaps) (Workload, error) {
	var requests []Request
	w, err := readWorkload(r, name, maxElapsedS, caps, func(rows int) { requests = make([]Request, 0, rows) },
		func(req Request) error {
			requests = append(requests, req)
			return nil
		})
	if err != nil {
		return Workload{}, err
	}
	w = w.WithRequests(requests)
	return w, nil
}

// ReadWorkload reads an Azure-format trace as a stream, calling emit with
// each request in order (the requests LoadWorkload returns) and stopping
// at emit's first error, which it returns; it returns the trace's identity
// (Source, SHA256) without its requests. It holds one line at a time (a
// trace that needs the CSV quoting rules is held whole from its first
// quoted line on). name is what errors call the input. Arrival times are
// seconds since the first row, computed from whole microseconds like
// Python's timedelta. Rows more than maxElapsedS (plus TimeEpsilonS) after the
// first are left out; NoElapsedLimit keeps them all.
//
// It is stricter than the reference in two ways: rows must be in time order
// (the reference only rejects such a workload later, in simulate), and lie
// within MaxTraceSpanMicros of the first row, as in every trace format (the
// reference takes any span of Python's dates, 0001-01-01 to 9999-12-31). It
// reads
// at most MaxTraceBytes, stops at a NUL byte (as Python's csv module does)
// or a line longer than MaxTraceLineBytes, and fails at the first problem
// in the order of the file: a file that is not a trace fails at its first
// line.
func ReadWorkload(r io.Reader, name string, maxElapsedS float64, emit func(Request) error) (Workload, error) {
	return readWorkload(r, name, maxElapsedS, defaultTraceCaps, nil, emit)
}

// readWorkload is ReadWorkload within caps. reserve, when not nil, is
// called once before the first request with the number of rows expected
// (estimated from the lines of the input's first bytes and its size, 0
// when its size is unknown).
func readWorkload(r io.Reader, name string, maxElapsedS float64, caps traceCaps, reserve func(rows int), emit func(Request) error) (Workload, error) {
	hash := sha256.New()
	records := newRecords(io.TeeReader(limits.NewText(r, caps.maxBytes, caps.maxLine), hash), name)
	fail := func(line int, column string, value []byte, why string) (Workload, error) {
		return Workload{}, &TraceError{File: name, Line: line, Column: column, Value: string(value), Why: why}
	}
	header, _, err := records.next()
	if err == io.EOF {
		return Workload{}, &TraceError{File: name, Why: fmt.Sprintf("empty workload trace: expected a header %s,%s,%s and rows", columnTimestamp, columnContext, columnGenerated)}
	}
	if err != nil {
		return Workload{}, recordsError(name, err)
	}
	names := make([]string, len(header))
	for i, column := range header {
		names[i] = string(column)
	}
	if len(names) == 0 {
		// A blank first line is csv.DictReader's (empty) header: the
		// reference finds no rows, or no Azure column.
		if found, err := hasRecord(records); err != nil {
			return Workload{}, recordsError(name, err)
		} else if !found {
			return Workload{}, &TraceError{File: name, Why: "empty workload trace: no rows after the header"}
		}
	}
	cols, err := traceColumns(name, names)
	if err != nil {
		return Workload{}, err
	}
	if reserve != nil {
		reserve(records.estimateRows(r))
	}
	var (
		start, prev  int64 // times of the first and the last row, Unix microseconds
		startHasZone bool
		rows, kept   int
	)
	for {
		record, line, err := records.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Workload{}, recordsError(name, err)
		}
		if len(record) == 0 {
			continue // an empty line, which csv.DictReader skips
		}
		field := func(i int) ([]byte, bool) {
			if cols[i] < len(record) {
				return record[cols[i]], true
			}
			return nil, false
		}
		stamp, ok := field(0)
		if !ok {
			return fail(line, "", nil, fmt.Sprintf("missing %s: expected %d fields as in the header", columnTimestamp, len(names)))
		}
		us, hasZone, err := traceMicros(stamp)
		if err != nil {
			return fail(line, columnTimestamp, stamp, err.Error())
		}
		if rows == 0 {
			start, startHasZone = us, hasZone
		} else if hasZone != startHasZone {
			return fail(line, columnTimestamp, stamp, "mixes timestamps with and without a UTC offset")
		} else if us < prev {
			return fail(line, columnTimestamp, stamp, "earlier than the previous row: the trace must be sorted by time")
		} else if us-start > MaxTraceSpanMicros {
			return fail(line, columnTimestamp, stamp, errTraceSpan)
		}
		prev = us
		rows++
		elapsed := float64(us-start) / 1e6
		if elapsed > maxElapsedS+TimeEpsilonS {
			continue
		}
		var tokens [2]int
		for k, column := range []string{columnContext, columnGenerated} {
			text, ok := field(k + 1)
			if !ok {
				return fail(line, "", nil, fmt.Sprintf("missing %s: expected %d fields as in the header", column, len(names)))
			}
			n, err := tokenCountBytes(text)
			if err != nil {
				return fail(line, column, text, "expected an integer token count")
			}
			if n <= 0 {
				return fail(line, column, text, "token counts must be positive")
			}
			tokens[k] = n
		}
		if err := emit(Request{ID: kept, ArrivalTimeS: elapsed, PromptTokens: tokens[0], OutputTokens: tokens[1]}); err != nil {
			return Workload{}, err
		}
		kept++
	}
	if rows == 0 {
		return Workload{}, &TraceError{File: name, Why: "empty workload trace: no rows after the header"}
	}
	if kept == 0 {
		return Workload{}, &TraceError{File: name, Why: fmt.Sprintf("no workload rows remain after filtering to the first %g s", maxElapsedS)}
	}
	return Workload{Source: name, SHA256: hex.EncodeToString(hash.Sum(nil))}, nil
}

// traceMicros reads a trace time as Unix microseconds (ParseISOMicros),
// without a copy of its text unless it takes the general path.
func traceMicros(text []byte) (us int64, hasZone bool, err error) {
	if us, hasZone, ok := isoMicrosFast(text); ok {
		return us, hasZone, nil
	}
	return ParseISOMicros(string(text))
}

// estimateRows is the number of rows of the input r (whose records are
// being read) expected from the lines of its first bytes and its size; 0
// when its size is unknown.
func (r *records) estimateRows(input io.Reader) int {
	size, known := limits.KnownSize(input)
	if !known || size <= 0 {
		return 0
	}
	sample, _ := r.br.Peek(recordsBuffer) // an error comes again at the next read
	if len(sample) == 0 {
		return 0
	}
	rows := float64(bytes.Count(sample, []byte{'\n'})) * float64(size) / float64(len(sample))
	return int(min(rows*(1+1.0/32), float64(size))) + 1
}

// hasRecord reports whether records holds a record with fields, or returns
// its error.
func hasRecord(records *records) (bool, error) {
	for {
		fields, _, err := records.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil || len(fields) > 0 {
			return err == nil, err
		}
	}
}

// traceColumns finds the three Azure columns in a header; a repeated name
// means its last column, as csv.DictReader reads it.
func traceColumns(name string, header []string) ([3]int, error) {
	var cols [3]int
	for i, column := range []string{columnTimestamp, columnContext, columnGenerated} {
		c := len(header) - 1
		for c >= 0 && header[c] != column {
			c--
		}
		if c < 0 {
			return cols, &TraceError{File: name, Line: 1, Why: fmt.Sprintf("missing column %s: trace must contain Azure columns %s, %s, %s", column, columnContext, columnGenerated, columnTimestamp)}
		}
		cols[i] = c
	}
	return cols, nil
}

// traceReadError names the trace in an error from reading it.
func traceReadError(name string, err error) error {
	var lineErr *limits.LineError
	if errors.As(err, &lineErr) {
		return &TraceError{File: name, Line: lineErr.Line, Why: lineErr.Reason}
	}
	return fmt.Errorf("trace %s: %w", name, err)
}

// recordsError names the trace in an error of its records: a read error
// (traceReadError), a CSV syntax error (csvError) or a *TraceError, as it
// is.
func recordsError(name string, err error) error {
	var traceErr *TraceError
	if errors.As(err, &traceErr) {
		return err
	}
	var syntax *pycompat.CSVError
	if errors.As(err, &syntax) {
		return csvError(name, err)
	}
	return traceReadError(name, err)
}

// csvError names the trace and the line in a CSV syntax error (Python's
// csv.Error): "trace t.csv line 7: field larger than field limit (131072)".
func csvError(name string, err error) error {
	var syntax *pycompat.CSVError
	if errors.As(err, &syntax) {
		return fmt.Errorf("trace %s %w", name, err) // "line N: what"
	}
	return fmt.Errorf("trace %s: %w", name, err)
}

// tokenCount parses a token count the way the reference's int(text)
// does (pycompat.Int: surrounding whitespace, an optional sign, digits
// with single underscores between them); a count too large for an int is
// an error.
func tokenCount(text string) (int, error) {
	if n, ok := plainDecimal(text); ok {
		return n, nil
	}
	n, err := pycompat.Int(text)
	if err != nil {
		return 0, err
	}
	if n.Big != "" || n.Small > math.MaxInt || n.Small < math.MinInt {
		return 0, strconv.ErrRange
	}
	return int(n.Small), nil
}

// tokenCountBytes is tokenCount of text, without a copy of it when it is
// plainly written.
func tokenCountBytes(text []byte) (int, error) {
	if n, ok := plainDecimal(text); ok {
		return n, nil
	}
	return tokenCount(string(text))
}

// plainDecimal parses 1 to 18 ASCII digits, the usual spelling of a token
// count, without the general rules of pycompat.Int.
func plainDecimal[T string | []byte](text T) (int, bool) {
	if len(text) > 18 {
		return 0, false
	}
	n, err := digits(text)
	return n, err == nil
}
