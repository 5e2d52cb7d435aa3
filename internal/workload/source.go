package workload

// A Source is a workload read while it is simulated (plant.RunStream),
// so that its requests need not all be held: a trace file of millions of
// requests.
type Source interface {
	// Read reads the workload from its start, calling emit with each
	// request in order (as they would be in Workload.Requests), and stops
	// at emit's first error, which it returns. It returns the workload's
	// identity: its Source, SHA256 and Skipped, without Requests. Read
	// may be called twice (plant.RunStream normalizes in two passes).
	Read(emit func(Request) error) (Workload, error)
	// Estimate is the number of requests expected, or 0 when unknown:
	// it sizes buffers, nothing else.
	Estimate() int
}

// HashIDBlockTokens is the tokens per hash id of a Mooncake trace.
const HashIDBlockTokens = 512

// HashIDSource gives the block hash ids of a request's prompt, as a
// Mooncake trace has them: one id per HashIDBlockTokens tokens,
// equal ids meaning equal prefixes up to the end of that block. The
// argument is the request's ID; nil means the request has none.
type HashIDSource interface {
	HashIDs(requestID int) []int64
}
