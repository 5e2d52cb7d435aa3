package diagnose

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"servesim/internal/limits"
)

// Columns (CSV header names and JSON Lines keys) a request log carries,
// in RequestLog's field order, then the two optional arrival-time columns.
const (
	colRequestID = iota
	colPromptTokens
	colOutputTokens
	colQueueWaitMs
	colPrefillMs
	colDecodeTPOTMs
	colPreempted
	colRecomputePenaltyMs
	colPrefixCachedTokens
	colKVOccupancyPct
	colArrivalS
	colTimestamp
	numColumns
	numRequired = colArrivalS
)

var columnNames = [numColumns]string{
	"request_id", "prompt_tokens", "output_tokens", "queue_wait_ms", "prefill_ms",
	"decode_tpot_ms", "preempted", "recompute_penalty_ms", "prefix_cached_tokens",
	"kv_occupancy_pct_at_arrival", "arrival_s", "timestamp",
}

// ArrivalKind says where the arrival times of a log come from.
type ArrivalKind int

const (
	// ArrivalNone: arrival times were not asked for.
	ArrivalNone ArrivalKind = iota
	// ArrivalSeconds: the arrival_s column, in seconds.
	ArrivalSeconds
	// ArrivalTimestamp: the ISO 8601 timestamp column, as Unix seconds.
	ArrivalTimestamp
)

// String names the column the arrival times come from.
func (k ArrivalKind) String() string {
	switch k {
	case ArrivalSeconds:
		return "arrival_s"
	case ArrivalTimestamp:
		return "timestamp"
	default:
		return "none"
	}
}

// ReadOptions configure a log reader.
type ReadOptions struct {
	// Arrival asks for each request's arrival time: the arrival_s column
	// when present, else the timestamp column; one of them is then required.
	Arrival bool
	// ArrivalIfPresent reads the arrival time as Arrival does when the log
	// has one of those columns, without requiring it: a log without them,
	// or a record whose arrival time is missing or unreadable, gives
	// records without one (Record.Arrival is ArrivalNone), and no error.
	// Arrival, when set, wins.
	ArrivalIfPresent bool
	// MaxBytes and MaxLineBytes cap the input and each of its lines (a
	// quoted CSV record too); zero means MaxLogBytes and MaxLogLineBytes.
	MaxBytes, MaxLineBytes int64
}

// Input caps of a request log. A log is streamed: memory grows with its
// requests (four numbers each), not with its bytes, so the cap only stops
// an endless input; a log of 4 GiB holds some 60 million requests.
const (
	MaxLogBytes     = 4 * limits.GiB
	MaxLogLineBytes = 1 * limits.MiB
)

// caps returns the input caps with the defaults filled in.
func (o ReadOptions) caps() (maxBytes, maxLine int64) {
	maxBytes, maxLine = o.MaxBytes, o.MaxLineBytes
	if maxBytes <= 0 {
		maxBytes = MaxLogBytes
	}
	if maxLine <= 0 {
		maxLine = MaxLogLineBytes
	}
	return maxBytes, maxLine
}

// newLogReader reads r within the caps of opts: at most MaxBytes, no NUL
// byte, no line longer than MaxLineBytes, without a UTF-8 byte order mark.
func newLogReader(r io.Reader, opts ReadOptions) *bufio.Reader {
	maxBytes, maxLine := opts.caps()
	br := bufio.NewReaderSize(limits.NewText(r, maxBytes, maxLine), readBufferSize)
	skipBOM(br)
	return br
}

// Record is one validated request read from a log, with its line number
// and, when asked for, its arrival time in seconds (ArrivalTimestamp:
// seconds since the Unix epoch).
type Record struct {
	Log      RequestLog  // the validated request
	Line     int         // 1-based line number in the input
	ArrivalS float64     // arrival time, s (Unix epoch s for ArrivalTimestamp); 0 unless Arrival is asked for
	Arrival  ArrivalKind // where ArrivalS came from
}

// readBufferSize is the read buffer of the log readers.
const readBufferSize = 64 << 10

