package plant

// RequestLog is what a run keeps for a per-request log with
// Options.RequestLog: every request's record and the KV-cache occupancy it
// found when it arrived.
type RequestLog struct {
	// Records are the request records in the order the requests were
	// added (workload order for Simulate). They are the Result's Requests
	// when it has them.
	Records []RequestRecord
	// ArrivalKVTokens[i] is the KV-cache occupancy, tokens, at the start
	// of the step in which request i arrived (was admitted to the queue):
	// the KVTokens of that step's Observation. Zero for a request that
	// never arrived within the run.
	ArrivalKVTokens []float64
	// KVCapacityTokens is the plant's KV-cache capacity, tokens (its whole
	// blocks with the prefix cache).
	KVCapacityTokens float64
	// Engine[i] is what the engine features did to request i: its
	// preemptions, recomputation and prefix-cache hits; nil when they are
	// off (Options.Engine).
	Engine []EngineRecord
}

// noteArrivals records kvTokens, the occupancy at the start of the current
// step, as the arrival occupancy of the requests admitted to the queue in
// it (from index first to pending), when the run keeps a request log.
func (sim *simulation) noteArrivals(first int, kvTokens float64) {
	if sim.arrivalKV == nil {
		return
	}
	for i := first; i < sim.pending; i++ {
		sim.arrivalKV[i] = kvTokens
	}
}

// requestLog is the run's RequestLog; nil unless Options.RequestLog.
func (sim *simulation) requestLog() *RequestLog {
	if sim.arrivalKV == nil {
		return nil
	}
	return &RequestLog{
		Records:          sim.records,
		ArrivalKVTokens:  sim.arrivalKV,
		KVCapacityTokens: sim.kvCapacityTokens(),
		Engine:           sim.engineRecords(),
	}
}
