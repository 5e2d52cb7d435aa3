// Package trace reads arrival traces in the formats people have into plant
// workloads: the Azure 2023 and 2024 CSV traces (through workload.ReadWorkload),
// BurstGPT CSV, Mooncake JSON Lines and any CSV log whose columns are named.
// It detects the format from the first line, and computes a trace's
// statistics (Stats) and its canonical forms (WriteAzure, WriteMooncake).
//
// Every format follows the same rules: request ids number the kept rows
// from 0 in file order; arrival times are whole microseconds since the first
// kept row, in seconds; rows must be sorted by time; a row that cannot be
// used is an error naming the input, the line and the field, unless a rule
// of its format skips it, and skipped rows are counted by reason
// (workload.Workload.Skipped). Input is read within plant's caps
// (workload.MaxTraceBytes, workload.MaxTraceLineBytes, no NUL byte).
package trace

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"servesim/internal/workload"
)

// Format names a trace format.
type Format string

// The trace formats.
const (
	// Azure is the Azure LLM inference trace, 2023 or 2024:
	// TIMESTAMP,ContextTokens,GeneratedTokens with ISO 8601 times.
	Azure Format = "azure"
	// BurstGPT is the BurstGPT trace: Timestamp (seconds), Model,
	// Request tokens, Response tokens, Total tokens, Log Type.
	BurstGPT Format = "burstgpt"
	// Mooncake is the Mooncake trace: JSON Lines with timestamp
	// (milliseconds), input_length, output_length and hash_ids.
	Mooncake Format = "mooncake"
	// CSV is any CSV log whose arrival, prompt and output columns are named
	// by Columns.
	CSV Format = "csv"
)

// Formats lists every format, in the order detection tries them (CSV is
// never detected: its columns must be named).
var Formats = []Format{Azure, BurstGPT, Mooncake, CSV}

// ParseFormat returns the format called name.
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown trace format %q: expected %s", name, formatList(Formats, "or"))
}

// formatList writes formats as "a, b, c or d".
func formatList(formats []Format, conjunction string) string {
	names := FormatNames(formats)
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conjunction + " " + names[len(names)-1]
}

// Options say how to read a trace. The zero value detects the format and
// keeps every row its format's rules keep.
type Options struct {
	// Format forces a format; empty detects it from the first line, or
	// means CSV when Columns are given.
	Format Format
	// Filter keeps a subset of a BurstGPT trace's rows.
	Filter Filter
	// Columns names the columns of a CSV log (Format CSV); nil otherwise.
	Columns *Columns
	// MaxRequests is the most requests the read may keep: 0 means
	// workload.MaxHeldRequests, less is what is left of it when other traces
	// are held too (a sweep's). One more fails the read.
	MaxRequests int
}

// Option names in an OptionError.
const (
	OptionFilter  = "filter"  // Options.Filter
	OptionColumns = "columns" // Options.Columns
)

// OptionError reports Options that contradict each other, before any input
// is read.
type OptionError struct {
	Option string // the option at fault: OptionFilter or OptionColumns
	Reason string // what is wrong and what was expected
}

// Error reads "filter: applies to burstgpt traces, not mooncake".
func (e *OptionError) Error() string { return e.Option + ": " + e.Reason }

// Check reports options that contradict each other: a filter for a format
// other than BurstGPT, columns for a format other than CSV, or CSV without
// columns.
func (o Options) Check() error {
	format := o.format()
	switch {
	case !o.Filter.Empty() && format != "" && format != BurstGPT:
		return &OptionError{OptionFilter, fmt.Sprintf("applies to %s traces, not %s", BurstGPT, format)}
	case o.Columns != nil && format != CSV:
		return &OptionError{OptionColumns, fmt.Sprintf("names the columns of a %s log, not of a %s trace", CSV, format)}
	case o.Columns == nil && format == CSV:
		return &OptionError{OptionColumns, "is required for a csv log: name its arrival, prompt and output columns"}
	}
	return nil
}

// format is the forced format: Format, or CSV when columns are named.
func (o Options) format() Format {
	if o.Format == "" && o.Columns != nil {
		return CSV
	}
	return o.Format
}

// Trace is a loaded trace: the workload, its format and, for Mooncake
// traces, every request's hash ids. The hash ids live here rather than on
// workload.Request, which would grow by a slice header (24 B) per request for
// the formats that have none; the plant ignores them today.
type Trace struct {
	workload.Workload
	Format Format
	// hashStart[i]:hashStart[i+1] are request i's hash ids in hashIDs;
	// nil for formats without hash ids.
	hashStart []int
	hashIDs   []int64
	// sessions[i] is request i's session number, -1 for none; nil for a
	// trace without a session column.
	sessions []int32
}

// HasSessions reports whether the trace's requests carry sessions: a CSV
// log read with a session column.
func (t *Trace) HasSessions() bool { return t.sessions != nil }

// Session returns request i's session, numbered from 0 in the order of
// their first requests, and true; false for a request without one (an
// empty session field, or a trace without a session column).
func (t *Trace) Session(i int) (int, bool) {
	if t.sessions == nil || t.sessions[i] < 0 {
		return 0, false
	}
	return int(t.sessions[i]), true
}

// HashIDs returns request i's hash ids (one per 512-token block of its
// prompt, for Mooncake traces); nil for the other formats. The slice is
// shared with the trace.
func (t *Trace) HashIDs(i int) []int64 {
	if t.hashStart == nil {
		return nil
	}
	return t.hashIDs[t.hashStart[i]:t.hashStart[i+1]:t.hashStart[i+1]]
}

