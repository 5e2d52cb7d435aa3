package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/sweep"

	"servesim/internal/jsonout"
)

// maxRecordBytes bounds one line of a sweep output read back (--resume,
// sweep merge): a run record takes a few kilobytes.
const maxRecordBytes = 1 << 20

// rawMember is one member of a JSON object read back, its value as written.
type rawMember struct {
	key   string
	value json.RawMessage
}

// runLine is a run record read back from a sweep's JSON Lines output.
type runLine struct {
	cell      int
	grid      string      // grid_sha256
	gridCells int         // grid_cells
	axes      []rawMember // the axis values, in axis order
	members   []rawMember // every member, in order
	failed    bool        // the run has an error
}

// member returns the value of the record's member key.
func (r *runLine) member(key string) json.RawMessage {
	for _, m := range r.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// parseObject reads one JSON object, keeping its members in order and
// their values as written.
func parseObject(data []byte) ([]rawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("expected a JSON object")
	}
	var members []rawMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var m rawMember
		m.key = tok.(string) // inside an object every token here is a key
		if err := dec.Decode(&m.value); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("expected one JSON object on the line")
	}
	return members, nil
}

// errNotRun marks a line that is a sweep's final Pareto record, which
// readers of run records skip.
var errNotRun = errors.New("a Pareto record")

// parseRunLine reads a line of a sweep's JSON Lines output: a run record
// (whose members must be those sweepRecord.json writes, in its order), or
// the final Pareto record (errNotRun).
func parseRunLine(line []byte) (*runLine, error) {
	members, err := parseObject(line)
	if err != nil {
		return nil, err
	}
	if len(members) > 0 && members[0].key == "kind" && string(members[0].value) == `"pareto"` {
		return nil, errNotRun
	}
	head := runRecordKeys[:4]
	tail := runRecordKeys[4:]
	if len(members) < len(runRecordKeys) || string(members[0].value) != `"run"` ||
		!keysAre(members[:4], head) || !keysAre(members[len(members)-len(tail):], tail) {
		return nil, fmt.Errorf("expected a sweep run record with the members %s, the axis values after %s",
			strings.Join(runRecordKeys, ", "), head[3])
	}
	r := &runLine{members: members, axes: members[4 : len(members)-len(tail)]}
	if err := json.Unmarshal(members[1].value, &r.cell); err != nil || r.cell < 0 {
		return nil, fmt.Errorf("cell %s: expected a cell index", members[1].value)
	}
	if err := json.Unmarshal(members[2].value, &r.grid); err != nil || len(r.grid) != 64 {
		return nil, fmt.Errorf("grid_sha256 %s: expected a SHA-256 in hex", members[2].value)
	}
	if err := json.Unmarshal(members[3].value, &r.gridCells); err != nil || r.cell >= r.gridCells {
		return nil, fmt.Errorf("grid_cells %s: expected a number of cells above the cell index %d", members[3].value, r.cell)
	}
	r.failed = string(r.member("error")) != "null"
	return r, nil
}

// keysAre reports whether the members have the keys, in order.
func keysAre(members []rawMember, keys []string) bool {
	for i, m := range members {
		if m.key != keys[i] {
			return false
		}
	}
	return true
}

