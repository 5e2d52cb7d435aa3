package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"servesim/internal/figure"
)

// plotOptions is the optional figure a command draws besides its result.
type plotOptions struct {
	// Path is the .png or .svg file to write; empty means no figure.
	Path string
}

// addPlotFlag binds --plot to opts.
func addPlotFlag(cmd *cobra.Command, opts *plotOptions) {
	cmd.Flags().StringVar(&opts.Path, "plot", "", "also draw a figure into this .png or .svg file (atomically)")
}

// check rejects a plot path whose extension names no supported format.
func (o plotOptions) check() error {
	if o.Path == "" {
		return nil
	}
	if _, err := figure.Format(o.Path); err != nil {
		return usageErrorf("--plot %q: expected a .png or .svg extension", o.Path)
	}
	return nil
}

// write renders fig in the format of the path's extension and writes it
// as writeTarget does; without a path it does nothing.
func (o plotOptions) write(fig figure.Figure) error {
	if o.Path == "" {
		return nil
	}
	format, err := figure.Format(o.Path)
	if err != nil {
		return usageError{err}
	}
	data, err := fig.Render(format)
	if err != nil {
		return internalError{fmt.Errorf("drawing %s: %w", o.Path, err)}
	}
	return writeTarget("--plot", o.Path, chunksWriter([][]byte{data}))
}
