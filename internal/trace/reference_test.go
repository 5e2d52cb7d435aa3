package trace

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/workload"
)

// This file holds the slow reference paths the readers are fuzzed
// against: the rules of each format written the obvious way, with
// encoding/csv, encoding/json, regular expressions and strconv, on the
// whole text at once. They share nothing with the readers but the
// ISO 8601 parser (plant's, itself checked against Python).

// refResult is what a reference path makes of a trace: the requests, the
// skip counts and the hash ids, or the line of the error (0 for an error
// about the whole input).
type refResult struct {
	requests []workload.Request
	skipped  map[string]int
	hashIDs  [][]int64
	errLine  int
	err      error
}

// refError is an error at a line.
func refError(line int, format string, args ...any) refResult {
	return refResult{errLine: line, err: fmt.Errorf(format, args...)}
}

var (
	refDecimal = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	refInteger = regexp.MustCompile(`^[+-]?[0-9]+$`)
	refJSONInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
)

// refRows collects rows the way every format's rules say: sorted times,
// ids from 0, arrivals from the first kept row, the elapsed limit.
type refRows struct {
	maxElapsedS float64
	res         refResult
	n           int
	prev, first int64
	start       int64
	prevZone    bool
	started     bool
}

// time records a row's time; false with res.err set when it is out of
// order.
func (r *refRows) time(line int, us int64, zone bool) bool {
	if r.n == 0 {
		r.start = us
	}
	if r.n > 0 && (zone != r.prevZone || us < r.prev || us-r.start > 1<<53) {
		r.res = refError(line, "out of order, mixed zones or too late")
		return false
	}
	r.n++
	r.prev, r.prevZone = us, zone
	return true
}

func (r *refRows) skip(reason string) {
	if r.res.skipped == nil {
		r.res.skipped = map[string]int{}
	}
	r.res.skipped[reason]++
}

func (r *refRows) keep(prompt, output int64, ids []int64) {
	if !r.started {
		r.first, r.started = r.prev, true
	}
	elapsed := float64(r.prev-r.first) / 1e6
	if elapsed > r.maxElapsedS+workload.TimeEpsilonS {
		return
	}
	r.res.requests = append(r.res.requests, workload.Request{ID: len(r.res.requests), ArrivalTimeS: elapsed, PromptTokens: int(prompt), OutputTokens: int(output)})
	r.res.hashIDs = append(r.res.hashIDs, ids)
}

func (r *refRows) done() refResult {
	switch {
	case r.res.err != nil:
		return r.res
	case r.n == 0:
		return refError(0, "no rows")
	case len(r.res.requests) == 0:
		return refError(0, "no request kept")
	}
	return r.res
}

// refNUL is the input caps' NUL rule: the line of the first NUL byte.
func refNUL(text string) (int, bool) {
	i := strings.IndexByte(text, 0)
	return strings.Count(text[:max(i, 0)], "\n") + 1, i >= 0
}

// refMicros reads a time in unit u as whole microseconds.
func refMicros(text string, u TimeUnit) (int64, bool, error) {
	if u == ISO {
		t, zone, err := workload.ParseISOTimestamp(text)
		return t.UnixMicro(), zone, err
	}
	s := strings.Trim(text, " \t")
	if !refDecimal.MatchString(s) {
		return 0, false, errors.New("not a decimal")
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, err
	}
	scale := map[TimeUnit]float64{Seconds: 1e6, Milliseconds: 1e3, Microseconds: 1}[u]
	us := math.Round(x * scale)
	if math.IsInf(x, 0) || math.Abs(us) > 1<<53 {
		return 0, false, errors.New("out of range")
	}
	return int64(us), false, nil
}

