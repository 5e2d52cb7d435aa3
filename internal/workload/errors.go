package workload

import (
	"fmt"

	"servesim/internal/limits"
)

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
