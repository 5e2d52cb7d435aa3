package plant

import (
	"errors"
	"fmt"

	"servesim/internal/limits"
)

// ErrNoProfile is Plant.Validate's error for a plant without a profile.
var ErrNoProfile = errors.New("plant has no profile")

// FieldError reports a setting out of its range: a field of a Plant, an
// SLO or a normalization, by its JSON name, with its value and why. A
// command maps Field to the flag that sets it (errors.As).
type FieldError struct {
	Field string  // JSON name: "time_step_s"
	Value float64 // the value given
	Why   string  // what it must be: "must be finite and positive"
}

// Error reads "time_step_s -1: must be finite and positive".
func (e *FieldError) Error() string { return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Why) }

// TraceError reports a trace that cannot be read: the file, the line (0
// for the file as a whole), the column and its text when one is at fault,
// and why.
type TraceError struct {
	File   string // what the trace is called: its path or "stdin"
	Line   int    // 1-based line; 0 when no line is at fault
	Column string // TIMESTAMP, ContextTokens or GeneratedTokens; empty when no column is at fault
	Value  string // the column's text (quoted in at most limits.MaxQuotedChars characters)
	Why    string // what is wrong and what was expected
}

// Error reads `trace code.csv line 17: GeneratedTokens "-3": token counts
// must be positive`.
func (e *TraceError) Error() string {
	msg := "trace " + e.File
	if e.Line > 0 {
		msg += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Column != "" {
		msg += ": " + e.Column + " " + limits.Quote(e.Value)
	}
	return msg + ": " + e.Why
}
