package plant

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"servesim/internal/limits"
	"servesim/internal/profile"
	"servesim/internal/pycompat"
)

// Request is one request of an arrival trace (the reference's Request).
// OutputTokens is the exogenous output length: the plant uses it to decide
// when decoding ends, and it is never shown to a Scheduler or ClockController.
type Request struct {
	ID                int     // request_id, nonnegative and unique in a workload
	ArrivalTimeS      float64 // arrival_time_s, relative to the first request
	PromptTokens      int     // prompt_tokens, positive
	OutputTokens      int     // output_tokens, positive
	OriginalTimestamp string  // the trace's TIMESTAMP text, kept for provenance
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

// Input caps of a trace. A trace is held in memory while it is read (its
// fields are cut from the text without copies), so the byte cap bounds the
// memory a trace can take: about 2.5 times the file, for the text, the
// requests and the simulation state. The Azure traces are far below it
// (the 2023 code trace is 0.3 MB; a week of the 2024 traces 1-2 GB).
const (
	MaxTraceBytes     = 4 * limits.GiB // a longer trace fails with a *limits.TooLargeError
	MaxTraceLineBytes = 1 * limits.MiB // a longer line fails with a *limits.LineError
)

// traceCaps are the bounds LoadWorkload reads a trace with.
type traceCaps struct{ maxBytes, maxLine int64 }

var defaultTraceCaps = traceCaps{MaxTraceBytes, MaxTraceLineBytes}

// LoadWorkload reads an Azure-format trace (TIMESTAMP, ContextTokens,
// GeneratedTokens; extra columns ignored; LF or CRLF), the reference's
// load_workload. Arrival times are seconds since the first row, computed
// from whole microseconds like Python's timedelta. Rows more than
// maxElapsedS (plus 1e-12) after the first are left out; NoElapsedLimit
// keeps them all. name is what errors call the input.
//
// It is stricter than the reference in one way: rows must be in time order
// (the reference only rejects such a workload later, in simulate). It reads
// at most MaxTraceBytes, stops at a NUL byte (as Python's csv module does)
// or a line longer than MaxTraceLineBytes, and checks the header as soon as
// its line is read, before the rest.
func LoadWorkload(r io.Reader, name string, maxElapsedS float64) (Workload, error) {
	return loadWorkload(r, name, maxElapsedS, defaultTraceCaps)
}

func loadWorkload(r io.Reader, name string, maxElapsedS float64, caps traceCaps) (Workload, error) {
	var headerErr error
	text, sum, err := readTrace(r, caps, func(header []string) error {
		_, headerErr = traceColumns(name, header)
		return headerErr
	})
	if headerErr != nil {
		return Workload{}, headerErr
	}
	if err != nil {
		return Workload{}, traceReadError(name, err)
	}
	if !utf8.ValidString(text) {
		return Workload{}, utf8Error(name, text)
	}
	records := newRecordReader(text)
	fail := func(line int, column, value, why string) (Workload, error) {
		return Workload{}, &TraceError{File: name, Line: line, Column: column, Value: value, Why: why}
	}
	header, _, err := records.next()
	if err == io.EOF {
		return Workload{}, &TraceError{File: name, Why: fmt.Sprintf("empty workload trace: expected a header %s,%s,%s and rows", columnTimestamp, columnContext, columnGenerated)}
	}
	if err != nil {
		return Workload{}, csvError(name, err)
	}
	if len(header) == 0 {
		// A blank first line is csv.DictReader's (empty) header: the
		// reference finds no rows, or no Azure column.
		if found, err := hasRecord(records); err != nil {
			return Workload{}, csvError(name, err)
		} else if !found {
			return Workload{}, &TraceError{File: name, Why: "empty workload trace: no rows after the header"}
		}
	}
	cols, err := traceColumns(name, header)
	if err != nil {
		return Workload{}, err
	}
	fieldsInHeader := len(header) // the next record reuses header's slice
	var (
		requests     = make([]Request, 0, strings.Count(text, "\n"))
		start, prev  time.Time
		startHasZone bool
		rows         int
	)
	for {
		record, line, err := records.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Workload{}, csvError(name, err)
		}
		if len(record) == 0 {
			continue // an empty line, which csv.DictReader skips
		}
		field := func(i int) (string, bool) {
			if cols[i] < len(record) {
				return record[cols[i]], true
			}
			return "", false
		}
		stamp, ok := field(0)
		if !ok {
			return fail(line, "", "", fmt.Sprintf("missing %s: expected %d fields as in the header", columnTimestamp, fieldsInHeader))
		}
		t, hasZone, err := parseISOTimestamp(stamp)
		if err != nil {
			return fail(line, columnTimestamp, stamp, err.Error())
		}
		if rows == 0 {
			start, startHasZone = t, hasZone
		} else if hasZone != startHasZone {
			return fail(line, columnTimestamp, stamp, "mixes timestamps with and without a UTC offset")
		} else if t.Before(prev) {
			return fail(line, columnTimestamp, stamp, "earlier than the previous row: the trace must be sorted by time")
		}
		prev = t
		rows++
		elapsed := float64(t.Sub(start).Microseconds()) / 1e6
		if elapsed > maxElapsedS+1e-12 {
			continue
		}
		var tokens [2]int
		for k, column := range []string{columnContext, columnGenerated} {
			text, ok := field(k + 1)
			if !ok {
				return fail(line, "", "", fmt.Sprintf("missing %s: expected %d fields as in the header", column, fieldsInHeader))
			}
			n, err := tokenCount(text)
			if err != nil {
				return fail(line, column, text, "expected an integer token count")
			}
			if n <= 0 {
				return fail(line, column, text, "token counts must be positive")
			}
			tokens[k] = n
		}
		requests = append(requests, Request{
			ID:                len(requests),
			ArrivalTimeS:      elapsed,
			PromptTokens:      tokens[0],
			OutputTokens:      tokens[1],
			OriginalTimestamp: stamp,
		})
	}
	if rows == 0 {
		return Workload{}, &TraceError{File: name, Why: "empty workload trace: no rows after the header"}
	}
	if len(requests) == 0 {
		return Workload{}, &TraceError{File: name, Why: fmt.Sprintf("no workload rows remain after filtering to the first %g s", maxElapsedS)}
	}
	return Workload{Requests: requests, Source: name, SHA256: sum}, nil
}