// Scan reads request logs from r, CSV or JSON Lines as the content shows
// (the first non-blank character '{' means JSON Lines), and calls fn with
// every validated request in order. name is what errors call the input.
// Errors are *InputError naming the line and field, or fn's error. The
// input is read within the caps of opts (see ReadOptions).
func Scan(r io.Reader, name string, opts ReadOptions, fn func(Record) error) (ArrivalKind, error) {
	br := newLogReader(r, opts)
	switch firstNonBlank(br) {
	case '{':
		return scanJSONLines(br, name, opts, fn)
	case '[':
		return ArrivalNone, &InputError{File: name, Line: 1,
			Reason: "a JSON array is not a request log: expected JSON Lines (one object per line) or CSV with a header row"}
	}
	return scanCSV(br, name, opts, fn)
}

// skipBOM drops a UTF-8 byte order mark.
func skipBOM(br *bufio.Reader) {
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		_, _ = br.Discard(3)
	}
}

// firstNonBlank returns the first byte that is not white space within the
// buffered window, without consuming anything; 0 when there is none.
func firstNonBlank(br *bufio.Reader) byte {
	for i := 1; i <= br.Size(); i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			return 0
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
		if err != nil {
			return 0
		}
	}
	return 0
}

// ScanCSV reads a CSV request log: a header row naming the columns in any
// order (extra columns are ignored), then one request per row.
func ScanCSV(r io.Reader, name string, opts ReadOptions, fn func(Record) error) (ArrivalKind, error) {
	return scanCSV(newLogReader(r, opts), name, opts, fn)
}

func scanCSV(br *bufio.Reader, name string, opts ReadOptions, fn func(Record) error) (ArrivalKind, error) {
	_, maxRecord := opts.caps()
	cs := newCSVScanner(br, maxRecord)
	err := cs.next()
	if err == io.EOF {
		return arrivalKindOf(opts, false, false), nil
	}
	if err != nil {
		return ArrivalNone, csvError(name, cs.line, err)
	}
	headerLine, width := cs.recLine, cs.fields()
	var index [numColumns]int
	for i := range index {
		index[i] = -1
	}
	for i := range width {
		h := string(bytes.TrimSpace(cs.field(i)))
		for c, want := range columnNames {
			if h != want {
				continue
			}
			if index[c] >= 0 {
				return ArrivalNone, &InputError{File: name, Line: headerLine, Field: want, Reason: "column appears twice in the header"}
			}
			index[c] = i
		}
	}
	for c := range numRequired {
		if index[c] < 0 {
			return ArrivalNone, &InputError{File: name, Line: headerLine, Field: columnNames[c],
				Reason: "missing column: the header must name " + strings.Join(columnNames[:numRequired], ", ")}
		}
	}
	kind := arrivalKindOf(opts, index[colArrivalS] >= 0, index[colTimestamp] >= 0)
	if opts.Arrival && kind == ArrivalNone {
		return ArrivalNone, &InputError{File: name, Line: headerLine, Field: "arrival_s",
			Reason: "missing column: splitting into windows needs an arrival_s or timestamp column"}
	}
	var values [numColumns][]byte
	for {
		err := cs.next()
		if err == io.EOF {
			return kind, nil
		}
		if err != nil {
			return kind, csvError(name, cs.line, err)
		}
		if cs.fields() != width {
			return kind, csvError(name, cs.recLine, errFieldCount)
		}
		for c, i := range index {
			if i >= 0 {
				values[c] = cs.field(i)
			}
		}
		rec, err := parseRecord(&values, kind, !opts.Arrival)
		if err != nil {
			return kind, located(err, name, cs.recLine)
		}
		rec.Line = cs.recLine
		if err := fn(rec); err != nil {
			return kind, err
		}
	}
}

// arrivalKindOf picks the arrival column: arrival_s before timestamp.
func arrivalKindOf(opts ReadOptions, hasSeconds, hasTimestamp bool) ArrivalKind {
	switch {
	case !opts.Arrival && !opts.ArrivalIfPresent:
		return ArrivalNone
	case hasSeconds:
		return ArrivalSeconds
	case hasTimestamp:
		return ArrivalTimestamp
	default:
		return ArrivalNone
	}
}

