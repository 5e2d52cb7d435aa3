package sweep

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"servesim/internal/jsonout"
)

// OpenMerge indexes the run records of the sweep outputs files (the
// shards' outputs, their FILE.partial files, any mix) to be merged: every
// record's Pareto values are checked now, so that the merged output is
// never cut short, and together the records must hold every cell of one
// grid exactly once (CheckCovers). A profile or trace the shards spelled
// differently (a relative path and an absolute one, another mount) is
// named throughout as the records of its lowest cell name it
// (WriteMerged).
func OpenMerge(files []string, warn io.Writer) (*RecordIndex, error) {
	spelled := newSpellings()
	x, err := IndexRecords(files, warn, func(r *RunLine) error {
		_, err := r.ParetoRun()
		spelled.add(r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(x.Refs) == 0 {
		x.Close()
		return nil, fmt.Errorf("sweep merge: no run record in %s", strings.Join(files, ", "))
	}
	if err := x.CheckCovers(); err != nil {
		x.Close()
		return nil, err
	}
	spelled.settle(x.Cells)
	x.spellings = spelled
	return x, nil
}

// FailedRuns is the error of a sweep output of total runs of which failed
// failed, written whole; nil when none did. It names the first in grid
// order and its error ("...; the first, cell 3: trace x.csv: open x.csv:
// no such file or directory"), and hint, when not empty, follows.
func FailedRuns(failed, total int, first FirstFailure, hint string) error {
	if failed == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d runs failed (see their records' error)", failed, total)
	if first.set {
		msg += fmt.Sprintf("; the first, cell %d: %s", first.Cell, first.Err)
	}
	if hint != "" {
		msg += " " + hint
	}
	return errors.New(msg)
}

// WriteMerged writes the indexed records to w in grid order, followed by
// the Pareto record recomputed over all of them: byte for byte the output
// of one sweep of the whole grid. It returns how many of the runs failed
// and the first of them.
func (x *RecordIndex) WriteMerged(w io.Writer) (failed int, first FirstFailure, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var pareto Pareto[Brief]
	var line []byte
	for _, ref := range x.Refs {
		var rec *RunLine
		if line, rec, err = x.Read(ref, line[:0]); err != nil {
			return failed, first, err
		}
		out := line
		if x.spellings != nil {
			if values := x.spellings.of(rec); values != nil {
				if out, rec, err = Respell(line, rec, values); err != nil {
					return failed, first, fmt.Errorf("%s: %w", x.Where(ref), err)
				}
			}
		}
		p, err := rec.ParetoRun()
		if err != nil {
			return failed, first, fmt.Errorf("%s: %w", x.Where(ref), err)
		}
		pareto.Add(p)
		if rec.Failed {
			failed++
			first.noteRecord(rec)
		}
		if _, err := bw.Write(out); err != nil {
			return failed, first, err
		}
	}
	if line, err = jsonout.AppendLine(line[:0], ParetoRecord(&pareto)); err != nil {
		return failed, first, fmt.Errorf("encoding the Pareto record: %w", err)
	}
	if _, err := bw.Write(line); err != nil {
		return failed, first, err
	}
	return failed, first, bw.Flush()
}
