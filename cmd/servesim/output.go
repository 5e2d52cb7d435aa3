package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/figure"
	"servesim/internal/jsonout"
	"servesim/internal/outfile"
	"servesim/internal/profile"
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
	write, err := jsonWriter(v)
	if err != nil {
		return err
	}
	return encodingFailure(writeResult(s, out, write))
}

// jsonWriter returns the write function of v as JSON, as writeJSON writes
// it: a streamable document encoded while it is written, any other
// encoded now (an encoding failure is an internal error).
func jsonWriter(v any) (func(io.Writer) error, error) {
	if jsonout.Streamable(reflect.TypeOf(v)) {
		return func(w io.Writer) error { return jsonout.Stream(w, v) }, nil
	}
	chunks, err := jsonout.Chunks(v)
	if err != nil {
		return nil, encodingFailure(err)
	}
	return chunksWriter(chunks), nil
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
//
// It also refuses two outputs that name one file (checkDistinctOutputs):
// it is the check every command passes once its flags are checked.
func checkStdoutOpen(cmd *cobra.Command) error {
	if err := checkDistinctOutputs(cmd); err != nil {
		return err
	}
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
	data, err := o.render(fig)
	if err != nil {
		return err
	}
	return writeTarget("--plot", o.Path, chunksWriter([][]byte{data}))
}

// stage renders fig as write does and stages it in set; without a path it
// does nothing.
func (o plotOptions) stage(set *outputSet, fig figure.Figure) error {
	if o.Path == "" {
		return nil
	}
	data, err := o.render(fig)
	if err != nil {
		return set.abandon(err)
	}
	return set.target("--plot", o.Path, chunksWriter([][]byte{data}))
}

// render draws fig in the format of the path's extension.
func (o plotOptions) render(fig figure.Figure) ([]byte, error) {
	format, err := figure.Format(o.Path)
	if err != nil {
		return nil, usageError(err)
	}
	data, err := fig.Render(format)
	if err != nil {
		return nil, internalError(fmt.Errorf("drawing %s: %w", o.Path, err))
	}
	return data, nil
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

// stage stages the log of a run in set (atomically, like -o), and the
// stderr line saying how many unfinished requests it leaves out, printed
// once set commits. log builds the log; it is called only when
// --request-log is given.
func (o *requestLogOptions) stage(set *outputSet, log func() (*reqlog.Log, error)) error {
	if o.Path == "" {
		return nil
	}
	l, err := log()
	if err != nil {
		return set.abandon(internalError(err))
	}
	if err := set.target("--request-log", o.Path, func(w io.Writer) error { return l.Write(w, o.format) }); err != nil {
		return err
	}
	if l.Unfinished > 0 {
		set.notes = append(set.notes, fmt.Sprintf("servesim: --request-log %s: %d of %d requests left out: unfinished when the run ended",
			o.Path, l.Unfinished, l.Completed+l.Unfinished))
	}
	return nil
}

// namedOutput is a file a command writes and the flag that names it.
type namedOutput struct {
	flag, path string
}

// String is how messages name the output: "-o run.json".
func (o namedOutput) String() string { return o.flag + " " + o.path }

// outputsOf lists the files cmd's flags make it write: -o, --plot,
// --request-log, calibrate's --out-gpu, --out-profile and the manifest
// beside it, bench's --save-result when its file name is given. Standard
// output ("" or "-") is left out.
func outputsOf(cmd *cobra.Command) []namedOutput {
	value := func(name string) string {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	outs := []namedOutput{
		{"-o", value("output")}, {"--plot", value("plot")}, {"--request-log", value("request-log")},
		{"--out-gpu", value("out-gpu")}, {"--out-profile", value("out-profile")},
	}
	if csv := value("out-profile"); csv != "" && csv != "-" {
		outs = append(outs, namedOutput{"--out-profile's manifest", profile.ManifestPath(csv)})
	}
	if value("save-result") == "true" && value("result-filename") != "" {
		outs = append(outs, namedOutput{"--save-result", filepath.Join(value("result-dir"), value("result-filename"))})
	}
	given := outs[:0]
	for _, o := range outs {
		if o.path != "" && o.path != "-" {
			given = append(given, o)
		}
	}
	return given
}

// checkDistinctOutputs refuses (a usage error) two outputs of cmd that
// name one file, compared as files, not strings (outfile.SameFile: the
// same device and inode, or the same resolved path of a file not there
// yet), since one would replace the other. The message names both flags.
func checkDistinctOutputs(cmd *cobra.Command) error {
	outs := outputsOf(cmd)
	for i, o := range outs {
		for _, first := range outs[:i] {
			if !outfile.SameFile(first.path, o.path) {
				continue
			}
			if first.path == o.path {
				return usageErrorf("%s: %s writes that file already", o, first.flag)
			}
			return usageErrorf("%s: %s writes that file already (as %s)", o, first.flag, first.path)
		}
	}
	return nil
}

// outputSet holds the outputs of one run, so that they appear together or
// not at all: each regular file is staged (written completely to its
// temporary file, outfile.Stage) and renamed into place only by commit,
// once every output is written; a failure discards the staged ones. A
// device, FIFO or stream (stdout among them) cannot be staged: it
// receives its output when the output is written, so a set writes its
// result (-o, often stdout) last.
type outputSet struct {
	s      *streams
	staged []*outfile.Staged
	names  []string // "--plot fig.svg" for each staged output
	notes  []string // stderr lines to print once the outputs are in place
	made   []string // folders made for the outputs, the deepest last: removed, when empty, if the set does not commit
}

// newOutputSet returns an empty set writing to the streams s.
func newOutputSet(s *streams) *outputSet { return &outputSet{s: s} }

// target stages the output of write to the file that flag names (as
// writeTarget writes it, but not yet renamed into place). On a failure
// every staged output is discarded, and the error names the flag, the
// path and the outputs written directly already, if any.
func (set *outputSet) target(flag, path string, write func(io.Writer) error) error {
	st, err := outfile.Stage(path, write)
	if err != nil {
		return set.fail(fmt.Errorf("%s %w", flag, err))
	}
	set.staged = append(set.staged, st)
	set.names = append(set.names, namedOutput{flag, path}.String())
	return nil
}

// result writes the result to standard output, or stages it to out.Path,
// as writeResult does.
func (set *outputSet) result(out outputOptions, write func(io.Writer) error) error {
	if out.Path == "" || out.Path == "-" {
		if err := writeStdout(set.s, write); err != nil {
			return set.fail(err)
		}
		return nil
	}
	return set.target("-o", out.Path, write)
}

// finish writes the result last, as writeDocument writes it (table() for
// --format table, else doc as JSON), then commits the set.
func (set *outputSet) finish(out outputOptions, format string, doc any, table func() string) error {
	var write func(io.Writer) error
	if format == "table" {
		write = chunksWriter([][]byte{[]byte(table())})
	} else {
		var err error
		if write, err = jsonWriter(doc); err != nil {
			return set.abandon(err)
		}
	}
	if err := set.result(out, write); err != nil {
		return encodingFailure(err)
	}
	return set.commit()
}

// fail discards the staged outputs and returns err, adding which outputs
// went to a device, FIFO or stream already (those cannot be taken back).
func (set *outputSet) fail(err error) error {
	var written []string
	for i, st := range set.staged {
		if st.InPlace() {
			written = append(written, set.names[i])
		}
	}
	set.abandon(nil)
	if len(written) > 0 {
		return fmt.Errorf("%w (written already: %s)", err, strings.Join(written, ", "))
	}
	return err
}

// abandon discards the staged outputs, for a run that fails before its
// last output, and returns err.
func (set *outputSet) abandon(err error) error {
	outfile.DiscardAll(set.staged)
	set.staged, set.names, set.notes = nil, nil, nil
	set.removeMade()
	return err
}

// removeMade removes the folders made for the outputs that are still
// empty, the deepest first.
func (set *outputSet) removeMade() {
	for i := len(set.made) - 1; i >= 0; i-- {
		_ = os.Remove(set.made[i]) // a folder that holds a file stays
	}
	set.made = nil
}

// commit renames every staged output into place, then prints the notes.
// A rename that fails part-way says which outputs were written and which
// were not (outfile.CommitError).
func (set *outputSet) commit() error {
	err := outfile.CommitAll(set.staged, set.names)
	notes := set.notes
	set.staged, set.names, set.notes = nil, nil, nil
	if err != nil {
		set.removeMade()
		return err
	}
	set.made = nil
	for _, note := range notes {
		fmt.Fprintln(set.s.Err, note)
	}
	return nil
}
