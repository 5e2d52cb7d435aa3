package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/trace"
)

// traceOptions are the flags that say how to read a trace, the same in
// every command that reads one (simulate, sweep, capacity, scenarios and
// the trace commands).
type traceOptions struct {
	Format   string   // --trace-format; empty detects the format
	Filter   []string // --trace-filter terms
	Columns  []string // --trace-columns terms
	TimeUnit string   // --time-unit
	// Options are the flags parsed, set before the command runs.
	Options trace.Options
}

// traceFlagNames are the flags addTraceFlags defines.
var traceFlagNames = []string{"trace-format", "trace-filter", "trace-columns", "time-unit"}

// addTraceFlags binds the trace flags to o and checks them together
// before cmd runs (a usage error when they contradict each other, or when
// cmd has a --trace flag that was not given).
func addTraceFlags(cmd *cobra.Command, o *traceOptions) {
	f := cmd.Flags()
	f.StringVar(&o.Format, "trace-format", "", "trace format: azure, burstgpt, mooncake or csv (default: detected from the first line)")
	cliflag.AddList(cmd, &o.Filter, "trace-filter", nil, "filter terms model=NAME or log-type=NAME",
		"keep the BurstGPT rows with these values: model=NAME, log-type=NAME (same key: any value; different keys: both)")
	cliflag.AddList(cmd, &o.Columns, "trace-columns", nil, "column terms arrival=COL, prompt=COL, output=COL",
		"read a CSV log by its header's column names: arrival=COL,prompt=COL,output=COL (implies --trace-format csv)")
	f.StringVar(&o.TimeUnit, "time-unit", string(trace.Seconds), "unit of the --trace-columns arrival column: s, ms, us or iso (ISO 8601 date-times)")
	_ = cmd.RegisterFlagCompletionFunc("trace-format", cliflag.Choices(formatNames(trace.Formats)))
	_ = cmd.RegisterFlagCompletionFunc("time-unit", cliflag.Choices([]string{"s", "ms", "us", "iso"}))
	check := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(cmd, args); err != nil {
				return err
			}
		}
		return o.parse(cmd)
	}
}

// parse turns the trace flags into o.Options.
func (o *traceOptions) parse(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if path := cmd.Flags().Lookup("trace"); path != nil && !path.Changed {
		for _, name := range traceFlagNames {
			if changed(name) {
				return usageErrorf("--%s applies to a trace file: give it with --trace", name)
			}
		}
	}
	var opt trace.Options
	if o.Format != "" {
		format, err := trace.ParseFormat(o.Format)
		if err != nil {
			return usageErrorf("--trace-format %q: expected azure, burstgpt, mooncake or csv", o.Format)
		}
		opt.Format = format
	}
	if len(o.Filter) > 0 {
		filter, err := trace.ParseFilter(o.Filter)
		if err != nil {
			return usageErrorf("--trace-filter: %v", err)
		}
		opt.Filter = filter
	}
	unit, err := trace.ParseTimeUnit(o.TimeUnit)
	if err != nil {
		return usageErrorf("--time-unit %q: expected s, ms, us or iso", o.TimeUnit)
	}
	if len(o.Columns) > 0 {
		columns, err := trace.ParseColumns(o.Columns)
		if err != nil {
			return usageErrorf("--trace-columns: %v", err)
		}
		columns.Unit = unit
		opt.Columns = &columns
	} else if changed("time-unit") {
		return usageErrorf("--time-unit applies to a CSV log read by --trace-columns")
	}
	if err := opt.Check(); err != nil {
		return usageErrorf("%s", traceOptionMessage(err))
	}
	o.Options = opt
	return nil
}

// traceOptionMessage names the flag of a trace.OptionError.
func traceOptionMessage(err error) string {
	var e *trace.OptionError
	if errors.As(err, &e) {
		flag := map[string]string{trace.OptionFilter: "--trace-filter", trace.OptionColumns: "--trace-columns"}[e.Option]
		return fmt.Sprintf("%s %s", flag, e.Reason)
	}
	return err.Error()
}

// formatNames are the names of formats.
func formatNames(formats []trace.Format) []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return names
}

// loadTraceFile reads the trace at path ("-" is stdin) as o says.
func loadTraceFile(s *streams, path string, maxElapsedS float64, o *traceOptions) (plant.Workload, error) {
	t, err := openTrace(s, path, maxElapsedS, o)
	if err != nil {
		return plant.Workload{}, err
	}
	return t.Workload, nil
}

// openTrace reads the trace at path ("-" is stdin) as o says.
func openTrace(s *streams, path string, maxElapsedS float64, o *traceOptions) (*trace.Trace, error) {
	in, name, err := openInput(path, s)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	defer in.Close()
	return trace.Load(in, name, maxElapsedS, o.Options)
}

// readTrace reads the trace in as o says; name is what errors and the
// provenance call it.
func readTrace(in io.Reader, name string, maxElapsedS float64, o *traceOptions) (plant.Workload, error) {
	t, err := trace.Load(in, name, maxElapsedS, o.Options)
	if err != nil {
		return plant.Workload{}, err
	}
	return t.Workload, nil
}
