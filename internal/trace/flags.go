package trace

import (
	"errors"
	"fmt"
	"strings"

	"servesim/internal/workload"
)

// Flags are the trace flags of a command as given (--trace-format,
// --trace-filter, --trace-columns, --time-unit), the same in every command
// that reads a trace, and the Options they parse to.
type Flags struct {
	Format   string   // --trace-format; empty detects the format
	Filter   []string // --trace-filter terms
	Columns  []string // --trace-columns terms
	TimeUnit string   // --time-unit
	// Options are the flags parsed (Parse), set before the command runs.
	Options Options
}

// HasSessionColumn reports whether --trace-columns names a session
// column (session=COL), before the flags are parsed.
func (f *Flags) HasSessionColumn() bool {
	for _, term := range f.Columns {
		if strings.HasPrefix(term, ColumnSession+"=") {
			return true
		}
	}
	return false
}

// FlagNames are the names of the trace flags.
var FlagNames = []string{"trace-format", "trace-filter", "trace-columns", "time-unit"}

// Parse turns the flags into f.Options; timeUnitGiven says whether
// --time-unit was given. Its errors name the flag at fault and what it
// expects.
func (f *Flags) Parse(timeUnitGiven bool) error {
	var opt Options
	if f.Format != "" {
		format, err := ParseFormat(f.Format)
		if err != nil {
			return fmt.Errorf("--trace-format %q: expected azure, burstgpt, mooncake or csv", f.Format)
		}
		opt.Format = format
	}
	if len(f.Filter) > 0 {
		filter, err := ParseFilter(f.Filter)
		if err != nil {
			return fmt.Errorf("--trace-filter: %v", err)
		}
		opt.Filter = filter
	}
	unit, err := ParseTimeUnit(f.TimeUnit)
	if err != nil {
		return fmt.Errorf("--time-unit %q: expected s, ms, us or iso", f.TimeUnit)
	}
	if len(f.Columns) > 0 {
		columns, err := ParseColumns(f.Columns)
		if err != nil {
			return fmt.Errorf("--trace-columns: %v", err)
		}
		columns.Unit = unit
		opt.Columns = &columns
	} else if timeUnitGiven {
		return errors.New("--time-unit applies to a CSV log read by --trace-columns")
	}
	if err := opt.Check(); err != nil {
		var e *OptionError
		if errors.As(err, &e) {
			flag := map[string]string{OptionFilter: "--trace-filter", OptionColumns: "--trace-columns"}[e.Option]
			return fmt.Errorf("%s %s", flag, e.Reason)
		}
		return err
	}
	f.Options = opt
	return nil
}

// FormatNames are the names of formats.
func FormatNames(formats []Format) []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return names
}

// HashIDSource is t as the prefix cache's source of block hash ids when t
// is a Mooncake trace (which has them), else nil.
func (t *Trace) HashIDSource() workload.HashIDSource {
	if t.Format == Mooncake {
		return t
	}
	return nil
}

// Load reads the whole trace at once, with the rules of Read, keeping a
// Mooncake trace's hash ids.
func (s *Source) Load() (*Trace, error) {
	in, err := s.open()
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", s.Name(), err)
	}
	defer in.Close()
	return Load(in, s.Name(), s.MaxElapsedS, s.Options)
}
