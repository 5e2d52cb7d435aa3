package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/trace"
)

// parseTrace runs `servesim trace ARGS` with the subcommands' runs
// replaced: it returns the options stats or convert would have run with.
func parseTrace(t *testing.T, args ...string) (*traceStatsOptions, *traceConvertOptions, int, string) {
	t.Helper()
	var stats *traceStatsOptions
	var convert *traceConvertOptions
	subs := []subcommand{{"trace", func(s *streams) *cobra.Command {
		return newTraceCmd(s,
			func(o *traceStatsOptions) error { stats = o; return nil },
			func(o *traceConvertOptions) error { convert = o; return nil })
	}}}
	s, _, errOut := testStreams("")
	code := runCommands(context.Background(), append([]string{"trace"}, args...), s, subs)
	return stats, convert, code, errOut.String()
}

func TestTraceFlagsAreParsedTogether(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want trace.Options
	}{
		{nil, trace.Options{}},
		{[]string{"--trace-format", "mooncake"}, trace.Options{Format: trace.Mooncake}},
		{[]string{"--trace-filter", "model=GPT-4", "--trace-filter", `"log-type=a,b"`},
			trace.Options{Filter: trace.Filter{Models: []string{"GPT-4"}, LogTypes: []string{"a,b"}}}},
		{[]string{"--trace-columns", "arrival=t, prompt=p,output=o", "--time-unit", "iso"},
			trace.Options{Columns: &trace.Columns{Arrival: "t", Prompt: "p", Output: "o", Unit: trace.ISO}}},
		{[]string{"--trace-format", "csv", "--trace-columns", "arrival=t,prompt=p,output=o"},
			trace.Options{Format: trace.CSV, Columns: &trace.Columns{Arrival: "t", Prompt: "p", Output: "o", Unit: trace.Seconds}}},
	}
	for _, tt := range tests {
		o, code, stderr := parseSimulate(t, append([]string{"--trace", "x.csv"}, tt.args...)...)
		require.Equal(t, exitOK, code, "%q: %s", tt.args, stderr)
		assert.Equal(t, tt.want, o.Trace.Options, "%q", tt.args)
	}
}

func TestTraceFlagUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--trace-format", "parquet"}, `--trace-format "parquet": expected azure, burstgpt, mooncake or csv`},
		{[]string{"--trace-filter", "Model=x"}, `--trace-filter: filter term "Model=x": unknown key "Model": expected model or log-type`},
		{[]string{"--trace-filter", "gpt"}, `--trace-filter: filter term "gpt": expected KEY=VALUE with KEY model or log-type`},
		{[]string{"--trace-filter", `a"b`}, `--trace-filter "a\"b": expected a comma-separated list of filter terms`},
		{[]string{"--trace-columns", "arrival=a"}, "--trace-columns: no prompt=COL: name the arrival, prompt and output columns"},
		{[]string{"--trace-columns", "arrival=a,prompt=b,output=c", "--time-unit", "min"}, `--time-unit "min": expected s, ms, us or iso`},
		{[]string{"--time-unit", "ms"}, "--time-unit applies to a CSV log read by --trace-columns"},
		{[]string{"--trace-format", "csv"}, "--trace-columns is required for a csv log: name its arrival, prompt and output columns"},
		{[]string{"--trace-format", "mooncake", "--trace-filter", "model=a"}, "--trace-filter applies to burstgpt traces, not mooncake"},
		{[]string{"--trace-format", "azure", "--trace-columns", "arrival=a,prompt=b,output=c"}, "--trace-columns names the columns of a csv log, not of a azure trace"},
	}
	for _, tt := range tests {
		_, code, stderr := parseSimulate(t, append([]string{"--trace", "x.csv"}, tt.args...)...)
		assert.Equal(t, exitUsage, code, "%q", tt.args)
		assert.True(t, strings.HasPrefix(stderr, "servesim: "+tt.want), "%q: %s", tt.args, stderr)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
	}
	// Without --trace the flags have nothing to apply to, in every command
	// that has --trace.
	for _, name := range trace.FlagNames {
		value := map[string]string{"trace-format": "azure", "trace-filter": "model=a", "trace-columns": "arrival=a,prompt=b,output=c", "time-unit": "s"}[name]
		_, code, stderr := parseSimulate(t, "--"+name, value)
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, "servesim: --"+name+" applies to a trace file: give it with --trace\n", stderr)
		_, code, _, _ = parseFlags(t, "capacity", newCapacityCmd, "--"+name, value)
		assert.Equal(t, exitUsage, code)
		_, code, _, _ = parseFlags(t, "scenarios", newScenariosCmd, "--"+name, value)
		assert.Equal(t, exitUsage, code)
		_, code, _, _ = parseFlags(t, "sweep", newSweepCmd, "--"+name, value)
		assert.Equal(t, exitUsage, code)
	}
}

func TestTraceSubcommandFlags(t *testing.T) {
	t.Parallel()
	stats, _, code, stderr := parseTrace(t, "stats", "b.csv")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, &traceStatsOptions{Path: "b.csv", Format: "json", Trace: trace.Flags{TimeUnit: "s"}}, stats)

	stats, _, code, stderr = parseTrace(t, "stats", "--format", "table", "-o", "s.txt", "--trace-filter", "model=GPT-4", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, &traceStatsOptions{Path: "-", Format: "table", Output: outputOptions{Path: "s.txt"},
		Trace: trace.Flags{Filter: []string{"model=GPT-4"}, TimeUnit: "s", Options: trace.Options{Filter: trace.Filter{Models: []string{"GPT-4"}}}}}, stats)

	_, convert, code, stderr := parseTrace(t, "convert", "--to", "mooncake", "--trace-format", "burstgpt", "-o", "m.jsonl", "b.csv")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, &traceConvertOptions{Path: "b.csv", To: "mooncake", Output: outputOptions{Path: "m.jsonl"},
		Trace: trace.Flags{Format: "burstgpt", TimeUnit: "s", Options: trace.Options{Format: trace.BurstGPT}}}, convert)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"stats"}, "servesim trace stats: expected one trace file (or - for stdin), got 0 arguments"},
		{[]string{"stats", "a", "b"}, "servesim trace stats: expected one trace file (or - for stdin), got 2 arguments"},
		{[]string{"stats", "--format", "yaml", "a"}, `--format "yaml": expected json or table`},
		{[]string{"convert", "a"}, "--to is required: azure or mooncake"},
		{[]string{"convert", "--to", "burstgpt", "a"}, `--to "burstgpt": expected azure or mooncake`},
		{[]string{"convert", "--to", "azure"}, "servesim trace convert: expected one trace file"},
		{[]string{"statz", "a"}, `unknown command "statz" for "servesim trace"; did you mean "stats"?`},
		{[]string{"split", "a"}, `unknown command "split" for "servesim trace": expected stats, convert or synth`},
		{[]string{"stats", "--trace-format", "x", "a"}, `--trace-format "x": expected azure, burstgpt, mooncake or csv`},
	} {
		stats, convert, code, stderr := parseTrace(t, tt.args...)
		assert.Nil(t, stats)
		assert.Nil(t, convert)
		assert.Equal(t, exitUsage, code, "%q", tt.args)
		assert.Contains(t, stderr, tt.want, "%q", tt.args)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
	}
}
