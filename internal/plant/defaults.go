package plant

import (
	"bytes"
	_ "embed"
)

// defaultTraceCSV is CodeTraceLike(DefaultTraceSeed, DefaultTraceDurationS)
// written by WriteCSV; TestDefaultTraceIsGenerated keeps it so.
//
//go:embed default_trace.csv
var defaultTraceCSV []byte

// The configuration of the embedded default trace.
const (
	DefaultTraceSeed      = 2023
	DefaultTraceDurationS = 3600.0
	// DefaultTraceName is what provenance records call the embedded trace.
	DefaultTraceName = "(embedded synthetic code-like trace, seed 2023, 3600 s)"
)

// DefaultTrace loads the embedded synthetic trace, keeping the rows within
// maxElapsedS of the first (NoElapsedLimit keeps all).
func DefaultTrace(maxElapsedS float64) (Workload, error) {
	return LoadWorkload(bytes.NewReader(defaultTraceCSV), DefaultTraceName, maxElapsedS)
}
