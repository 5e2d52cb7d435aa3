package sweep

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"servesim/internal/jsonout"
)

// OpenMerge indexes the run records of the sweep outputs files (the
// shards' outputs, their FILE.partial files, any mix) to be merged: every
// record's Pareto values are checked now, so that the merged output is
// never cut short, and together the records must hold every cell of one
// grid exactly once (CheckCovers).
func OpenMerge(files []string, warn io.Writer) (*RecordIndex, error) {
	x, err := IndexRecords(files, warn, func(r *RunLine) error {
		_, err := r.ParetoRun()
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
	return x, nil
}

// FailedRuns is the error of a sweep output of total runs of which failed
// failed, written whole; nil when none did.
func FailedRuns(failed, total int) error {
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d runs failed (see their records' error)", failed, total)
}

// WriteMerged writes the indexed records to w in grid order, followed by
// the Pareto record recomputed over all of them: byte for byte the output
// of one sweep of the whole grid. It returns how many of the runs failed.
func (x *RecordIndex) WriteMerged(w io.Writer) (failed int, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var pareto Pareto[Brief]
	var line []byte
	for _, ref := range x.Refs {
		var rec *RunLine
		if line, rec, err = x.Read(ref, line[:0]); err != nil {
			return failed, err
		}
		p, err := rec.ParetoRun()
		if err != nil {
			return failed, fmt.Errorf("%s: %w", x.Where(ref), err)
		}
		pareto.Add(p)
		if rec.Failed {
			failed++
		}
		if _, err := bw.Write(line); err != nil {
			return failed, err
		}
	}
	if line, err = jsonout.AppendLine(line[:0], ParetoRecord(&pareto)); err != nil {
		return failed, fmt.Errorf("encoding the Pareto record: %w", err)
	}
	if _, err := bw.Write(line); err != nil {
		return failed, err
	}
	return failed, bw.Flush()
}