// refCSV reads a CSV trace: a header, then rows; columns are the arrival,
// prompt and output columns, then the model and log type columns when the
// filter tests them.
func refCSV(text string, columns [5]string, unit TimeUnit, filter Filter, skipZeroOutput bool, maxElapsedS float64) refResult {
	if line, ok := refNUL(text); ok {
		return refError(line, "NUL")
	}
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	// read returns the next record and its line; the error result is set
	// for a syntax error.
	read := func() ([]string, int, *refResult) {
		record, err := r.Read()
		if err == io.EOF {
			return nil, 0, nil
		}
		if err != nil {
			var parseErr *csv.ParseError
			errors.As(err, &parseErr)
			res := refError(parseErr.StartLine, "%v", err)
			return nil, 0, &res
		}
		line, _ := r.FieldPos(0)
		return record, line, nil
	}
	header, headerLine, failed := read()
	if failed != nil {
		return *failed
	}
	if header == nil {
		return refError(0, "empty")
	}
	used := []bool{true, true, true, len(filter.Models) > 0, len(filter.LogTypes) > 0}
	var index [5]int
	for c, name := range columns {
		index[c] = -1
		for i, h := range header {
			if h == name {
				index[c] = i
			}
		}
		if used[c] && index[c] < 0 {
			return refError(headerLine, "missing column %s", name)
		}
	}
	rows := refRows{maxElapsedS: maxElapsedS}
	for {
		record, line, failed := read()
		if failed != nil {
			return *failed
		}
		if record == nil {
			break
		}
		var values [5]string
		for c := range columns {
			if !used[c] {
				continue
			}
			if index[c] >= len(record) {
				return refError(line, "missing field")
			}
			values[c] = record[index[c]]
		}
		us, zone, err := refMicros(values[0], unit)
		if err != nil || !rows.time(line, us, zone) {
			return refError(line, "time")
		}
		var counts [2]int64
		for k := range counts {
			s := strings.Trim(values[1+k], " \t")
			n, err := strconv.ParseInt(s, 10, 64)
			if !refInteger.MatchString(s) || err != nil || n < 0 {
				return refError(line, "count")
			}
			counts[k] = n
		}
		modelOK := len(filter.Models) == 0 || slices.Contains(filter.Models, values[3])
		logOK := len(filter.LogTypes) == 0 || slices.Contains(filter.LogTypes, values[4])
		switch {
		case !modelOK || !logOK:
			rows.skip(SkipFiltered)
		case skipZeroOutput && counts[1] == 0:
			rows.skip(SkipFailedResponse)
		case counts[0] == 0 || counts[1] == 0:
			return refError(line, "zero count")
		default:
			rows.keep(counts[0], counts[1], nil)
		}
	}
	res := rows.done()
	res.hashIDs = nil
	return res
}

// refMooncake reads Mooncake JSON Lines.
func refMooncake(text string, maxElapsedS float64) refResult {
	if line, ok := refNUL(text); ok {
		return refError(line, "NUL")
	}
	rows := refRows{maxElapsedS: maxElapsedS}
	for i, raw := range strings.Split(text, "\n") {
		line := i + 1
		if strings.Trim(raw, " \t\r") == "" {
			continue
		}
		var object map[string]json.RawMessage
		if !strings.HasPrefix(strings.TrimLeft(raw, " \t\r"), "{") || json.Unmarshal([]byte(raw), &object) != nil {
			return refError(line, "not a JSON object")
		}
		stamp, ok := object[keyTimestamp]
		if !ok || !strings.ContainsAny(string(stamp[:1]), "-0123456789") {
			return refError(line, "timestamp")
		}
		ms, err := strconv.ParseFloat(string(stamp), 64)
		us := math.Round(ms * 1e3)
		if err != nil || math.Abs(us) > 1<<53 || !rows.time(line, int64(us), false) {
			return refError(line, "timestamp")
		}
		var lengths [2]int64
		for k, key := range []string{keyInput, keyOutput} {
			raw, ok := object[key]
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if !ok || !refJSONInt.Match(raw) || err != nil || n <= 0 {
				return refError(line, "%s", key)
			}
			lengths[k] = n
		}
		var ids []int64
		if raw, ok := object[keyHashIDs]; ok {
			var elements []json.RawMessage
			if raw[0] != '[' || json.Unmarshal(raw, &elements) != nil {
				return refError(line, "hash_ids")
			}
			ids = []int64{}
			for _, e := range elements {
				id, err := strconv.ParseInt(string(e), 10, 64)
				if !refJSONInt.Match(e) || err != nil {
					return refError(line, "hash_ids")
				}
				ids = append(ids, id)
			}
		}
		rows.keep(lengths[0], lengths[1], ids)
	}
	return rows.done()
}
