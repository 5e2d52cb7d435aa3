package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// outputOptions is the destination every subcommand writes its result to.
type outputOptions struct {
	// Path is the file to write; empty or "-" means standard output.
	Path string
}

// addOutputFlag binds -o/--output to opts.
func addOutputFlag(cmd *cobra.Command, opts *outputOptions) {
	cmd.Flags().StringVarP(&opts.Path, "output", "o", "", "write the result to this file (atomically) instead of stdout")
}

// writeJSON encodes v completely (two-space indent, trailing newline, NaN and
// infinities as null) and only then writes it, so a failure leaves nothing.
func writeJSON(s *streams, out outputOptions, v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return internalError{fmt.Errorf("encoding result: %w", err)}
	}
	return writeBytes(s, out, data)
}

// writeBytes writes a finished result to standard output or atomically to
// out.Path: a temporary file in the same folder is renamed into place.
func writeBytes(s *streams, out outputOptions, data []byte) error {
	if out.Path == "" || out.Path == "-" {
		_, err := s.Out.Write(data)
		return err
	}
	return writeFileAtomic(out.Path, data)
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so readers never see a partial file and a failure leaves no file behind.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	tmpName := tmp.Name()
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmpName, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmpName, path)
	}
	if werr != nil {
		os.Remove(tmpName)
		return fmt.Errorf("output %s: %w", path, werr)
	}
	return nil
}

// marshalJSON is the one JSON encoding of results: indented, then a
// newline.
func marshalJSON(v any) ([]byte, error) {
	data, err := appendJSON(make([]byte, 0, 1<<20), v)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
