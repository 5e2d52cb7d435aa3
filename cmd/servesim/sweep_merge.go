package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"servesim/internal/sweep"
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
	x, err := sweep.OpenMerge(files, s.Err)
	if err != nil {
		return inputError{err}
	}
	defer x.Close()
	failed := 0
	err = writeResult(s, out, func(w io.Writer) (err error) {
		failed, err = x.WriteMerged(w)
		return err
	})
	if err != nil {
		return encodingFailure(err)
	}
	if failed > 0 {
		return inputError{fmt.Errorf("%d of %d runs failed (see their records' error)", failed, len(x.Refs))}
	}
	return nil
}
