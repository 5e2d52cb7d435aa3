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
		Use:     "merge FILE...",
		Short:   "Join the outputs of a sweep's shards into the output of the whole grid",
		Long:    help("sweep-merge"),
		Example: help("sweep-merge.example"),
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
		return inputError(err)
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
		return inputError(fmt.Errorf("%d of %d runs failed (see their records' error)", failed, len(x.Refs)))
	}
	return nil
}
