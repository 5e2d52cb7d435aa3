package plant

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"servesim/internal/limits"
	"servesim/internal/profile"
	"servesim/internal/pycompat"
)

// Request is one request of an arrival trace (the reference's Request).
// OutputTokens is the exogenous output length: the plant uses it to decide
// when decoding ends, and it is never shown to a Scheduler or ClockController.
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
	// checksums remembers the workload checksums of its runs (Run), for
	// a workload whose requests were given by WithRequests; nil
	// otherwise (each run computes its own).
	checksums *checksumMemo
}

// WithRequests is w holding requests, which must not change afterwards:
// its runs (Run, without Config.NormalizeInPlace) then compute the
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

// NormalizeOfferedLoad is the reference's normalize_offered_load: it dilates
// arrival times once so that the isolated maximum-clock service demand is
// targetUtilization of the trace span. It only dilates (factor
// max(1, rho/target)); a lighter trace is shifted to start at zero and
// otherwise unchanged. It returns new requests and the factor.
func NormalizeOfferedLoad(requests []Request, p *profile.Profile, targetUtilization float64) ([]Request, float64, error) {
	out := slices.Clone(requests)
	dilation, err := NormalizeOfferedLoadInPlace(out, p, targetUtilization)
	if err != nil {
		return nil, 0, err
	}
	return out, dilation, nil
}

// NormalizeOfferedLoadInPlace is NormalizeOfferedLoad rewriting the arrival
// times of requests instead of copying them; it returns the factor.
func NormalizeOfferedLoadInPlace(requests []Request, p *profile.Profile, targetUtilization float64) (float64, error) {
	return NormalizeFleetOfferedLoadInPlace(requests, p, targetUtilization, 1)
}

// NormalizeFleetOfferedLoadInPlace is NormalizeOfferedLoadInPlace for a
// fleet of replicas GPUs of profile p: the target utilization is of their
// total isolated maximum-clock capacity, so the factor is
// max(1, rho/(replicas*target)).
func NormalizeFleetOfferedLoadInPlace(requests []Request, p *profile.Profile, targetUtilization float64, replicas int) (float64, error) {
	if !(targetUtilization > 0 && targetUtilization < 1) {
		return 0, &FieldError{Field: "target_utilization", Value: targetUtilization, Why: "must lie strictly between zero and one"}
	}
	if len(requests) == 0 {
		return 0, errors.New("workload must contain at least one request")
	}
	z := newNormalizer(p)
	for _, r := range requests {
		z.observe(r)
	}
	dilation := z.factor(targetUtilization, replicas)
	for i := range requests {
		requests[i].ArrivalTimeS = z.dilate(requests[i].ArrivalTimeS, dilation)
	}
	return dilation, nil
}

// normalizer computes NormalizeFleetOfferedLoadInPlace's factor from the
// requests it observes one at a time, in order, so that a workload read
// twice (RunStream) is normalized as one held whole.
type normalizer struct {
	prefillRate, decodeRate float64 // at the profile's maximum clock
	n                       int
	first, last             float64 // arrival times
	isolated                float64 // service time of every request alone at the maximum clock
}

func newNormalizer(p *profile.Profile) *normalizer {
	maxClock := p.MaxClockMHz()
	return &normalizer{prefillRate: p.Rate(profile.PhasePrefill, maxClock), decodeRate: p.Rate(profile.PhaseDecode, maxClock)}
}

// observe accounts for the next request.
func (z *normalizer) observe(r Request) {
	if z.n == 0 {
		z.first = r.ArrivalTimeS
	}
	z.n++
	z.last = r.ArrivalTimeS
	z.isolated += float64(r.PromptTokens)/z.prefillRate + float64(r.OutputTokens)/z.decodeRate
}

// factor is the dilation factor for targetUtilization of replicas GPUs,
// once at least one request was observed.
func (z *normalizer) factor(targetUtilization float64, replicas int) float64 {
	span := pyMax(z.last-z.first, 1e-9)
	return pyMax(1.0, z.isolated/span/targetUtilization/float64(max(1, replicas)))
}

// dilate is arrivalS normalized by dilation.
func (z *normalizer) dilate(arrivalS, dilation float64) float64 {
	return (arrivalS - z.first) * dilation
}

// pyMax is Python's max(a, b): a unless b is greater.
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// pyMin is Python's min(a, b): a unless b is smaller.
func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}