// hasRecord reports whether records holds a record with fields, or returns
// its syntax error.
func hasRecord(records recordReader) (bool, error) {
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

// readTrace reads r to the end within caps as one string (the fields and
// timestamps of the requests are cut from it without copies) and returns
// it with its SHA-256 in hex. As soon as the header's line is complete, it
// is passed to checkHeader, whose error stops the reading: a file that is
// not a trace fails at its first line, not after the whole of it is read.
// A header that needs the CSV quoting rules is left to the full parse.
func readTrace(r io.Reader, caps traceCaps, checkHeader func([]string) error) (string, string, error) {
	var text strings.Builder
	if size, known := limits.KnownSize(r); known {
		text.Grow(int(min(size, caps.maxBytes)) + 1)
	}
	hash := sha256.New()
	header := &headerWatch{text: &text, check: checkHeader}
	if _, err := io.Copy(io.MultiWriter(&text, hash, header), limits.NewText(r, caps.maxBytes, caps.maxLine)); err != nil {
		return "", "", err
	}
	return text.String(), hex.EncodeToString(hash.Sum(nil)), nil
}

// headerWatch follows the text read so far and checks the header record
// once its line is complete.
type headerWatch struct {
	text    *strings.Builder
	check   func([]string) error
	scanned int // bytes of text already searched for the header's end
	done    bool
}

// Write is called after each chunk is added to the text.
func (h *headerWatch) Write(p []byte) (int, error) {
	if h.done {
		return len(p), nil
	}
	text := h.text.String()
	end := strings.IndexByte(text[h.scanned:], '\n')
	if end < 0 {
		h.scanned = len(text)
		return len(p), nil
	}
	// The first line is the header, even an empty one (csv.DictReader's
	// fieldnames are its first record); whether an empty one is an error
	// depends on the rows, which the full parse reads.
	line := strings.TrimSuffix(text[:h.scanned+end], "\r")
	h.done = true
	if line == "" || strings.ContainsAny(line, "\"\r") {
		return len(p), nil
	}
	if err := h.check(strings.Split(line, ",")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// traceReadError names the trace in an error from reading it.
func traceReadError(name string, err error) error {
	var lineErr *limits.LineError
	if errors.As(err, &lineErr) {
		return &TraceError{File: name, Line: lineErr.Line, Why: lineErr.Reason}
	}
	return fmt.Errorf("trace %s: %w", name, err)
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

// utf8Error names the line and byte of the first invalid UTF-8 sequence of
// text: the reference opens traces with encoding="utf-8", which rejects it.
func utf8Error(name, text string) error {
	offset := 0
	for offset < len(text) {
		r, size := utf8.DecodeRuneInString(text[offset:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		offset += size
	}
	line := 1 + strings.Count(text[:offset], "\n")
	return &TraceError{File: name, Line: line, Why: fmt.Sprintf("byte %d is not UTF-8: expected a UTF-8 text", offset)}
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

// plainDecimal parses 1 to 18 ASCII digits, the usual spelling of a token
// count, without the general rules of pycompat.Int.
func plainDecimal(text string) (int, bool) {
	if len(text) > 18 {
		return 0, false
	}
	n, err := digits(text)
	return n, err == nil
}

// WorkloadChecksum is the reference's workload_checksum: the SHA-256 of
// "id,arrival(9 decimals),prompt,output" lines joined by newlines.
func WorkloadChecksum(requests []Request) string {
	return workloadChecksum(len(requests), func(i int) (int, float64, int, int) {
		r := &requests[i]
		return r.ID, r.ArrivalTimeS, r.PromptTokens, r.OutputTokens
	})
}

// workloadChecksum is WorkloadChecksum of n requests, request i given by
// request(i) as its id, arrival, prompt and output.
func workloadChecksum(n int, request func(i int) (id int, arrivalS float64, prompt, output int)) string {
	hash := sha256.New()
	buf := make([]byte, 0, 8<<10)
	for i := range n {
		if len(buf) > cap(buf)-128 {
			hash.Write(buf)
			buf = buf[:0]
		}
		if i > 0 {
			buf = append(buf, '\n')
		}
		id, arrivalS, prompt, output := request(i)
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, arrivalS, 'f', 9, 64)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(prompt), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(output), 10)
	}
	hash.Write(buf)
	return hex.EncodeToString(hash.Sum(nil))
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
	first := requests[0].ArrivalTimeS
	span := pyMax(requests[len(requests)-1].ArrivalTimeS-first, 1e-9)
	maxClock := p.MaxClockMHz()
	prefillRate := p.Rate(profile.PhasePrefill, maxClock)
	decodeRate := p.Rate(profile.PhaseDecode, maxClock)
	isolated := 0.0
	for _, r := range requests {
		isolated += float64(r.PromptTokens)/prefillRate + float64(r.OutputTokens)/decodeRate
	}
	dilation := pyMax(1.0, isolated/span/targetUtilization/float64(max(1, replicas)))
	for i := range requests {
		requests[i].ArrivalTimeS = (requests[i].ArrivalTimeS - first) * dilation
	}
	return dilation, nil
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
