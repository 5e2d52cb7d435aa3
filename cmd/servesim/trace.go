package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/trace"
)

// newTraceCmd builds `servesim trace` and its subcommands; statsF and
// convertF replace their runs for tests of flag parsing.
func newTraceCmd(s *streams, statsF func(*traceStatsOptions) error, convertF func(*traceConvertOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Describe an arrival trace, or convert it to a canonical format",
		Long:  help("trace"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError{cliflag.UnknownCommand(cmd, args[0], ": expected stats or convert")}
		},
	}
	cmd.SuggestionsMinimumDistance = 2 // cobra's distance for the root's commands
	cmd.AddCommand(newTraceStatsCmd(s, statsF), newTraceConvertCmd(s, convertF))
	return cmd
}

// traceStatsOptions are the arguments and flags of `servesim trace stats`.
type traceStatsOptions struct {
	Path   string // the trace file; "-" is stdin
	Trace  trace.Flags
	Format string // "json" or "table"
	Output outputOptions
}

func newTraceStatsCmd(s *streams, runF func(*traceStatsOptions) error) *cobra.Command {
	opts := &traceStatsOptions{Format: "json"}
	cmd := &cobra.Command{
		Use:     "stats [flags] FILE|-",
		Short:   "Describe a trace: format, requests, span, rates, token percentiles",
		Long:    help("trace-stats"),
		Example: help("trace-stats.example"),
		Args:    exactlyOneFile,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			return nil
		}, runF, func(_ context.Context, o *traceStatsOptions) error { return runTraceStats(s, o) }),
	}
	addTraceFlags(cmd, &opts.Trace)
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or table", "json", "table")
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func runTraceStats(s *streams, o *traceStatsOptions) error {
	t, err := openTrace(s, o.Path, plant.NoElapsedLimit, &o.Trace)
	if err != nil {
		return err
	}
	stats := trace.ComputeStats(t)
	if o.Format == "table" {
		return writeBytes(s, o.Output, []byte(stats.Table()))
	}
	return writeJSON(s, o.Output, &stats)
}

// traceConvertOptions are the arguments and flags of `servesim trace
// convert`.
type traceConvertOptions struct {
	Path   string // the trace file; "-" is stdin
	Trace  trace.Flags
	To     string // the format written: azure or mooncake
	Output outputOptions
}

func newTraceConvertCmd(s *streams, runF func(*traceConvertOptions) error) *cobra.Command {
	opts := &traceConvertOptions{}
	cmd := &cobra.Command{
		Use:     "convert --to azure|mooncake [flags] FILE|-",
		Short:   "Write a trace's requests in the Azure or Mooncake format",
		Long:    help("trace-convert"),
		Example: help("trace-convert.example"),
		Args:    exactlyOneFile,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if opts.To == "" {
				return usageErrorf("--to is required: azure or mooncake")
			}
			return nil
		}, runF, func(_ context.Context, o *traceConvertOptions) error { return runTraceConvert(s, o) }),
	}
	addTraceFlags(cmd, &opts.Trace)
	cliflag.AddChoice(cmd, &opts.To, "to", "", "format to write: azure or mooncake (required)", trace.FormatNames(trace.ConvertFormats)...)
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func runTraceConvert(s *streams, o *traceConvertOptions) error {
	t, err := openTrace(s, o.Path, plant.NoElapsedLimit, &o.Trace)
	if err != nil {
		return err
	}
	return writeResult(s, o.Output, func(w io.Writer) error { return trace.Convert(w, t, trace.Format(o.To)) })
}

// exactlyOneFile accepts one argument, the trace file.
func exactlyOneFile(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("%s: expected one trace file (or - for stdin), got %d arguments", cmd.CommandPath(), len(args))
	}
	return nil
}
