package main

import (
	"fmt"
	"io"
	"net"
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
	chunks, err := encodeJSONChunks(v)
	if err != nil {
		return internalError{fmt.Errorf("encoding result: %w", err)}
	}
	return writeBytes(s, out, chunks...)
}

// writeBytes writes a finished result, given as consecutive chunks, to
// standard output or atomically to out.Path: a temporary file in the same
// folder is renamed into place.
func writeBytes(s *streams, out outputOptions, chunks ...[]byte) error {
	if out.Path == "" || out.Path == "-" {
		_, err := writeChunks(s.Out, chunks)
		return err
	}
	return writeFileAtomic(out.Path, chunks...)
}

// writeChunks writes the chunks in order, with one system call where the
// writer allows it.
func writeChunks(w io.Writer, chunks [][]byte) (int64, error) {
	buffers := net.Buffers(chunks)
	return buffers.WriteTo(w)
}

// writeFileAtomic writes the chunks to path through a temporary file and a
// rename, so readers never see a partial file and a failure leaves no file
// behind.
func writeFileAtomic(path string, chunks ...[]byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	tmpName := tmp.Name()
	_, werr := writeChunks(tmp, chunks)
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
