package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"reflect"

	"github.com/spf13/cobra"

	"servesim/internal/jsonout"
	"servesim/internal/outfile"
)

// outputOptions is the destination every subcommand writes its result to.
type outputOptions struct {
	// Path is the file to write; empty or "-" means standard output.
	Path string
}

// addOutputFlag binds -o/--output to opts.
func addOutputFlag(cmd *cobra.Command, opts *outputOptions) {
	cmd.Flags().StringVarP(&opts.Path, "output", "o", "", "write the result to this file instead of stdout (a regular file atomically; a device or FIFO directly)")
}

// writeJSON writes v as JSON (package jsonout: indented, trailing newline,
// NaN and infinities as null). A document whose type cannot fail to encode
// (jsonout.Streamable) is written while it is encoded, through one small
// buffer; any other is encoded completely first, so an encoding failure
// writes nothing. Either way a regular file given with -o appears only
// when complete. An encoding failure is an internal error.
func writeJSON(s *streams, out outputOptions, v any) error {
	if jsonout.Streamable(reflect.TypeOf(v)) {
		return encodingFailure(writeResult(s, out, func(w io.Writer) error { return jsonout.Stream(w, v) }))
	}
	chunks, err := jsonout.Chunks(v)
	if err != nil {
		return encodingFailure(err)
	}
	return writeBytes(s, out, chunks...)
}

// encodingFailure marks a *jsonout.EncodeError as an internal error: a
// result servesim built that it cannot write.
func encodingFailure(err error) error {
	var encErr *jsonout.EncodeError
	if errors.As(err, &encErr) {
		return internalError{err}
	}
	return err
}

// writeBytes writes a finished result, given as consecutive chunks, to
// standard output or to out.Path.
func writeBytes(s *streams, out outputOptions, chunks ...[]byte) error {
	return writeResult(s, out, chunksWriter(chunks))
}

// writeResult runs write on standard output, or on the file out.Path names
// (see writeTarget).
func writeResult(s *streams, out outputOptions, write func(io.Writer) error) error {
	if out.Path == "" || out.Path == "-" {
		return writeStdout(s, write)
	}
	return writeTarget("-o", out.Path, write)
}

// writeStdout runs write on standard output. A stdout that was closed when
// servesim started is an error before anything is written: the result
// would be lost. A write error is an error too, except a pipe closed by its
// reader (`| head`), which ends the process quietly with SIGPIPE as the Go
// runtime does by default.
func writeStdout(s *streams, write func(io.Writer) error) error {
	if s.OutClosed {
		return errors.New("stdout is closed: the result has nowhere to go (give -o FILE)")
	}
	if err := write(s.Out); err != nil {
		if pathErr, ok := err.(*fs.PathError); ok {
			err = pathErr.Err // "no space left on device", not "write /dev/stdout: ..."
		}
		return fmt.Errorf("stdout: %w", err)
	}
	return nil
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

// writeTarget writes the output of write to the file that flag (-o or
// --plot) names, as package outfile writes each kind of file: a regular
// file atomically, keeping its mode; a device, FIFO or /dev/stdout
// directly. Errors name the flag and the path.
func writeTarget(flag, path string, write func(io.Writer) error) error {
	if err := outfile.Write(path, write); err != nil {
		return fmt.Errorf("%s %w", flag, err)
	}
	return nil
}
