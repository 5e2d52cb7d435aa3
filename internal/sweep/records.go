package sweep

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

	"servesim/internal/jsonout"
)

// MaxRecordBytes bounds one line of a sweep output read back (--resume,
// sweep merge): a run record takes a few kilobytes.
const MaxRecordBytes = 1 << 20

// RawMember is one member of a JSON object read back, its value as written.
type RawMember struct {
	Key   string
	Value json.RawMessage
}

// RunLine is a run record read back from a sweep's JSON Lines output.
type RunLine struct {
	Cell      int
	Grid      string      // grid_sha256
	GridCells int         // grid_cells
	Axes      []RawMember // the axis values, in axis order
	Members   []RawMember // every member, in order
	Failed    bool        // the run has an error
}

// Member returns the value of the record's member key.
func (r *RunLine) Member(key string) json.RawMessage {
	for _, m := range r.Members {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// ParseObject reads one JSON object, keeping its members in order and
// their values as written.
func ParseObject(data []byte) ([]RawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("expected a JSON object")
	}
	var members []RawMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var m RawMember
		m.Key = tok.(string) // inside an object every token here is a key
		if err := dec.Decode(&m.Value); err != nil {
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

// RunRecordKeys are the members of a run record, in order, around its
// axis values (which come after the first four).
var RunRecordKeys = []string{"kind", "cell", "grid_sha256", "grid_cells", "trace_sha256", "profile_csv_sha256", "manifest_sha256",
	"ttft_slo_s", "tpot_slo_s", "error", "metrics", "summary", "slo", "mpc_diagnostics"}

// Brief is what a sweep's Pareto record and table write of a run.
type Brief struct {
	Record jsonout.Object // the run in the Pareto record
	Label  string         // the run in the table: its axis values but profile and trace
}

// errNotRun marks a line that is a sweep's final Pareto record, which
// readers of run records skip.
var errNotRun = errors.New("a Pareto record")

// ParseRunLine reads a line of a sweep's JSON Lines output: a run record
// (whose members must be those Record.JSON writes, in its order), or
// the final Pareto record (errNotRun).
func ParseRunLine(line []byte) (*RunLine, error) {
	members, err := ParseObject(line)
	if err != nil {
		return nil, err
	}
	if len(members) > 0 && members[0].Key == "kind" && string(members[0].Value) == `"pareto"` {
		return nil, errNotRun
	}
	head := RunRecordKeys[:4]
	tail := RunRecordKeys[4:]
	if len(members) < len(RunRecordKeys) || string(members[0].Value) != `"run"` ||
		!keysAre(members[:4], head) || !keysAre(members[len(members)-len(tail):], tail) {
		return nil, fmt.Errorf("expected a sweep run record with the members %s, the axis values after %s",
			strings.Join(RunRecordKeys, ", "), head[3])
	}
	r := &RunLine{Members: members, Axes: members[4 : len(members)-len(tail)]}
	if err := json.Unmarshal(members[1].Value, &r.Cell); err != nil || r.Cell < 0 {
		return nil, fmt.Errorf("cell %s: expected a cell index", members[1].Value)
	}
	if err := json.Unmarshal(members[2].Value, &r.Grid); err != nil || len(r.Grid) != 64 {
		return nil, fmt.Errorf("grid_sha256 %s: expected a SHA-256 in hex", members[2].Value)
	}
	if err := json.Unmarshal(members[3].Value, &r.GridCells); err != nil || r.Cell >= r.GridCells {
		return nil, fmt.Errorf("grid_cells %s: expected a number of cells above the cell index %d", members[3].Value, r.Cell)
	}
	r.Failed = string(r.Member("error")) != "null"
	return r, nil
}

// keysAre reports whether the members have the keys, in order.
func keysAre(members []RawMember, keys []string) bool {
	for i, m := range members {
		if m.Key != keys[i] {
			return false
		}
	}
	return true
}

// ParetoRun is the record as the Pareto record sees it, from the values
// as written: the same numbers, and the same bytes in the Pareto record,
// as the run that wrote it gave.
func (r *RunLine) ParetoRun() (ParetoRun[Brief], error) {
	p := ParetoRun[Brief]{Cell: r.Cell}
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
	profile, trace := r.Axis(AxisProfile), r.Axis(AxisTrace)
	if profile == nil || trace == nil {
		return p, errors.New("expected the profile and trace axes")
	}
	p.Profile, p.Trace = text(profile), text(trace)
	if slo := r.Member("ttft_slo_s"); string(slo) != "null" {
		p.TTFTSLOSeconds = number(slo)
	}
	if slo := r.Member("tpot_slo_s"); string(slo) != "null" {
		p.TPOTSLOSeconds = number(slo)
	}
	metrics := r.Member("metrics")
	p.OK = string(metrics) != "null"
	if !p.OK || err != nil {
		return p, err
	}
	members, err := ParseObject(metrics)
	if err != nil {
		return p, fmt.Errorf("metrics: %w", err)
	}
	value := func(key string) json.RawMessage {
		for _, m := range members {
			if m.Key == key {
				return m.Value
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
	brief := jsonout.Object{{Key: "cell", Value: r.Cell}}
	for _, a := range r.Axes {
		if !slices.Contains(GroupAxes, a.Key) {
			brief = append(brief, jsonout.Member{Key: a.Key, Value: a.Value})
		}
	}
	p.Data.Record = append(brief,
		jsonout.Member{Key: "energy_per_output_token_j", Value: energy}, jsonout.Member{Key: "p95_ttft_s", Value: ttft},
		jsonout.Member{Key: "p95_tpot_s", Value: tpot}, jsonout.Member{Key: "completed_fraction", Value: completed})
	return p, err
}

// Axis returns the value of the record's named axis, or nil.
func (r *RunLine) Axis(name string) json.RawMessage {
	for _, a := range r.Axes {
		if a.Key == name {
			return a.Value
		}
	}
	return nil
}

// RecordRef locates one run record in the files of a RecordIndex.
type RecordRef struct {
	Cell   int
	file   int32 // index in RecordIndex.files
	Line   int32 // line number, from 1
	offset int64 // where the line starts
	length int32 // the line's bytes, its newline included
}

// RecordIndex locates the run records of some sweep output files by cell,
// so that they can be read back in grid order without being held in
// memory: a few bytes per record.
type RecordIndex struct {
	names []string
	files []*os.File
	Refs  []RecordRef // sorted by cell, then by file and line
	Grid  string      // the grid_sha256 of the first record
	Cells int         // its grid_cells
	// spellings, for a merge, name each profile and trace one way.
	spellings *spellings
}

// IndexRecords reads the run records of the files, checks that each is
// one (the final Pareto record of an output is skipped) and that all are
// of one grid, and indexes them. check, when not nil, vets each record
// further. A last line without its newline (a process killed while it
// wrote it) is left out, with a warning on warn. The files stay open for
// read until close.
func IndexRecords(names []string, warn io.Writer, check func(*RunLine) error) (*RecordIndex, error) {
	x := &RecordIndex{names: names}
	for k, name := range names {
		f, err := os.Open(name)
		if err != nil {
			x.Close()
			if pathErr, ok := err.(*os.PathError); ok {
				err = pathErr.Err // "x.jsonl: no such file or directory", not "open x.jsonl: ..."
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		x.files = append(x.files, f)
		if err := x.scan(int32(k), warn, check); err != nil {
			x.Close()
			return nil, err
		}
	}
	slices.SortFunc(x.Refs, func(a, b RecordRef) int {
		if a.Cell != b.Cell {
			return a.Cell - b.Cell
		}
		if a.file != b.file {
			return int(a.file - b.file)
		}
		return int(a.Line - b.Line)
	})
	return x, nil
}

// scan indexes the records of file k.
func (x *RecordIndex) scan(k int32, warn io.Writer, check func(*RunLine) error) error {
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
		rec, err := ParseRunLine(line)
		if errors.Is(err, errNotRun) {
			continue
		}
		if err == nil && x.Grid == "" {
			x.Grid, x.Cells = rec.Grid, rec.GridCells
		}
		if err == nil && check != nil {
			err = check(rec)
		}
		if err == nil && rec.Grid != x.Grid {
			err = fmt.Errorf("cell %d is of another grid than %s line %d (grid_sha256 %.12s..., not %.12s...)",
				rec.Cell, x.names[x.Refs[0].file], x.Refs[0].Line, rec.Grid, x.Grid)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
		x.Refs = append(x.Refs, RecordRef{Cell: rec.Cell, file: k, Line: n, offset: start, length: int32(len(line))})
	}
}

// readLine appends the next line of r, its newline included, to buf; a
// line longer than MaxRecordBytes is an error.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxRecordBytes {
			return buf, fmt.Errorf("a line of more than %d bytes: not a sweep record", MaxRecordBytes)
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// Read returns the line of ref (its newline included, as LF: a CRLF line
// is copied with the newline sweep writes), appended to buf, and the
// record it holds.
func (x *RecordIndex) Read(ref RecordRef, buf []byte) ([]byte, *RunLine, error) {
	start := len(buf)
	buf = slices.Grow(buf, int(ref.length))[:start+int(ref.length)]
	if _, err := x.files[ref.file].ReadAt(buf[start:], ref.offset); err != nil {
		return buf, nil, fmt.Errorf("%s line %d: %w", x.names[ref.file], ref.Line, err)
	}
	if bytes.HasSuffix(buf[start:], []byte("\r\n")) {
		buf = append(buf[:len(buf)-2], '\n')
	}
	rec, err := ParseRunLine(buf[start:])
	if err == nil && rec.Cell != ref.Cell {
		err = errors.New("the file changed while it was read")
	}

	if err != nil {
		return buf, nil, fmt.Errorf("%s line %d: %w", x.names[ref.file], ref.Line, err)
	}
	return buf, rec, nil
}

// Where names the place of a record: "FILE line N".
func (x *RecordIndex) Where(ref RecordRef) string {
	return fmt.Sprintf("%s line %d", x.names[ref.file], ref.Line)
}

// Close closes the files.
func (x *RecordIndex) Close() {
	for _, f := range x.files {
		f.Close()
	}
}

// CellRange is the cells lo to hi, both included.
type CellRange struct{ lo, hi int }

// AddCells adds the cells lo to hi to the ranges rs, sorted, joining a
// range that continues the last one.
func AddCells(rs []CellRange, lo, hi int) []CellRange {
	if n := len(rs); n > 0 && rs[n-1].hi+1 >= lo {
		rs[n-1].hi = max(rs[n-1].hi, hi)
		return rs
	}
	return append(rs, CellRange{lo, hi})
}

// FormatRanges writes ranges of cells compactly: "3-5, 9". At most limit
// ranges are listed; the rest are counted.
func FormatRanges(rs []CellRange, limit int) string {
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

// CountCells is the number of cells in the ranges.
func CountCells(rs []CellRange) int {
	n := 0
	for _, r := range rs {
		n += r.hi - r.lo + 1
	}
	return n
}

// maxListedRanges bounds the ranges of cells an error lists.
const maxListedRanges = 20

// CheckCovers checks that the records hold every cell of the grid exactly
// once, else lists the cells missing and those found more than once.
func (x *RecordIndex) CheckCovers() error {
	var missing, repeated []CellRange
	next := 0 // the first cell not seen yet
	for k, ref := range x.Refs {
		if k > 0 && ref.Cell == x.Refs[k-1].Cell {
			repeated = AddCells(repeated, ref.Cell, ref.Cell)
			continue
		}
		if ref.Cell > next {
			missing = AddCells(missing, next, ref.Cell-1)
		}
		next = ref.Cell + 1
	}
	if next < x.Cells {
		missing = AddCells(missing, next, x.Cells-1)
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d missing (cells %s)", CountCells(missing), FormatRanges(missing, maxListedRanges)))
	}
	if len(repeated) > 0 {
		problems = append(problems, fmt.Sprintf("%d more than once (cells %s)", CountCells(repeated), FormatRanges(repeated, maxListedRanges)))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("sweep merge: the files do not hold each of the grid's %d cells once: %s", x.Cells, strings.Join(problems, "; "))
}

// ParetoRecord is a sweep's final JSON Lines record: per profile and trace,
// the objectives, the Pareto front and the best run under the SLOs.
func ParetoRecord(p *Pareto[Brief]) jsonout.Object {
	groups := p.Groups()
	out := make([]jsonout.Object, len(groups))
	for i, g := range groups {
		members := g.Front()
		front := make([]jsonout.Object, len(members))
		for j, r := range members {
			front[j] = r.Data.Record
		}
		var best any
		if g.Best != nil {
			best = g.Best.Data.Record
		}
		out[i] = jsonout.Object{{Key: "profile", Value: g.Profile}, {Key: "trace", Value: g.Trace}, {Key: "ttft_slo_s", Value: nullIfZero(g.TTFTSLOSeconds)}, {Key: "tpot_slo_s", Value: nullIfZero(g.TPOTSLOSeconds)}, {Key: "pareto_front", Value: front}, {Key: "best_under_slo", Value: best}}
	}
	return jsonout.Object{{Key: "kind", Value: "pareto"}, {Key: "x", Value: "energy_per_output_token_j"}, {Key: "y", Value: "p95_ttft_s"}, {Key: "groups", Value: out}}
}

// nullIfZero is x, or nil (null) for 0: an objective not given.
func nullIfZero(x float64) any {
	if x == 0 {
		return nil
	}
	return x
}
