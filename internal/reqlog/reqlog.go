// Package reqlog writes the request log of a simulated run: one row per
// completed request in the schema `servesim diagnose` reads (the
// reference seed000's RequestLog columns and arrival_s), plus ttft_ms,
// e2e_ms and, for a fleet, replica. Without the plant's engine features
// (plant.EngineOptions) nothing is preempted or cached: preempted is false
// and recompute_penalty_ms and prefix_cached_tokens are 0.
package reqlog

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// Format is the file format of a request log.
type Format int

const (
	// CSV is a header row, then one row per request.
	CSV Format = iota
	// JSONLines is one JSON object per request, keyed like the CSV header.
	JSONLines
)

// FormatOf returns the format a log file's extension asks for: .csv or
// .jsonl, in any case.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return CSV, nil
	case ".jsonl":
		return JSONLines, nil
	}
	return 0, fmt.Errorf("%q: expected a file name ending in .csv or .jsonl", path)
}

// Columns are the log's columns in order; a fleet's log adds Replica.
var Columns = []string{
	"request_id", "prompt_tokens", "output_tokens", "queue_wait_ms", "prefill_ms",
	"decode_tpot_ms", "preempted", "recompute_penalty_ms", "prefix_cached_tokens",
	"kv_occupancy_pct_at_arrival", "arrival_s", "ttft_ms", "e2e_ms",
}

// Replica is the column a fleet's log adds.
const Replica = "replica"

// Row is one completed request of the log; the times are in ms but
// ArrivalS.
type Row struct {
	RequestID    int
	PromptTokens int
	OutputTokens int
	// QueueWaitMs is prefill start minus arrival, at least 0: a request
	// arriving up to plant.TimeEpsilonS after a step's start is admitted
	// in that step.
	QueueWaitMs float64
	// PrefillMs is first token minus prefill start.
	PrefillMs float64
	// DecodeTPOTMs is (completion - first token - RecomputePenaltyMs) /
	// max(1, output tokens - 1): the time per output token without the
	// recomputation, which diagnose adds back, so that its end-to-end
	// latency is completion minus arrival.
	DecodeTPOTMs float64
	// Preempted says the request was preempted at least once.
	Preempted bool
	// RecomputePenaltyMs is the time spent prefilling again after its
	// first token (plant.EngineRecord.RecomputeAfterFirstTokenS);
	// recomputation before the first token is part of PrefillMs.
	RecomputePenaltyMs float64
	// PrefixCachedTokens is its prompt tokens found in the prefix cache,
	// rounded down (fractional only for a request preempted in the
	// middle of a prefill).
	PrefixCachedTokens int64
	// KVOccupancyPct is 100 x the KV-cache occupancy at the start of the
	// arrival step / the KV capacity, at most 100 (the plant may hold a
	// partial prefill beyond its capacity; diagnose reads percentages up
	// to 100).
	KVOccupancyPct float64
	ArrivalS       float64 // arrival, s
	TTFTMs         float64 // first token minus arrival
	E2EMs          float64 // completion minus arrival
	Replica        int     // the replica that served it; fleets only
}

// newRow is the row of request j of log l, a completed one.
func newRow(l *plant.RequestLog, j int) Row {
	r := &l.Records[j]
	row := Row{
		RequestID:      r.RequestID,
		PromptTokens:   r.PromptTokens,
		OutputTokens:   r.OutputTokens,
		QueueWaitMs:    max(0, (r.PrefillStartS-r.ArrivalTimeS)*1000),
		PrefillMs:      (r.FirstTokenTimeS - r.PrefillStartS) * 1000,
		DecodeTPOTMs:   r.TPOTS() * 1000,
		KVOccupancyPct: min(100, 100*l.ArrivalKVTokens[j]/l.KVCapacityTokens),
		ArrivalS:       r.ArrivalTimeS,
		TTFTMs:         r.TTFTS() * 1000,
		E2EMs:          r.LatencyS() * 1000,
	}
	if l.Engine != nil {
		e := &l.Engine[j]
		row.Preempted = e.Preemptions > 0
		row.RecomputePenaltyMs = e.RecomputeAfterFirstTokenS * 1000
		row.PrefixCachedTokens = int64(e.PrefixCachedTokens)
		if e.RecomputeAfterFirstTokenS > 0 {
			row.DecodeTPOTMs = max(0, (r.CompletionTimeS-r.FirstTokenTimeS-e.RecomputeAfterFirstTokenS)*1000/float64(max(1, r.OutputTokens-1)))
		}
	}
	return row
}

// Log is the request log of one run, ready to write.
type Log struct {
	// Fleet says the rows carry a replica.
	Fleet bool
	// Completed and Unfinished count the requests written and left out.
	Completed, Unfinished int
	rows                  iter.Seq[Row]
}

