package scenario

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Azure trace column names (Azure LLM inference traces 2023).
const (
	columnTimestamp = "TIMESTAMP"
	columnContext   = "ContextTokens"
	columnGenerated = "GeneratedTokens"
)

// timestampLayouts are the accepted TIMESTAMP forms. Go's parser takes any
// number of fractional-second digits after the seconds, exactly to the
// nanosecond, so "2023-11-16 18:17:03.9799600" (100 ns ticks) loses nothing.
var timestampLayouts = []string{
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05Z07:00",
}

// ReadAzureTrace reads an Azure-format request trace (a CSV with a header
// naming TIMESTAMP, ContextTokens and GeneratedTokens; other columns are
// ignored; LF or CRLF line ends) as a workload: arrivals in milliseconds
// after the first row's TIMESTAMP, computed from whole nanoseconds (never
// from float seconds), the first sharedPrefixTokens tokens of each context
// as the shared prefix (all of it when shorter) and the rest as unique,
// GeneratedTokens as output. Rows are kept in file order.
//
// Every bad row is an error naming the input, the line, the column, the
// value and what was expected; a row timed before the first row is one.
// name is what errors call the input.
func ReadAzureTrace(r io.Reader, name string, sharedPrefixTokens int) ([]WorkloadRequest, error) {
	if sharedPrefixTokens < 0 {
		return nil, fmt.Errorf("trace %s: %d shared-prefix tokens: must not be negative", name, sharedPrefixTokens)
	}
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("trace %s: empty file: expected a header %s,%s,%s", name, columnTimestamp, columnContext, columnGenerated)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	header = slices.Clone(header) // the reader reuses its record
	cols, err := azureColumns(header)
	if err != nil {
		return nil, fmt.Errorf("trace %s line 1: %w", name, err)
	}
	var (
		trace []WorkloadRequest
		start time.Time
	)
	for {
		record, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		fail := func(col int, format string, args ...any) error {
			return fmt.Errorf("trace %s line %d: %s %q: %s", name, line, header[col], record[col], fmt.Sprintf(format, args...))
		}
		ts, ok := parseTimestamp(record[cols.timestamp])
		if !ok {
			return nil, fail(cols.timestamp, "expected a date and time like 2023-11-16 18:17:03.9799600")
		}
		if len(trace) == 0 {
			start = ts
		}
		elapsed := ts.Sub(start)
		if elapsed < 0 {
			return nil, fail(cols.timestamp, "earlier than the first row's %s: arrivals are measured from the first row", start.Format("2006-01-02 15:04:05.9999999"))
		}
		if elapsed == math.MaxInt64 {
			return nil, fail(cols.timestamp, "more than 290 years after the first row")
		}
		context, err := positiveTokens(record[cols.context])
		if err != nil {
			return nil, fail(cols.context, "%v", err)
		}
		generated, err := positiveTokens(record[cols.generated])
		if err != nil {
			return nil, fail(cols.generated, "%v", err)
		}
		shared := min(sharedPrefixTokens, context)
		trace = append(trace, WorkloadRequest{
			RequestID:          fmt.Sprintf("req-%03d", len(trace)),
			ArrivalMS:          float64(elapsed) / float64(time.Millisecond),
			SharedPrefixTokens: shared,
			UniquePromptTokens: context - shared,
			OutputTokens:       generated,
		})
	}
	if len(trace) == 0 {
		return nil, fmt.Errorf("trace %s: no requests after the header", name)
	}
	return trace, nil
}

// azureIndexes are the positions of the columns the replay uses.
type azureIndexes struct{ timestamp, context, generated int }

// azureColumns finds the Azure columns in a header.
func azureColumns(header []string) (azureIndexes, error) {
	idx := azureIndexes{-1, -1, -1}
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a UTF-8 byte-order mark
			header[0] = h
		}
		var slot *int
		switch strings.TrimSpace(h) {
		case columnTimestamp:
			slot = &idx.timestamp
		case columnContext:
			slot = &idx.context
		case columnGenerated:
			slot = &idx.generated
		default:
			continue
		}
		if *slot >= 0 {
			return idx, fmt.Errorf("column %s appears twice", strings.TrimSpace(h))
		}
		*slot = i
	}
	for _, c := range []struct {
		name string
		at   int
	}{{columnTimestamp, idx.timestamp}, {columnContext, idx.context}, {columnGenerated, idx.generated}} {
		if c.at < 0 {
			return idx, fmt.Errorf("missing column %s: expected a header with %s,%s,%s", c.name, columnTimestamp, columnContext, columnGenerated)
		}
	}
	return idx, nil
}

// parseTimestamp parses a TIMESTAMP to the nanosecond; without a zone it is
// taken as UTC.
func parseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// positiveTokens parses a token count, which must be a whole number > 0.
func positiveTokens(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("expected a whole number of tokens")
	}
	if n <= 0 {
		return 0, errors.New("token counts must be positive")
	}
	return n, nil
}

// csvError locates an error of the CSV reader.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("trace %s line %d: %v", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("trace %s: %w", name, err)
}
