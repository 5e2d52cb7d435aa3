package trace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"servesim/internal/limits"
	"servesim/internal/workload"
)

// Reasons a row is skipped, the keys of workload.Workload.Skipped.
const (
	// SkipFailedResponse is a BurstGPT row with Response tokens 0: a
	// failed request.
	SkipFailedResponse = "failed_response"
	// SkipFiltered is a BurstGPT row the filter does not keep.
	SkipFiltered = "filtered"
)

// builder turns the rows of a trace, in file order, into its requests,
// which it hands to its sink: it checks that rows are sorted by time,
// numbers the kept ones from 0, makes their arrivals relative to the first
// kept row and leaves out those past the elapsed-time limit.
type builder struct {
	name        string
	maxElapsedS float64
	sink        sink
	kept        int // requests handed to the sink
	skipped     map[string]int
	rows        int   // rows seen, kept or not
	start       int64 // time of the first row, microseconds
	prev        int64 // time of the previous row, microseconds
	prevZone    bool  // whether the times carry a UTC offset (ISO times)
	first       int64 // time of the first kept row, microseconds
	started     bool  // whether a row was kept, and so first is set
}

// newBuilder starts the requests of a trace, for s.
func newBuilder(name string, maxElapsedS float64, s sink) *builder {
	return &builder{name: name, maxElapsedS: maxElapsedS, sink: s}
}

// A sink receives the requests a reader keeps, in order: emit is called
// with each, and the reader stops at its first error; hashIDs, when not
// nil, is called right after with the request's hash ids (Mooncake; nil
// for the other formats), and session, when not nil, with its session
// column's text (a CSV log with a session column; nil for the others),
// both valid until the next call.
type sink struct {
	emit    func(workload.Request) error
	hashIDs func(ids []int64)
	session func(text []byte)
}

// errorf is an error about a row: "trace NAME line N: ...".
func (b *builder) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("trace %s line %d: %s", b.name, line, fmt.Sprintf(format, args...))
}

// fieldError is an error about a field of a row: its name, its text
// (shortened when long) and the reason.
func (b *builder) fieldError(line int, field string, text []byte, reason any) error {
	return b.errorf(line, "%s %s: %v", field, limits.Quote(string(text)), reason)
}

// row records the time of the next row, in microseconds, and whether it
// carried a UTC offset; it fails when the row is earlier than the one
// before, mixes times with and without an offset, or comes more than
// maxMicros after the first row (so that arrivals are exact in a float64
// and convert to any format).
func (b *builder) row(line int, field string, text []byte, us int64, hasZone bool) error {
	if b.rows == 0 {
		b.start = us
	} else {
		switch {
		case hasZone != b.prevZone:
			return b.fieldError(line, field, text, "mixes times with and without a UTC offset")
		case us < b.prev:
			return b.fieldError(line, field, text, "earlier than the previous row: the trace must be sorted by time")
		case us-b.start > maxMicros:
			return b.fieldError(line, field, text, "more than 2^53 microseconds (285 years) after the first row")
		}
	}
	b.rows++
	b.prev, b.prevZone = us, hasZone
	return nil
}

// skip counts the last row as skipped for reason.
func (b *builder) skip(reason string) {
	if b.skipped == nil {
		b.skipped = map[string]int{}
	}
	b.skipped[reason]++
}

// keep hands the last row to the sink as a request, with its hash ids and
// its session, unless it is past the elapsed-time limit; it returns the
// sink's error.
func (b *builder) keep(prompt, output int64, hashIDs []int64, session []byte) error {
	if !b.started {
		b.first, b.started = b.prev, true
	}
	elapsed := float64(b.prev-b.first) / 1e6
	if elapsed > b.maxElapsedS+workload.TimeEpsilonS {
		return nil
	}
	err := b.sink.emit(workload.Request{
		ID: b.kept, ArrivalTimeS: elapsed, PromptTokens: int(prompt), OutputTokens: int(output),
	})
	b.kept++
	if err == nil && b.sink.hashIDs != nil {
		b.sink.hashIDs(hashIDs)
	}
	if err == nil && b.sink.session != nil {
		b.sink.session(session)
	}
	return err
}

// workload finishes the trace: its identity, without its requests (the
// sink has them). It fails when no row was read or none was kept.
func (b *builder) workload(in *input) (workload.Workload, error) {
	switch {
	case b.rows == 0:
		return workload.Workload{}, fmt.Errorf("trace %s: no rows: expected at least one request", b.name)
	case b.kept == 0:
		return workload.Workload{}, fmt.Errorf("trace %s: no request kept: all %d rows were skipped (%s)", b.name, b.rows, skippedList(b.skipped))
	}
	return workload.Workload{Source: b.name, SHA256: in.sum(), Skipped: b.skipped}, nil
}

// skippedList writes skip counts as "failed_response 3, filtered 2".
func skippedList(skipped map[string]int) string {
	parts := make([]string, 0, len(skipped))
	for _, reason := range slices.Sorted(maps.Keys(skipped)) {
		parts = append(parts, fmt.Sprintf("%s %d", reason, skipped[reason]))
	}
	return strings.Join(parts, ", ")
}
