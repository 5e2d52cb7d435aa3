package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"reflect"

	"github.com/spf13/cobra"

	"servesim/internal/figure"
	"servesim/internal/jsonout"
	"servesim/internal/outfile"
	"servesim/internal/reqlog"
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

// writeDocument writes table() for --format table, else doc as JSON
// (writeJSON).
func writeDocument(s *streams, out outputOptions, format string, doc any, table func() string) error {
	if format == "table" {
		return writeBytes(s, out, []byte(table()))
	}
	return writeJSON(s, out, doc)
}

// encodingFailure marks a *jsonout.EncodeError as an internal error: a
// result servesim built that it cannot write.
func encodingFailure(err error) error {
	var encErr *jsonout.EncodeError
	if errors.As(err, &encErr) {
		return internalError(err)
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
// would be lost. The Go runtime puts /dev/null open for reading and
// writing in a closed stream's place, which is also what Python's
// subprocess.DEVNULL passes: the two cannot be told apart, so the message
// names both and the way to discard a result on purpose. A write error is an error too, except a pipe closed by its
// reader (`| head`), which ends the process quietly with SIGPIPE as the Go
// runtime does by default.
func writeStdout(s *streams, write func(io.Writer) error) error {
	if s.OutClosed {
		return errStdoutClosed
	}
	if err := write(s.Out); err != nil {
		if pathErr, ok := err.(*fs.PathError); ok {
			err = pathErr.Err // "no space left on device", not "write /dev/stdout: ..."
		}
		return fmt.Errorf("stdout: %w", err)
	}
	return nil
}

// errStdoutClosed is the error of a result bound for a stdout closed at
// start.
var errStdoutClosed = errors.New("stdout is closed (or is /dev/null open for reading and writing, as Python's subprocess.DEVNULL passes it): the result has nowhere to go (give -o FILE; -o /dev/null discards it)")

// stdoutClosedKey marks the context of a command run while stdout was
// closed at start (runCommands).
type stdoutClosedKey struct{}

// checkStdoutOpen fails cmd, once its flags are checked and before it does
// any work, when its result (its -o flag unset or -) would go to a stdout
// closed at start: writeStdout would say so only after a run of any
// length, or after starting an exec controller.
func checkStdoutOpen(cmd *cobra.Command) error {
	if closed, _ := cmd.Context().Value(stdoutClosedKey{}).(bool); !closed {
		return nil
	}
	if f := cmd.Flags().Lookup("output"); f != nil && (f.Value.String() == "" || f.Value.String() == "-") {
		return withExitCode(errStdoutClosed, exitInput)
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
		return usageError(err)
	}
	data, err := fig.Render(format)
	if err != nil {
		return internalError(fmt.Errorf("drawing %s: %w", o.Path, err))
	}
	return writeTarget("--plot", o.Path, chunksWriter([][]byte{data}))
}

// requestLogOptions is simulate's --request-log.
type requestLogOptions struct {
	Path   string        // --request-log: the log file; empty for none
	format reqlog.Format // set by check, from the extension
}

// addRequestLogFlag binds --request-log to o.
func addRequestLogFlag(cmd *cobra.Command, o *requestLogOptions) {
	cmd.Flags().StringVar(&o.Path, "request-log", "", "also write one line per completed request to `FILE` (.csv or .jsonl), in the columns that servesim diagnose reads")
}

// check requires a .csv or .jsonl file other than -o's (usage errors).
func (o *requestLogOptions) check(output outputOptions) error {
	if o.Path == "" {
		return nil
	}
	format, err := reqlog.FormatOf(o.Path)
	if err != nil {
		return usageErrorf("--request-log %v", err)
	}
	if o.Path == output.Path {
		return usageErrorf("--request-log %q: -o writes the result to that file already", o.Path)
	}
	o.format = format
	return nil
}

// write writes the log of a run to --request-log (atomically, like -o)
// and says in one stderr line how many unfinished requests it leaves out.
// log builds the log; it is called only when --request-log is given.
func (o *requestLogOptions) write(s *streams, log func() (*reqlog.Log, error)) error {
	if o.Path == "" {
		return nil
	}
	l, err := log()
	if err != nil {
		return internalError(err)
	}
	if err := writeTarget("--request-log", o.Path, func(w io.Writer) error { return l.Write(w, o.format) }); err != nil {
		return err
	}
	if l.Unfinished > 0 {
		fmt.Fprintf(s.Err, "servesim: --request-log %s: %d of %d requests left out: unfinished when the run ended\n",
			o.Path, l.Unfinished, l.Completed+l.Unfinished)
	}
	return nil
}