// Load reads a trace from r; name is what errors and the provenance call
// it. Rows more than maxElapsedS (plus workload.TimeEpsilonS) after the first kept row are
// left out, and not counted as skipped; workload.NoElapsedLimit keeps them
// all. The Azure format is read by workload.ReadWorkload; the others check
// every field of every row, also of rows left out.
func Load(r io.Reader, name string, maxElapsedS float64, opt Options) (*Trace, error) {
	return load(r, name, maxElapsedS, opt, defaultCaps)
}

func load(r io.Reader, name string, maxElapsedS float64, opt Options, caps readCaps) (*Trace, error) {
	t := &Trace{}
	w, format, err := read(r, name, maxElapsedS, opt, caps, func(in *input, format Format) sink {
		rows := in.estimate(func(sample []byte) int { return bytes.Count(sample, []byte{'\n'}) })
		t.Requests = make([]workload.Request, 0, rows)
		s := sink{emit: func(r workload.Request) error {
			t.Requests = append(t.Requests, r)
			return nil
		}}
		if format == Mooncake {
			// A line has about as many hash ids as commas beyond the three
			// between its four keys, and one more.
			t.hashIDs = make([]int64, 0, in.estimate(func(sample []byte) int {
				return max(0, bytes.Count(sample, []byte{','})-2*bytes.Count(sample, []byte{'\n'}))
			}))
			t.hashStart = append(make([]int, 0, rows+1), 0)
			s.hashIDs = func(ids []int64) {
				t.hashIDs = append(t.hashIDs, ids...)
				t.hashStart = append(t.hashStart, len(t.hashIDs))
			}
		}
		if format == CSV && opt.Columns.Session != "" {
			t.sessions = make([]int32, 0, rows)
			numbers := map[string]int32{}
			s.session = func(text []byte) {
				n := int32(-1)
				if len(text) > 0 {
					var ok bool
					if n, ok = numbers[string(text)]; !ok {
						n = int32(len(numbers))
						numbers[string(text)] = n
					}
				}
				t.sessions = append(t.sessions, n)
			}
		}
		return s
	})
	if err != nil {
		return nil, err
	}
	t.Workload, t.Format = w.WithRequests(t.Requests), format
	return t, nil
}

// read reads a trace from r as opt says, handing each request it keeps to
// the sink that newSink returns for the input and its format, and returns
// the trace's identity (its Requests are the sink's) and its format.
func read(r io.Reader, name string, maxElapsedS float64, opt Options, caps readCaps, newSink func(in *input, format Format) sink) (workload.Workload, Format, error) {
	if err := opt.Check(); err != nil {
		return workload.Workload{}, "", err
	}
	in := newInput(r, caps)
	format := opt.format()
	if format == "" {
		var err error
		if format, err = detect(in, name); err != nil {
			return workload.Workload{}, "", err
		}
		if !opt.Filter.Empty() && format != BurstGPT {
			return workload.Workload{}, "", fmt.Errorf("trace %s: a filter on model or log type applies to %s traces, and this is a %s trace", name, BurstGPT, format)
		}
	}
	s := newSink(in, format)
	s.emit = capRequests(name, opt.maxRequests(), s.emit)
	var (
		w   workload.Workload
		err error
	)
	switch format {
	case Azure:
		w, err = workload.ReadWorkload(in.sized(), name, maxElapsedS, s.emit)
	case Mooncake:
		w, err = readMooncake(in, name, maxElapsedS, s)
	case BurstGPT:
		w, err = readCSV(in, name, maxElapsedS, burstGPTLayout(opt.Filter), s)
	case CSV:
		w, err = readCSV(in, name, maxElapsedS, genericLayout(*opt.Columns), s)
	}
	if err != nil {
		return workload.Workload{}, "", err
	}
	return w, format, nil
}

// maxRequests is MaxRequests, workload.MaxHeldRequests when not set.
func (o Options) maxRequests() int {
	if o.MaxRequests > 0 {
		return min(o.MaxRequests, workload.MaxHeldRequests)
	}
	return workload.MaxHeldRequests
}

// TooManyRequestsError reports a trace with more requests than a read may
// keep (Options.MaxRequests).
type TooManyRequestsError struct {
	Trace string // the trace's name
	Most  int    // the requests the read could keep
}

// Error names the trace and the cap, and how to stay within it.
func (e *TooManyRequestsError) Error() string {
	if e.Most < workload.MaxHeldRequests {
		return fmt.Sprintf("trace %s: more than %d requests, what is left of the %d servesim holds at once after the traces read before it", e.Trace, e.Most, workload.MaxHeldRequests)
	}
	return fmt.Sprintf("trace %s: more than %d requests, the most servesim holds at once (cut it with --max-elapsed, or split it)", e.Trace, e.Most)
}

// capRequests passes the requests of the trace name on to emit, up to most
// of them; the next one fails the read with a *TooManyRequestsError, so
// that a trace of many short rows (far under the byte cap) stops before it
// takes more memory than the documented peak.
func capRequests(name string, most int, emit func(workload.Request) error) func(workload.Request) error {
	kept := 0
	return func(r workload.Request) error {
		if kept == most {
			return &TooManyRequestsError{Trace: name, Most: most}
		}
		kept++
		return emit(r)
	}
}
