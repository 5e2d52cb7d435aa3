package main

import (
	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/trace"
)

// addTraceFlags binds the trace flags to o and parses them together
// before cmd runs (a usage error when they contradict each other, or when
// cmd has a --trace flag that was not given).
func addTraceFlags(cmd *cobra.Command, o *trace.Flags) {
	f := cmd.Flags()
	f.StringVar(&o.Format, "trace-format", "", "trace format: azure, burstgpt, mooncake or csv (default: detected from the first line)")
	cliflag.AddList(cmd, &o.Filter, "trace-filter", nil, "filter terms model=NAME or log-type=NAME",
		"keep the BurstGPT rows with these values: model=NAME, log-type=NAME (same key: any value; different keys: both)")
	cliflag.AddList(cmd, &o.Columns, "trace-columns", nil, "column terms arrival=COL, prompt=COL, output=COL",
		"read a CSV log by its header's column names: arrival=COL,prompt=COL,output=COL (implies --trace-format csv)")
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
