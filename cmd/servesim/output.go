package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"

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

// writeJSON writes v as JSON (jsonEncoder's indented layout, trailing
// newline, NaN and infinities as null). A document whose type cannot fail to encode
// (streamable) is written while it is encoded, through one small buffer;
// any other is encoded completely first, so an encoding failure writes
// nothing. Either way a file given with -o appears only when complete.
func writeJSON(s *streams, out outputOptions, v any) error {
	if streamable(reflect.TypeOf(v)) {
		return writeResult(s, out, func(w io.Writer) error { return streamJSON(w, v) })
	}
	chunks, err := encodeJSONChunks(v)
	if err != nil {
		return internalError{fmt.Errorf("encoding result: %w", err)}
	}
	return writeBytes(s, out, chunks...)
}

// writeBytes writes a finished result, given as consecutive chunks, to
// standard output or atomically to out.Path.
func writeBytes(s *streams, out outputOptions, chunks ...[]byte) error {
	return writeResult(s, out, chunksWriter(chunks))
}

// writeResult runs write on standard output, or on a temporary file in the
// folder of out.Path that is renamed into place once write succeeds.
func writeResult(s *streams, out outputOptions, write func(io.Writer) error) error {
	if out.Path == "" || out.Path == "-" {
		return write(s.Out)
	}
	return writeFileAtomic(out.Path, write)
}

// chunksWriter writes the chunks in order, with one system call where the
// writer allows it.
func chunksWriter(chunks [][]byte) func(io.Writer) error {
	return func(w io.Writer) error {
		buffers := net.Buffers(chunks)
		_, err := buffers.WriteTo(w)
		return err
	}
}

// writeFileAtomic runs write on a temporary file next to path and renames it
// to path, so readers never see a partial file and a failure leaves no file
// behind.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	tmpName := tmp.Name()
	werr := write(tmp)
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
