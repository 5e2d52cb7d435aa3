package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"iter"

	"servesim/internal/jsonout"
)

// Output formats of a sweep.
const (
	FormatJSONL = "jsonl" // one run record per line, then the Pareto record
	FormatCSV   = "csv"   // a header, then one row per run
	FormatTable = "table" // an aligned table of the runs and the Pareto section
)

// Writer writes a sweep's records in a format as they come, with the
// records resumed from a file (--resume) in their places, and keeps what
// the end of the output needs: the Pareto fronts and best runs, and for
// FormatTable the records themselves (a table's columns are as wide as
// their widest cell, so nothing is written before the last run).
type Writer struct {
	// Written counts the records written (or kept, for a table); Failed
	// those of runs that failed, FirstFailed the first of them in grid
	// order.
	Written, Failed int
	FirstFailed     FirstFailure

	format    string
	grid      *Grid
	gridSHA   string // grid_sha256
	gridCells int    // grid_cells
	out       io.Writer
	csv       *csv.Writer
	table     []Record
	pareto    Pareto[Brief]
	resumed   *RecordIndex // nil without --resume
	next      int          // the next of resumed.Refs to write
	line      []byte
}

// NewWriter starts the output on out, each record one Write: the CSV
// header (axes keyed by key(axis)), for FormatCSV. gridSHA256 and
// gridCells identify the grid in every record; resumed, when not nil,
// holds records of cells that are not run again.
func NewWriter(out io.Writer, format string, grid *Grid, key func(axis string) string, gridSHA256 string, gridCells int, resumed *RecordIndex) (*Writer, error) {
	w := &Writer{format: format, grid: grid, gridSHA: gridSHA256, gridCells: gridCells, out: out, resumed: resumed}
	if format == FormatCSV {
		w.csv = csv.NewWriter(out)
		if err := w.writeCSV(CSVHeader(grid.Axes, key)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Add writes the record of a run, after the resumed records that come
// before it in grid order.
func (w *Writer) Add(r Record) error {
	if err := w.resumedBefore(r.Cell.Index); err != nil {
		return err
	}
	var err error
	switch w.format {
	case FormatCSV:
		err = w.writeCSV(r.CSVRow())
	case FormatTable:
		w.table = append(w.table, r)
	default:
		if w.line, err = jsonout.AppendLine(w.line[:0], r.JSON(w.gridSHA, w.gridCells)); err != nil {
			return fmt.Errorf("encoding a record: %w", err)
		}
		_, err = w.out.Write(w.line)
	}
	if err != nil {
		return err
	}
	w.count(r.Err != nil)
	if r.Err != nil {
		w.FirstFailed.Note(r.Cell.Index, r.Err.Error())
	}
	w.pareto.Add(r.ParetoRun(w.grid))
	return nil
}

// writeCSV writes one CSV row at once.
func (w *Writer) writeCSV(row []string) error {
	if err := w.csv.Write(row); err != nil {
		return err
	}
	w.csv.Flush()
	return w.csv.Error()
}

func (w *Writer) count(failed bool) {
	w.Written++
	if failed {
		w.Failed++
	}
}

// resumedBefore copies the resumed records of the cells before cell, as
// they were written but for their profile and trace paths, which are
// this sweep's (the record may spell the same file another way: its
// content was checked).
func (w *Writer) resumedBefore(cell int) error {
	if w.resumed == nil {
		return nil
	}
	for ; w.next < len(w.resumed.Refs) && w.resumed.Refs[w.next].Cell < cell; w.next++ {
		ref := w.resumed.Refs[w.next]
		var rec *RunLine
		var err error
		if w.line, rec, err = w.resumed.Read(ref, w.line[:0]); err != nil {
			return err
		}
		var out []byte
		if out, rec, err = Respell(w.line, rec, w.paths(ref.Cell)); err != nil {
			return fmt.Errorf("%s: %w", w.resumed.Where(ref), err)
		}
		p, err := rec.ParetoRun()
		if err != nil {
			return fmt.Errorf("%s: %w", w.resumed.Where(ref), err)
		}
		if _, err := w.out.Write(out); err != nil {
			return err
		}
		w.count(rec.Failed)
		w.FirstFailed.noteRecord(rec)
		w.pareto.Add(p)
	}
	return nil
}

// paths are the profile and trace paths of this grid's cell, as a record
// writes them.
func (w *Writer) paths(cell int) map[string]json.RawMessage {
	c := cellAt(w.grid.Axes, cell)
	values := make(map[string]json.RawMessage, len(PathAxes))
	for _, pa := range PathAxes {
		if !w.grid.Has(pa.Axis) {
			continue
		}
		line, err := jsonout.AppendLine(nil, w.grid.Text(c, pa.Axis))
		if err == nil {
			values[pa.Axis] = json.RawMessage(line[:len(line)-1])
		}
	}
	return values
}

// Finish writes what follows the last run: the resumed records after it
// and, when the sweep is complete, the Pareto record (JSON Lines) or the
// table with its Pareto section; the table of an interrupted sweep has
// its rows only.
func (w *Writer) Finish(complete bool) error {
	if err := w.resumedBefore(w.gridCells); err != nil {
		return err
	}
	switch {
	case w.format == FormatTable:
		pareto := &w.pareto
		if !complete {
			pareto = nil
		}
		_, err := w.out.Write([]byte(Table(w.grid.Axes, w.table, pareto)))
		return err
	case w.format == FormatJSONL && complete:
		line, err := jsonout.AppendLine(w.line[:0], ParetoRecord(&w.pareto))
		if err != nil {
			return fmt.Errorf("encoding the Pareto record: %w", err)
		}
		_, err = w.out.Write(line)
		return err
	}
	return nil
}

// Without yields the cells of the shard in grid order, less those of
// resumed (nil: none).
func (s Shard) Without(resumed *RecordIndex) iter.Seq[Cell] {
	return func(yield func(Cell) bool) {
		k := 0
		for index := s.Lo; index < s.Hi; index++ {
			if resumed != nil {
				for k < len(resumed.Refs) && resumed.Refs[k].Cell < index {
					k++
				}
				if k < len(resumed.Refs) && resumed.Refs[k].Cell == index {
					continue
				}
			}
			if !yield(s.Cell(index)) {
				return
			}
		}
	}
}
