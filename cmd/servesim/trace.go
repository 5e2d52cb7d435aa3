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
		Short: "Describe an arrival trace, convert it to a canonical format, or write a synthetic one",
		Long:  help("trace"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError(cliflag.UnknownCommand(cmd, args[0], ": expected stats, convert or synth"))
		},
	}
	cmd.SuggestionsMinimumDistance = 2 // cobra's distance for the root's commands
	cmd.AddCommand(newTraceStatsCmd(s, statsF), newTraceConvertCmd(s, convertF), newTraceSynthCmd(s, nil))
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
	return writeDocument(s, o.Output, o.Format, &stats, stats.Table)
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

// addTraceFlags binds the trace flags to o and parses them together
// before cmd runs (a usage error when they contradict each other, or when
// cmd has a --trace flag that was not given).
func addTraceFlags(cmd *cobra.Command, o *trace.Flags) {
	f := cmd.Flags()
	f.StringVar(&o.Format, "trace-format", "", "trace format: azure, burstgpt, mooncake or csv (default: detected from the first line)")
	cliflag.AddList(cmd, &o.Filter, "trace-filter", nil, "filter terms model=NAME or log-type=NAME",
		"keep the BurstGPT rows with these values: model=NAME, log-type=NAME (same key: any value; different keys: both)")
	cliflag.AddList(cmd, &o.Columns, "trace-columns", nil, "column terms arrival=COL, prompt=COL, output=COL",
		"read a CSV log by its header's column names: arrival=COL,prompt=COL,output=COL, and session=COL for the session (conversation) of each request, which --router session keeps together (implies --trace-format csv)")
	f.StringVar(&o.TimeUnit, "time-unit", string(trace.Seconds), "unit of the --trace-columns arrival column: s, ms, us or iso (ISO 8601 date-times)")
	_ = cmd.RegisterFlagCompletionFunc("trace-format", cliflag.Choices(trace.FormatNames(trace.Formats)))
	_ = cmd.RegisterFlagCompletionFunc("time-unit", cliflag.Choices([]string{"s", "ms", "us", "iso"}))
	check := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(cmd, args); err != nil {
				return err
			}
		}
		changed := cmd.Flags().Changed
		if path := cmd.Flags().Lookup("trace"); path != nil && !path.Changed {
			for _, name := range trace.FlagNames {
				if changed(name) {
					return usageErrorf("--%s applies to a trace file: give it with --trace", name)
				}
			}
		}
		return asUsage(o.Parse(changed("time-unit")))
	}
}

// openTrace reads the whole trace at path ("-" is stdin) as o says.
func openTrace(s *streams, path string, maxElapsedS float64, o *trace.Flags) (*trace.Trace, error) {
	return (&trace.Source{Path: path, Stdin: s.In, MaxElapsedS: maxElapsedS, Options: o.Options}).Load()
}
