package trace

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"servesim/internal/limits"
	"servesim/internal/plant"
)

// Reasons a row is skipped, the keys of plant.Workload.Skipped.
const (
	// SkipFailedResponse is a BurstGPT row with Response tokens 0: a
	// failed request.
	SkipFailedResponse = "failed_response"
	// SkipFiltered is a BurstGPT row the filter does not keep.
	SkipFiltered = "filtered"
)

// builder turns the rows of a trace, in file order, into its requests: it
// checks that rows are sorted by time, numbers the kept ones from 0, makes
// their arrivals relative to the first kept row and leaves out those past
// the elapsed-time limit.
type builder struct {
	name        string
	maxElapsedS float64
	requests    []plant.Request
	skipped     map[string]int
	rows        int   // rows seen, kept or not
	start       int64 // time of the first row, microseconds
	prev        int64 // time of the previous row, microseconds
	prevZone    bool  // whether the times carry a UTC offset (ISO times)
	first       int64 // time of the first kept row, microseconds
	started     bool  // whether a row was kept, and so first is set
}

// newBuilder starts the requests of the input in; their number is
// estimated from its lines, so that the requests of a file are allocated
// once.
func newBuilder(in *input, name string, maxElapsedS float64) *builder {
	rows := in.estimate(func(sample []byte) int { return bytes.Count(sample, []byte{'\n'}) })
	return &builder{name: name, maxElapsedS: maxElapsedS, requests: make([]plant.Request, 0, rows)}
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

// keep adds the last row as a request, unless it is past the elapsed-time
// limit, and reports whether it did.
func (b *builder) keep(prompt, output int64) bool {
	if !b.started {
		b.first, b.started = b.prev, true
	}
	elapsed := float64(b.prev-b.first) / 1e6
	if elapsed > b.maxElapsedS+1e-12 {
		return false
	}
	b.requests = append(b.requests, plant.Request{
		ID: len(b.requests), ArrivalTimeS: elapsed, PromptTokens: int(prompt), OutputTokens: int(output),
	})
	return true
}

// workload finishes the trace: it fails when no row was read or none was
// kept.
func (b *builder) workload(in *input) (plant.Workload, error) {
	switch {
	case b.rows == 0:
		return plant.Workload{}, fmt.Errorf("trace %s: no rows: expected at least one request", b.name)
	case len(b.requests) == 0:
		return plant.Workload{}, fmt.Errorf("trace %s: no request kept: all %d rows were skipped (%s)", b.name, b.rows, skippedList(b.skipped))
	}
	return plant.Workload{Requests: b.requests, Source: b.name, SHA256: in.sum(), Skipped: b.skipped}, nil
}

// skippedList writes skip counts as "failed_response 3, filtered 2".
func skippedList(skipped map[string]int) string {
	parts := make([]string, 0, len(skipped))
	for _, reason := range slices.Sorted(maps.Keys(skipped)) {
		parts = append(parts, fmt.Sprintf("%s %d", reason, skipped[reason]))
	}
	return strings.Join(parts, ", ")
}
