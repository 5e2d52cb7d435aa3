package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"servesim/internal/reqlog"
)

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
		return internalError{err}
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