// csvError locates a CSV syntax or read error in the input.
func csvError(name string, line int, err error) error {
	reason := err.Error()
	if errors.Is(err, errBareQuote) || errors.Is(err, errQuote) || errors.Is(err, errFieldCount) || errors.Is(err, errLongRecord) {
		reason = "malformed CSV: " + reason
	}
	return readError(name, line, reason, err)
}

// readError is an error reading the input at line: a cap crossed (named
// with its own line), else reason.
func readError(name string, line int, reason string, err error) error {
	var lineErr *limits.LineError
	if errors.As(err, &lineErr) {
		return &InputError{File: name, Line: lineErr.Line, Reason: lineErr.Reason}
	}
	var tooLarge *limits.TooLargeError
	if errors.As(err, &tooLarge) {
		return &InputError{File: name, Reason: tooLarge.Error()}
	}
	return &InputError{File: name, Line: line, Reason: reason}
}

// located adds the input's name and line to a field error.
func located(err error, name string, line int) error {
	var ie *InputError
	if errors.As(err, &ie) {
		ie.File, ie.Line = name, line
		return ie
	}
	return &InputError{File: name, Line: line, Reason: err.Error()}
}

// ScanJSONLines reads a JSON Lines request log: one JSON object per line
// with the CSV header's names as keys (other keys are ignored); blank lines
// are skipped. Numbers may also be given as strings.
func ScanJSONLines(r io.Reader, name string, opts ReadOptions, fn func(Record) error) (ArrivalKind, error) {
	return scanJSONLines(newLogReader(r, opts), name, opts, fn)
}

func scanJSONLines(br *bufio.Reader, name string, opts ReadOptions, fn func(Record) error) (ArrivalKind, error) {
	kind := ArrivalNone
	seen := false
	var values [numColumns][]byte
	var object map[string]json.RawMessage
	for line := 1; ; line++ {
		text, readErr := br.ReadBytes('\n')
		if readErr != nil && readErr != io.EOF {
			return kind, readError(name, line, readErr.Error(), readErr)
		}
		if text = bytes.TrimSpace(text); len(text) > 0 {
			clear(object)
			if err := json.Unmarshal(text, &object); err != nil || object == nil {
				return kind, &InputError{File: name, Line: line, Reason: "expected one JSON object per line"}
			}
			if !seen {
				seen = true
				kind = arrivalKindOf(opts, object["arrival_s"] != nil, object["timestamp"] != nil)
				if opts.Arrival && kind == ArrivalNone {
					return kind, &InputError{File: name, Line: line, Field: "arrival_s",
						Reason: "missing key: splitting into windows needs an arrival_s or timestamp key"}
				}
			}
			if err := jsonValues(object, kind, !opts.Arrival, &values); err != nil {
				return kind, located(err, name, line)
			}
			rec, err := parseRecord(&values, kind, !opts.Arrival)
			if err != nil {
				return kind, located(err, name, line)
			}
			rec.Line = line
			if err := fn(rec); err != nil {
				return kind, err
			}
		}
		if readErr == io.EOF {
			return kind, nil
		}
	}
}

// jsonValues copies the text of each needed key of object into values.
// Strings are unquoted; numbers and booleans keep their literal text. With
// lenientArrival, a missing or malformed arrival time is left empty.
func jsonValues(object map[string]json.RawMessage, kind ArrivalKind, lenientArrival bool, values *[numColumns][]byte) error {
	for c := range numColumns {
		if c >= numRequired && c != arrivalColumn(kind) {
			continue
		}
		raw := object[columnNames[c]]
		if lenientArrival && c >= numRequired {
			values[c] = nil
			if raw == nil || string(raw) == "null" || raw[0] == '{' || raw[0] == '[' {
				continue
			}
		}
		if raw == nil || string(raw) == "null" {
			return &InputError{Field: columnNames[c], Reason: "missing key"}
		}
		switch raw[0] {
		case '"':
			var text string
			if err := json.Unmarshal(raw, &text); err != nil {
				return &InputError{Field: columnNames[c], Value: string(raw), Reason: "malformed string"}
			}
			values[c] = []byte(text)
		case '{', '[':
			return &InputError{Field: columnNames[c], Value: string(raw), Reason: "expected a number, a boolean or a string"}
		default:
			values[c] = raw
		}
	}
	return nil
}