// FromPlant is the log of a single-GPU run that kept one
// (plant.Options.RequestLog).
func FromPlant(l *plant.RequestLog) (*Log, error) {
	if l == nil {
		return nil, errorNoLog
	}
	log := &Log{rows: func(yield func(Row) bool) {
		for i := range l.Records {
			if l.Records[i].Completed() && !yield(newRow(l, i)) {
				return
			}
		}
	}}
	log.count(l.Records)
	return log, nil
}

// FromFleet is the log of a fleet run whose replicas kept one
// (plant.Options.RequestLog), in workload order; each request's KV
// percentage is of its replica's capacity.
func FromFleet(res *fleet.Result) (*Log, error) {
	logs := make([]*plant.RequestLog, len(res.Replicas))
	for k, rep := range res.Replicas {
		if logs[k] = rep.Result.Log; logs[k] == nil {
			return nil, errorNoLog
		}
	}
	// Replica k's log lists its requests in the order they were routed
	// to it, which is workload order: its j-th is the workload's j-th
	// request assigned to k. Checked once here, relied on when writing.
	seen := make([]int, len(logs))
	for i, k := range res.Assignment {
		if k < 0 {
			continue // an elastic fleet never routed it: unfinished, no row
		}
		if seen[k] >= len(logs[k].Records) || logs[k].Records[seen[k]].RequestID != res.Requests[i].RequestID {
			return nil, fmt.Errorf("request log: replica %d's records do not follow the routing", k)
		}
		seen[k]++
	}
	log := &Log{Fleet: true, rows: func(yield func(Row) bool) {
		next := make([]int, len(logs))
		for _, k := range res.Assignment {
			if k < 0 {
				continue
			}
			l, j := logs[k], next[k]
			next[k]++
			if l.Records[j].Completed() {
				row := newRow(l, j)
				row.Replica = k
				if !yield(row) {
					return
				}
			}
		}
	}}
	log.count(res.Requests)
	return log, nil
}

// errorNoLog is the error of a run that kept no request log.
var errorNoLog = fmt.Errorf("request log: the run kept none (plant.Options.RequestLog)")

// count counts the completed and unfinished requests.
func (l *Log) count(records []plant.RequestRecord) {
	for i := range records {
		if records[i].Completed() {
			l.Completed++
		}
	}
	l.Unfinished = len(records) - l.Completed
}

// Write writes the log to w in format f.
func (l *Log) Write(w io.Writer, f Format) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	columns := Columns
	if l.Fleet {
		columns = append(columns[:len(columns):len(columns)], Replica)
	}
	if f == CSV {
		if _, err := bw.WriteString(strings.Join(columns, ",") + "\n"); err != nil {
			return err
		}
	}
	var line []byte
	for row := range l.rows {
		line = appendRow(line[:0], f, columns, &row)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// appendRow appends row as one line of format f with the given columns
// (Columns, then Replica for a fleet).
func appendRow(b []byte, f Format, columns []string, row *Row) []byte {
	if f == JSONLines {
		b = append(b, '{')
	}
	for c, name := range columns {
		if c > 0 {
			b = append(b, ',')
		}
		if f == JSONLines {
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, `":`...)
		}
		b = appendValue(b, c, row)
	}
	if f == JSONLines {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// appendValue appends the value of column c (an index into Columns, or
// len(Columns) for Replica) of row.
func appendValue(b []byte, c int, row *Row) []byte {
	switch c {
	case 0:
		return strconv.AppendInt(b, int64(row.RequestID), 10)
	case 1:
		return strconv.AppendInt(b, int64(row.PromptTokens), 10)
	case 2:
		return strconv.AppendInt(b, int64(row.OutputTokens), 10)
	case 3:
		return appendNumber(b, row.QueueWaitMs)
	case 4:
		return appendNumber(b, row.PrefillMs)
	case 5:
		return appendNumber(b, row.DecodeTPOTMs)
	case 6:
		return strconv.AppendBool(b, row.Preempted)
	case 7:
		return appendNumber(b, row.RecomputePenaltyMs)
	case 8:
		return strconv.AppendInt(b, row.PrefixCachedTokens, 10)
	case 9:
		return appendNumber(b, row.KVOccupancyPct)
	case 10:
		return appendNumber(b, row.ArrivalS)
	case 11:
		return appendNumber(b, row.TTFTMs)
	case 12:
		return appendNumber(b, row.E2EMs)
	}
	return strconv.AppendInt(b, int64(row.Replica), 10)
}

// appendNumber appends x (finite) as encoding/json writes a float64: the
// shortest decimal that reads back as x, with an exponent only below 1e-6
// or from 1e21.
func appendNumber(b []byte, x float64) []byte {
	format := byte('f')
	if abs := math.Abs(x); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, x, format, -1, 64)
}
