package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/jsonout"
)

// newSweepMergeCmd builds `servesim sweep merge`.
func newSweepMergeCmd(s *streams) *cobra.Command {
	var out outputOptions
	cmd := &cobra.Command{
		Use:   "merge FILE...",
		Short: "Join the outputs of a sweep's shards into the output of the whole grid",
		Long: `merge reads the JSON Lines outputs of the shards of one sweep (or their
FILE.partial files, or any mix), checks that every record belongs to the same
grid (grid_sha256) and that together they hold every cell of the grid exactly
once, and writes the records in grid order followed by the Pareto record,
recomputed over the whole grid: byte for byte the output of one sweep run of
the whole grid. The shards' own Pareto records are left out.

A missing or repeated cell is an error (exit 1) listing them as ranges; so is
a failed run, as for sweep, after the output is written.`,
		Example: `  servesim sweep merge shard-*.jsonl -o sweep.jsonl`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("sweep merge: expected the sweep output files to join")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, files []string) error { return mergeSweep(s, out, files) },
	}
	addOutputFlag(cmd, &out)
	return cmd
}

// mergeSweep joins the records of files into the output of their grid.
func mergeSweep(s *streams, out outputOptions, files []string) error {
	x, err := indexRecords(files, s.Err, func(r *runLine) error {
		_, err := r.paretoRun() // checked now, so that the output is never cut short
		return err
	})
	if err != nil {
		return inputError{err}
	}
	defer x.close()
	if len(x.refs) == 0 {
		return inputError{fmt.Errorf("sweep merge: no run record in %s", strings.Join(files, ", "))}
	}
	if err := x.checkCovers(); err != nil {
		return inputError{err}
	}
	failed := 0
	err = writeResult(s, out, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		var pareto paretoTracker
		var line []byte
		for _, ref := range x.refs {
			var rec *runLine
			var err error
			if line, rec, err = x.read(ref, line[:0]); err != nil {
				return err
			}
			p, err := rec.paretoRun()
			if err != nil {
				return fmt.Errorf("%s: %w", x.where(ref), err)
			}
			pareto.Add(p)
			if rec.failed {
				failed++
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		line, err := jsonout.AppendLine(line[:0], pareto.json())
		if err != nil {
			return internalError{fmt.Errorf("encoding the Pareto record: %w", err)}
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return inputError{fmt.Errorf("%d of %d runs failed (see their records' error)", failed, len(x.refs))}
	}
	return nil
}

// maxListedRanges bounds the ranges of cells an error lists.
const maxListedRanges = 20

// checkCovers checks that the records hold every cell of the grid exactly
// once, else lists the cells missing and those found more than once.
func (x *recordIndex) checkCovers() error {
	var missing, repeated []cellRange
	next := 0 // the first cell not seen yet
	for k, ref := range x.refs {
		if k > 0 && ref.cell == x.refs[k-1].cell {
			repeated = addCells(repeated, ref.cell, ref.cell)
			continue
		}
		if ref.cell > next {
			missing = addCells(missing, next, ref.cell-1)
		}
		next = ref.cell + 1
	}
	if next < x.cells {
		missing = addCells(missing, next, x.cells-1)
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d missing (cells %s)", countCells(missing), formatRanges(missing, maxListedRanges)))
	}
	if len(repeated) > 0 {
		problems = append(problems, fmt.Sprintf("%d more than once (cells %s)", countCells(repeated), formatRanges(repeated, maxListedRanges)))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("sweep merge: the files do not hold each of the grid's %d cells once: %s", x.cells, strings.Join(problems, "; "))
}