// arrivalColumn is the column an arrival kind reads, or -1.
func arrivalColumn(kind ArrivalKind) int {
	switch kind {
	case ArrivalSeconds:
		return colArrivalS
	case ArrivalTimestamp:
		return colTimestamp
	default:
		return -1
	}
}

// parseRecord parses and validates one request from its column texts.
// With lenientArrival, an unreadable arrival time gives a record without
// one instead of an error.
func parseRecord(values *[numColumns][]byte, kind ArrivalKind, lenientArrival bool) (Record, error) {
	var p fieldParser
	p.values = values
	rec := Record{Arrival: kind, Log: RequestLog{
		RequestID:               string(bytes.TrimSpace(values[colRequestID])),
		PromptTokens:            p.int(colPromptTokens),
		OutputTokens:            p.int(colOutputTokens),
		QueueWaitMs:             p.float(colQueueWaitMs),
		PrefillMs:               p.float(colPrefillMs),
		DecodeTPOTMs:            p.float(colDecodeTPOTMs),
		Preempted:               p.bool(colPreempted),
		RecomputePenaltyMs:      p.float(colRecomputePenaltyMs),
		PrefixCachedTokens:      p.int(colPrefixCachedTokens),
		KVOccupancyPctAtArrival: p.float(colKVOccupancyPct),
	}}
	if c := arrivalColumn(kind); c >= 0 {
		at, reason := parseArrival(values[c], kind)
		switch {
		case reason == "":
			rec.ArrivalS = at
		case lenientArrival:
			rec.Arrival = ArrivalNone
		default:
			p.fail(c, reason)
		}
	}
	if p.err != nil {
		return Record{}, p.err
	}
	if err := rec.Log.Validate(); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			// Quote the text the input holds rather than its parsed value.
			for c, n := range columnNames {
				if n == ie.Field {
					ie.Value = string(bytes.TrimSpace(values[c]))
				}
			}
		}
		return Record{}, err
	}
	return rec, nil
}

// fieldParser parses column texts, keeping the first error.
type fieldParser struct {
	values *[numColumns][]byte
	err    error
}

func (p *fieldParser) fail(c int, reason string) {
	if p.err == nil {
		p.err = &InputError{Field: columnNames[c], Value: string(bytes.TrimSpace(p.values[c])), Reason: reason}
	}
}

// int parses an integer; an integral number such as 128.0 or 1e3 counts.
func (p *fieldParser) int(c int) int64 {
	s := bytes.TrimSpace(p.values[c])
	if n, err := strconv.ParseInt(string(s), 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		p.fail(c, "expected an integer")
		return 0
	}
	return int64(f)
}

func (p *fieldParser) float(c int) float64 {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(p.values[c])), 64)
	if err != nil {
		p.fail(c, "expected a number")
	}
	return f
}

// bool accepts true, false, 1 and 0 in any case.
func (p *fieldParser) bool(c int) bool {
	s := bytes.TrimSpace(p.values[c])
	switch {
	case string(s) == "1" || bytes.EqualFold(s, []byte("true")):
		return true
	case string(s) == "0" || bytes.EqualFold(s, []byte("false")):
		return false
	}
	p.fail(c, "expected true, false, 1 or 0")
	return false
}

// timestampLayouts are the ISO 8601 forms accepted, with or without a zone
// (without one, UTC); any fraction of a second is accepted after the seconds.
var timestampLayouts = []string{
	time.RFC3339,
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
}

// parseArrival parses an arrival time of the given kind: seconds, or an
// ISO 8601 time as seconds since the Unix epoch. The reason is empty when
// it parses, else says what was expected.
func parseArrival(text []byte, kind ArrivalKind) (float64, string) {
	s := string(bytes.TrimSpace(text))
	if kind == ArrivalSeconds {
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil:
			return 0, "expected a number"
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, "expected a finite number of seconds"
		}
		return f, ""
	}
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return float64(t.Unix()) + float64(t.Nanosecond())/1e9, ""
		}
	}
	return 0, "expected an ISO 8601 time such as 2023-11-16T18:17:03.97996Z or 2023-11-16 18:17:03.9799600"
}
