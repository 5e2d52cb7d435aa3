package trace

import (
	"fmt"
	"strings"
)

// Columns names the columns of a CSV log (format CSV) by their header
// names, and the unit of its arrival times.
type Columns struct {
	Arrival string   // the arrival-time column
	Prompt  string   // the prompt-token column
	Output  string   // the output-token column
	Unit    TimeUnit // the unit of the arrival times; Seconds when empty
	// Session is the session or conversation column, "" for none: the
	// requests of one value form a session (Trace.Session).
	Session string
}

// Column keys of ParseColumns.
const (
	ColumnArrival = "arrival"
	ColumnPrompt  = "prompt"
	ColumnOutput  = "output"
	ColumnSession = "session"
)

// ParseColumns reads the terms arrival=COL, prompt=COL and output=COL, each
// exactly once, and session=COL at most once, COL a column name of the
// log's header line; the unit is Seconds.
func ParseColumns(terms []string) (Columns, error) {
	var c Columns
	for _, term := range terms {
		key, name, ok := strings.Cut(term, "=")
		var column *string
		switch key {
		case ColumnArrival:
			column = &c.Arrival
		case ColumnPrompt:
			column = &c.Prompt
		case ColumnOutput:
			column = &c.Output
		case ColumnSession:
			column = &c.Session
		}
		switch {
		case !ok || column == nil:
			return Columns{}, fmt.Errorf("column term %q: expected arrival=COL, prompt=COL, output=COL or session=COL", term)
		case name == "":
			return Columns{}, fmt.Errorf("column term %q: expected a column name after =", term)
		case *column != "":
			return Columns{}, fmt.Errorf("column term %q: %s is named twice", term, key)
		}
		*column = name
	}
	for _, missing := range []struct{ key, name string }{{ColumnArrival, c.Arrival}, {ColumnPrompt, c.Prompt}, {ColumnOutput, c.Output}} {
		if missing.name == "" {
			return Columns{}, fmt.Errorf("no %s=COL: name the arrival, prompt and output columns", missing.key)
		}
	}
	c.Unit = Seconds
	return c, nil
}
