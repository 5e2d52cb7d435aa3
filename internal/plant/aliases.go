package plant

import (
	"io"

	"servesim/internal/workload"
)

// The request and workload types, the trace reader and the synthetic
// traces live in package workload, which imports no simulator package (so
// that the trace readers need not); these are the names of it that the
// simulator's API takes and its callers use, the same types and functions
// under the plant's name.
type (
	// Request is workload.Request: one request of an arrival trace.
	Request = workload.Request
	// Workload is workload.Workload: a loaded arrival trace with the
	// identity of its source.
	Workload = workload.Workload
	// WorkloadSource is workload.Source: a workload read while it is
	// simulated (RunStream).
	WorkloadSource = workload.Source
	// HashIDSource is workload.HashIDSource: the block hash ids of a
	// request's prompt (EngineOptions.HashIDs).
	HashIDSource = workload.HashIDSource
)

// NoElapsedLimit is workload.NoElapsedLimit: LoadWorkload keeps every row
// of a trace.
var NoElapsedLimit = workload.NoElapsedLimit

// LoadWorkload is workload.LoadWorkload: it reads an Azure-format trace.
func LoadWorkload(r io.Reader, name string, maxElapsedS float64) (Workload, error) {
	return workload.LoadWorkload(r, name, maxElapsedS)
}

// CodeTraceLike is workload.CodeTraceLike: a synthetic trace resembling
// the Azure 2023 code trace.
func CodeTraceLike(seed uint64, durationS float64) workload.SyntheticTrace {
	return workload.CodeTraceLike(seed, durationS)
}

// WorkloadChecksum is workload.WorkloadChecksum: the reference's
// workload_checksum.
func WorkloadChecksum(requests []Request) string { return workload.WorkloadChecksum(requests) }