// paretoRun is the record as the Pareto record sees it, from the values
// as written: the same numbers, and the same bytes in the Pareto record,
// as the run that wrote it gave.
func (r *runLine) paretoRun() (paretoRun, error) {
	p := paretoRun{Cell: r.cell}
	var err error
	text := func(raw json.RawMessage) string {
		var s string
		if err == nil {
			err = json.Unmarshal(raw, &s)
		}
		return s
	}
	number := func(raw json.RawMessage) float64 {
		if string(raw) == "null" {
			return math.NaN() // an undefined metric
		}
		x, perr := strconv.ParseFloat(string(raw), 64)
		if err == nil && perr != nil {
			err = fmt.Errorf("%s: expected a number", raw)
		}
		return x
	}
	profile, trace := r.axis(sweep.AxisProfile), r.axis(sweep.AxisTrace)
	if profile == nil || trace == nil {
		return p, errors.New("expected the profile and trace axes")
	}
	p.Profile, p.Trace = text(profile), text(trace)
	if slo := r.member("ttft_slo_s"); string(slo) != "null" {
		p.TTFTSLOSeconds = number(slo)
	}
	if slo := r.member("tpot_slo_s"); string(slo) != "null" {
		p.TPOTSLOSeconds = number(slo)
	}
	metrics := r.member("metrics")
	p.OK = string(metrics) != "null"
	if !p.OK || err != nil {
		return p, err
	}
	members, err := parseObject(metrics)
	if err != nil {
		return p, fmt.Errorf("metrics: %w", err)
	}
	value := func(key string) json.RawMessage {
		for _, m := range members {
			if m.key == key {
				return m.value
			}
		}
		if err == nil {
			err = fmt.Errorf("metrics: no %s", key)
		}
		return json.RawMessage("null")
	}
	energy, ttft, tpot := value("energy_per_output_token_j"), value("p95_ttft_s"), value("p95_tpot_s")
	completed := value("completed_fraction")
	p.EnergyPerOutputTokenJ, p.P95TTFTS, p.P95TPOTS = number(energy), number(ttft), number(tpot)
	p.UnfinishedRequests = number(value("unfinished_requests_at_end"))
	brief := jsonout.Object{{Key: "cell", Value: r.cell}}
	for _, a := range r.axes {
		if !slices.Contains(sweep.GroupAxes, a.key) {
			brief = append(brief, jsonout.Member{Key: a.key, Value: a.value})
		}
	}
	p.Data.brief = append(brief,
		jsonout.Member{Key: "energy_per_output_token_j", Value: energy}, jsonout.Member{Key: "p95_ttft_s", Value: ttft},
		jsonout.Member{Key: "p95_tpot_s", Value: tpot}, jsonout.Member{Key: "completed_fraction", Value: completed})
	return p, err
}

// axis returns the value of the record's named axis, or nil.
func (r *runLine) axis(name string) json.RawMessage {
	for _, a := range r.axes {
		if a.key == name {
			return a.value
		}
	}
	return nil
}

// recordRef locates one run record in the files of a recordIndex.
type recordRef struct {
	cell   int
	file   int32 // index in recordIndex.files
	line   int32 // line number, from 1
	offset int64 // where the line starts
	length int32 // the line's bytes, its newline included
}

// recordIndex locates the run records of some sweep output files by cell,
// so that they can be read back in grid order without being held in
// memory: a few bytes per record.
type recordIndex struct {
	names []string
	files []*os.File
	refs  []recordRef // sorted by cell, then by file and line
	grid  string      // the grid_sha256 of the first record
	cells int         // its grid_cells
}

