package sweep

import (
	"encoding/json"
	"fmt"

	"servesim/internal/jsonout"
	"servesim/internal/limits"
)

// A sweep's grid is identified by the contents of its profiles and traces,
// not by how their paths are spelled (grid_sha256): the shards of one grid
// may name the same trace data/code.csv and /home/me/data/code.csv, or
// /traces/code.csv on another mount. A record still names the path its run
// was given (its profile and trace axis values), so that a sweep's output is
// what its flags say; the readers of records that join them into one output
// (--resume, sweep merge) name each profile and trace one way throughout,
// as one process would have: Respell rewrites a record's paths.

// PathAxes are the axes whose values are paths, and the record members
// holding the SHA-256 of what the path held (null when it did not load):
// two records of one grid whose values differ only in spelling have the
// same content there.
var PathAxes = []struct {
	Axis    string   // the axis, which is also its record key
	Content []string // the members that identify the file's content
}{
	{AxisProfile, []string{"profile_csv_sha256", "manifest_sha256"}},
	{AxisTrace, []string{"trace_sha256"}},
}

// pathContent is the content of a record's path axis: the raw values of
// its content members joined, or "" when the input did not load (null):
// such a record is never respelled.
func (r *RunLine) pathContent(members []string) string {
	content := ""
	for _, m := range members {
		v := r.Member(m)
		if v == nil || string(v) == "null" {
			return ""
		}
		content += string(v) + " "
	}
	return content
}

// Respell returns line, the record r, with the values of its axes given in
// values (key: the axis; value: the value as JSON) written in place of its
// own, and the record the new line holds; line itself when nothing
// changes. Every other member keeps the bytes it had.
func Respell(line []byte, r *RunLine, values map[string]json.RawMessage) ([]byte, *RunLine, error) {
	changed := false
	obj := make(jsonout.Object, len(r.Members))
	for i, m := range r.Members {
		v := m.Value
		if i >= 4 && i < 4+len(r.Axes) {
			if nv, ok := values[m.Key]; ok && string(nv) != string(v) {
				v, changed = nv, true
			}
		}
		obj[i] = jsonout.Member{Key: m.Key, Value: v}
	}
	if !changed {
		return line, r, nil
	}
	out, err := jsonout.AppendLine(nil, obj)
	if err != nil {
		return line, r, fmt.Errorf("cell %d: rewriting its paths: %w", r.Cell, err)
	}
	nr, err := ParseRunLine(out)
	if err != nil {
		return line, r, fmt.Errorf("cell %d: rewriting its paths: %w", r.Cell, err)
	}
	return out, nr, nil
}

// spellings picks, for each profile and trace content of a merge, the
// path the records of the lowest cell give it: the merged output names it
// so throughout, as the sweep of that cell's shard would have.
//
// Content names a path unambiguously only when no two values of its axis
// hold the same file (a grid given two copies of one trace keeps both
// names): a merge holds every cell of its grid, so the axes' value counts
// multiply to grid_cells, and when the path axes counted by content (the
// others by value) still do, every value has content of its own. Else
// nothing is respelled.
type spellings struct {
	// first is, by axis and content, the cell and the spelling of the
	// lowest cell seen.
	first map[string]spelling
	// distinct is, by axis, the values seen (for a path axis, the
	// contents; the spelling of an input that did not load).
	distinct map[string]map[string]bool
	// off is set when content does not name each path (see above).
	off bool
}

type spelling struct {
	cell  int
	value json.RawMessage
}

func newSpellings() *spellings {
	return &spellings{first: map[string]spelling{}, distinct: map[string]map[string]bool{}}
}

// add notes the axis values of a record.
func (s *spellings) add(r *RunLine) {
	for _, a := range r.Axes {
		value := string(a.Value)
		for _, pa := range PathAxes {
			if pa.Axis != a.Key {
				continue
			}
			if content := r.pathContent(pa.Content); content != "" {
				value = content
				key := pa.Axis + " " + content
				if f, ok := s.first[key]; !ok || r.Cell < f.cell {
					s.first[key] = spelling{r.Cell, a.Value}
				}
			}
		}
		if s.distinct[a.Key] == nil {
			s.distinct[a.Key] = map[string]bool{}
		}
		s.distinct[a.Key][value] = true
	}
}

// settle decides, once every record of a grid of cells has been added,
// whether content names each path.
func (s *spellings) settle(cells int) {
	product := 1
	for _, values := range s.distinct {
		product *= len(values)
		if product > cells {
			break
		}
	}
	s.off = product != cells
}

// of returns the spellings record r is to have, nil when it has them.
func (s *spellings) of(r *RunLine) map[string]json.RawMessage {
	if s.off {
		return nil
	}
	var values map[string]json.RawMessage
	for _, pa := range PathAxes {
		content := r.pathContent(pa.Content)
		value := r.Axis(pa.Axis)
		if content == "" || value == nil {
			continue
		}
		f, ok := s.first[pa.Axis+" "+content]
		if !ok || string(f.value) == string(value) {
			continue
		}
		if values == nil {
			values = map[string]json.RawMessage{}
		}
		values[pa.Axis] = f.value
	}
	return values
}

// FirstFailure keeps the first failed run of an output in grid order, for
// the message that counts them (FailedRuns).
type FirstFailure struct {
	Cell int
	Err  string // the record's error
	set  bool
}

// Note notes a failed run of cell; the first in grid order is kept.
func (f *FirstFailure) Note(cell int, err string) {
	if !f.set || cell < f.Cell {
		f.Cell, f.Err, f.set = cell, limits.OneLine(err), true
	}
}

// noteRecord notes the run of a record read back, when it failed.
func (f *FirstFailure) noteRecord(r *RunLine) {
	if !r.Failed {
		return
	}
	var msg string
	if err := json.Unmarshal(r.Member("error"), &msg); err != nil {
		msg = string(r.Member("error"))
	}
	f.Note(r.Cell, msg)
}
