package trace

import (
	"fmt"
	"io"
	"strings"

	"servesim/internal/workload"
)

// csvLayout is how the rows of a CSV format become requests.
type csvLayout struct {
	arrival, prompt, output string   // the columns read
	session                 string   // the session column, "" for none
	unit                    TimeUnit // the unit of the arrival column
	// BurstGPT: the filter, and whether a row whose output count is 0 is
	// a failed request, skipped.
	filter             Filter
	skipZeroOutput     bool
	model, logType     string // the columns the filter tests
	expectedHeaderNote string // what the header should hold, for a missing column
}

// burstGPTLayout reads BurstGPT: Timestamp in seconds, Request tokens and
// Response tokens; a row with Response tokens 0 is a failed request.
func burstGPTLayout(filter Filter) csvLayout {
	return csvLayout{
		arrival: "Timestamp", prompt: "Request tokens", output: "Response tokens", unit: Seconds,
		filter: filter, skipZeroOutput: true, model: "Model", logType: "Log Type",
		expectedHeaderNote: "a burstgpt trace has the columns " + strings.Join(burstGPTColumns, ","),
	}
}

// genericLayout reads a CSV log by its named columns.
func genericLayout(c Columns) csvLayout {
	unit := c.Unit
	if unit == "" {
		unit = Seconds
	}
	note := fmt.Sprintf("the columns named are arrival=%s, prompt=%s, output=%s", c.Arrival, c.Prompt, c.Output)
	if c.Session != "" {
		note += ", session=" + c.Session
	}
	return csvLayout{
		arrival: c.Arrival, prompt: c.Prompt, output: c.Output, session: c.Session, unit: unit,
		expectedHeaderNote: note,
	}
}

// Indexes of the columns a layout may read.
const (
	colArrival = iota
	colPrompt
	colOutput
	colModel   // read when the filter tests models
	colLogType // read when the filter tests log types
	colSession // read when a session column is named
	numColumns
)

// columns are the names of the columns the layout may read, and whether it
// reads each.
func (l csvLayout) columns() (names [numColumns]string, read [numColumns]bool) {
	names = [numColumns]string{l.arrival, l.prompt, l.output, l.model, l.logType, l.session}
	read = [numColumns]bool{true, true, true, len(l.filter.Models) > 0, len(l.filter.LogTypes) > 0, l.session != ""}
	return names, read
}

// readCSV reads a CSV trace in layout l: a header line, then one row per
// request, each kept one handed to s.
func readCSV(in *input, name string, maxElapsedS float64, l csvLayout, s sink) (workload.Workload, error) {
	names, read := l.columns()
	records := newCSVRecords(in, name)
	header, line, err := records.next()
	if err == io.EOF {
		return workload.Workload{}, fmt.Errorf("trace %s: empty: expected a header line naming the columns %s, %s and %s", name, l.arrival, l.prompt, l.output)
	}
	if err != nil {
		return workload.Workload{}, err
	}
	var index [numColumns]int
	for i, column := range names {
		if !read[i] {
			continue
		}
		if index[i] = lastIndex(header, column); index[i] < 0 {
			return workload.Workload{}, fmt.Errorf("trace %s line %d: missing column %q: %s", name, line, column, l.expectedHeaderNote)
		}
	}
	fieldsInHeader := len(header) // the next record reuses header's slice
	b := newBuilder(name, maxElapsedS, s)
	for {
		fields, line, err := records.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return workload.Workload{}, err
		}
		field := func(i int) ([]byte, error) {
			if !read[i] {
				return nil, nil
			}
			if index[i] < len(fields) {
				return fields[index[i]], nil
			}
			return nil, b.errorf(line, "missing %s: expected %d fields as in the header", names[i], fieldsInHeader)
		}
		stamp, err := field(colArrival)
		if err != nil {
			return workload.Workload{}, err
		}
		us, hasZone, err := l.unit.micros(stamp)
		if err != nil {
			return workload.Workload{}, b.fieldError(line, l.arrival, stamp, err)
		}
		if err := b.row(line, l.arrival, stamp, us, hasZone); err != nil {
			return workload.Workload{}, err
		}
		var counts [2]int64
		for k := range counts {
			text, err := field(colPrompt + k)
			if err != nil {
				return workload.Workload{}, err
			}
			n, ok := parseCount(text)
			switch {
			case !ok:
				return workload.Workload{}, b.fieldError(line, names[colPrompt+k], text, "expected an integer token count")
			case n < 0:
				return workload.Workload{}, b.fieldError(line, names[colPrompt+k], text, "token counts must not be negative")
			}
			counts[k] = n
		}
		model, err := field(colModel)
		if err != nil {
			return workload.Workload{}, err
		}
		logType, err := field(colLogType)
		if err != nil {
			return workload.Workload{}, err
		}
		if !l.filter.keeps(model, logType) {
			b.skip(SkipFiltered)
			continue
		}
		if l.skipZeroOutput && counts[1] == 0 {
			b.skip(SkipFailedResponse)
			continue
		}
		for k, n := range counts {
			if n == 0 {
				text, _ := field(colPrompt + k)
				return workload.Workload{}, b.fieldError(line, names[colPrompt+k], text, "token counts must be positive")
			}
		}
		session, err := field(colSession)
		if err != nil {
			return workload.Workload{}, err
		}
		if err := b.keep(counts[0], counts[1], nil, session); err != nil {
			return workload.Workload{}, err
		}
	}
	return b.workload(in)
}

// lastIndex is the index of the last column called name, as Python's
// csv.DictReader reads a repeated name (and workload.LoadWorkload); -1 when
// there is none.
func lastIndex(header [][]byte, name string) int {
	for i := len(header) - 1; i >= 0; i-- {
		if string(header[i]) == name {
			return i
		}
	}
	return -1
}