// indexRecords reads the run records of the files, checks that each is
// one (the final Pareto record of an output is skipped) and that all are
// of one grid, and indexes them. check, when not nil, vets each record
// further. A last line without its newline (a process killed while it
// wrote it) is left out, with a warning on warn. The files stay open for
// read until close.
func indexRecords(names []string, warn io.Writer, check func(*runLine) error) (*recordIndex, error) {
	x := &recordIndex{names: names}
	for k, name := range names {
		f, err := os.Open(name)
		if err != nil {
			x.close()
			if pathErr, ok := err.(*os.PathError); ok {
				err = pathErr.Err // "x.jsonl: no such file or directory", not "open x.jsonl: ..."
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		x.files = append(x.files, f)
		if err := x.scan(int32(k), warn, check); err != nil {
			x.close()
			return nil, err
		}
	}
	slices.SortFunc(x.refs, func(a, b recordRef) int {
		if a.cell != b.cell {
			return a.cell - b.cell
		}
		if a.file != b.file {
			return int(a.file - b.file)
		}
		return int(a.line - b.line)
	})
	return x, nil
}

// scan indexes the records of file k.
func (x *recordIndex) scan(k int32, warn io.Writer, check func(*runLine) error) error {
	name := x.names[k]
	r := bufio.NewReaderSize(x.files[k], 64<<10)
	var offset int64
	var line []byte
	for n := int32(1); ; n++ {
		var err error
		line, err = readLine(r, line[:0])
		if err == io.EOF && len(line) > 0 {
			fmt.Fprintf(warn, "servesim: warning: %s line %d: the last line has no newline (its run was cut short while it was written); it is left out\n", name, n)
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
		start := offset
		offset += int64(len(line))
		rec, err := parseRunLine(line)
		if errors.Is(err, errNotRun) {
			continue
		}
		if err == nil && x.grid == "" {
			x.grid, x.cells = rec.grid, rec.gridCells
		}
		if err == nil && check != nil {
			err = check(rec)
		}
		if err == nil && rec.grid != x.grid {
			err = fmt.Errorf("cell %d is of another grid than %s line %d (grid_sha256 %.12s..., not %.12s...)",
				rec.cell, x.names[x.refs[0].file], x.refs[0].line, rec.grid, x.grid)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
		x.refs = append(x.refs, recordRef{cell: rec.cell, file: k, line: n, offset: start, length: int32(len(line))})
	}
}

// readLine appends the next line of r, its newline included, to buf; a
// line longer than maxRecordBytes is an error.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxRecordBytes {
			return buf, fmt.Errorf("a line of more than %d bytes: not a sweep record", maxRecordBytes)
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// read returns the line of ref (its newline included), appended to buf,
// and the record it holds.
func (x *recordIndex) read(ref recordRef, buf []byte) ([]byte, *runLine, error) {
	start := len(buf)
	buf = slices.Grow(buf, int(ref.length))[:start+int(ref.length)]
	if _, err := x.files[ref.file].ReadAt(buf[start:], ref.offset); err != nil {
		return buf, nil, fmt.Errorf("%s line %d: %w", x.names[ref.file], ref.line, err)
	}
	rec, err := parseRunLine(buf[start:])
	if err == nil && rec.cell != ref.cell {
		err = errors.New("the file changed while it was read")
	}
	if err != nil {
		return buf, nil, fmt.Errorf("%s line %d: %w", x.names[ref.file], ref.line, err)
	}
	return buf, rec, nil
}

// where names the place of a record: "FILE line N".
func (x *recordIndex) where(ref recordRef) string {
	return fmt.Sprintf("%s line %d", x.names[ref.file], ref.line)
}

// close closes the files.
func (x *recordIndex) close() {
	for _, f := range x.files {
		f.Close()
	}
}

// cellRange is the cells lo to hi, both included.
type cellRange struct{ lo, hi int }

// addCells adds the cells lo to hi to the ranges rs, sorted, joining a
// range that continues the last one.
func addCells(rs []cellRange, lo, hi int) []cellRange {
	if n := len(rs); n > 0 && rs[n-1].hi+1 >= lo {
		rs[n-1].hi = max(rs[n-1].hi, hi)
		return rs
	}
	return append(rs, cellRange{lo, hi})
}

// formatRanges writes ranges of cells compactly: "3-5, 9". At most limit
// ranges are listed; the rest are counted.
func formatRanges(rs []cellRange, limit int) string {
	var parts []string
	for i, r := range rs {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(rs)-limit))
			break
		}
		if r.lo == r.hi {
			parts = append(parts, strconv.Itoa(r.lo))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", r.lo, r.hi))
		}
	}
	return strings.Join(parts, ", ")
}

// countCells is the number of cells in the ranges.
func countCells(rs []cellRange) int {
	n := 0
	for _, r := range rs {
		n += r.hi - r.lo + 1
	}
	return n
}
