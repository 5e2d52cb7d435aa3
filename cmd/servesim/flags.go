package main

import (
	"io"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/runparams"
)

// flagError is every command's flag error function: a usage error naming
// the flag and what it expects (cliflag.ParseError).
func flagError(cmd *cobra.Command, err error) error {
	return usageError(cliflag.ParseError(cmd, err, flagExpectations))
}

// flagName names a setting of a run (runparams.Setting, as the run
// packages report them) as the flag of servesim that sets it: --NAME, and
// -o for the output file.
func flagName(s runparams.Setting) string {
	if s == outputSetting {
		return "-o"
	}
	return "--" + string(s)
}

// outputSetting is the setting of the output file, flag -o.
const outputSetting = runparams.Setting("output")

// flagNamed is err with the settings it names written as flags
// (runparams.Named): "stride 0: ..." from a run package reads
// "--stride 0: ...".
func flagNamed(err error) error { return runparams.Named(err, flagName) }

// flagWarner is stderr w as a run package writes its warnings to it, the
// settings they name worded as flags.
func flagWarner(w io.Writer) runparams.Warner { return runparams.Warner{Writer: w, Name: flagName} }

// flagExpectations describe what the plain typed flags (numbers, integers,
// booleans) accept, by flag name; a flag's meaning is the same in every
// command that has it. Flags whose values describe themselves
// (cliflag.Expecter) and flags not listed here fall back to their type
// (cliflag.ExpectedByType).
var flagExpectations = map[string]string{
	// simulate and sweep
	"max-elapsed":  "a nonnegative number of seconds",
	"normalize":    "a number in (0, 1)",
	"stride":       "a positive whole number",
	"exec-timeout": runparams.ExecTimeoutExpected,
	// simulate (fleet) and capacity
	"replicas":    "a whole number from 1 to 4096",
	"router-seed": "a whole number, 0 or more",
	// simulate, sweep and capacity
	"jobs": "a whole number (0: all cores)",
	// scenarios
	"requests":             "a whole number of at least 1",
	"rps":                  "a positive, finite rate in requests per second",
	"shared-prefix-tokens": "a whole number of tokens, 0 or more",
	"ttft-slo-ms":          "a positive, finite time in ms",
	"tpot-slo-ms":          "a positive, finite time in ms",
	// diagnose
	"gpu-hourly-cost":       "a finite number of USD per hour, 0 or more",
	"effective-concurrency": "a positive, finite number",
	"kv-watermark-pct":      "a finite number (percent)",
	"hol-ttft-ratio":        "a finite number",
	"cold-prefix-hit-pct":   "a finite number (percent)",
	"cold-ttft-ms":          "a finite number of ms",
	"by-window":             "a positive number of seconds",
	// bench (vllm bench serve's flags)
	"num-prompts":         "a whole number of at least 1",
	"seed":                "a whole number",
	"random-input-len":    "a whole number of tokens, 0 or more",
	"random-output-len":   "a whole number of tokens of at least 1",
	"random-range-ratio":  "a number in [0, 1)",
	"random-prefix-len":   "a whole number of tokens, 0 or more",
	"custom-output-len":   "a whole number of tokens of at least 1",
	"sharegpt-output-len": "a whole number of tokens of at least 1",
	"request-rate":        "a positive number of requests per second, or inf",
	"burstiness":          "a positive number",
	"max-concurrency":     "a whole number of at least 1",
	// calibrate
	"seeds": "a whole number of at least 1",
}

// pathFlags are the flags that name a file or folder, by name, in every
// command that has them: what they expect, the extensions the shell offers
// for them, and whether "-" is stdin or stdout or why it is refused.
// checkThenRun refuses an empty value and a refused "-" for every command
// (cliflag.CheckPaths); a new flag naming a file goes here
// (TestPathFlagsListed).
var pathFlags = map[string]cliflag.PathFlag{
	// read
	"trace":    {Expected: "a trace file", Extensions: []string{"csv"}, Stdio: true},
	"profiles": {Expected: "a JSON file of engine profiles", Extensions: []string{"json"}, Stdio: true},
	"profile":  {Expected: "a profile CSV or bundle folder", Extensions: []string{"csv"}, NotStdio: "a profile is read from files, not stdin (its manifest and bundle files sit beside it)"},
	"fleet":    {Expected: "a fleet file", Extensions: []string{"json"}, NotStdio: "a fleet file is read from a file, not stdin (its profile paths are relative to it)"},
	"gpu":      {Expected: "a built-in card or a card file", Extensions: []string{"json"}, NotStdio: "a card is read from a file, not stdin"},
	"model":    {Expected: "a built-in card or a card file", Extensions: []string{"json"}, NotStdio: "a card is read from a file, not stdin"},
	"spec":     {Expected: "a spec file", Extensions: []string{"yaml", "yml", "json"}, NotStdio: "a spec is read from a file, not stdin (its relative paths are taken from its folder)"},
	"resume":   {Expected: "a sweep output file", NotStdio: "a sweep output is read from a file, not stdin (its records are read back where they lie)"},
	// capacity --evaluations: files or glob patterns
	"evaluations":  {Expected: "capacity --shard output files", NotStdio: "capacity --shard outputs are read from files, not stdin (their records are read back where they lie)"},
	"dataset-path": {Expected: "a dataset file", Extensions: []string{"json", "jsonl"}, NotStdio: "a dataset is read from a file, not stdin"},
	// calibrate's inputs
	"bench":            {Expected: "a bench result file", Extensions: []string{"json"}, NotStdio: calibrateNotStdin},
	"holdout":          {Expected: "a bench result file", Extensions: []string{"json"}, NotStdio: calibrateNotStdin},
	"power-log":        {Expected: "a power log file", Extensions: []string{"csv"}, NotStdio: calibrateNotStdin},
	"bundle-raw":       {Expected: "a raw rows CSV file", Extensions: []string{"csv"}, NotStdio: calibrateNotStdin},
	"bundle-telemetry": {Expected: "a telemetry CSV file", Extensions: []string{"csv"}, NotStdio: calibrateNotStdin},
	"bundle-metadata":  {Expected: "a metadata JSON file", Extensions: []string{"json"}, NotStdio: calibrateNotStdin},
	// written
	"output":          {Expected: "a file path", Stdio: true},
	"plot":            {Expected: "a .png or .svg file", Extensions: []string{"png", "svg"}, NotStdio: "a figure is written to a .png or .svg file, not stdout" + stdoutHoldsResult},
	"request-log":     {Expected: "a .csv or .jsonl file", Extensions: []string{"csv", "jsonl"}, NotStdio: "a request log is written to a .csv or .jsonl file, not stdout" + stdoutHoldsResult},
	"result-dir":      {Expected: "a folder", Folder: true, NotStdio: "--save-result writes its file into a folder, not stdout" + stdoutHoldsResult},
	"result-filename": {Expected: "a file name", Extensions: []string{"json"}, NotStdio: "--save-result writes a file, not stdout" + stdoutHoldsResult},
	"out-gpu":         {Expected: "a card file path", Extensions: []string{"json"}, NotStdio: "the fitted card is written to a file, not stdout" + stdoutHoldsResult},
	"out-profile":     {Expected: "a profile CSV file path", Extensions: []string{"csv"}, NotStdio: "the fitted profile is written to a file with its manifest beside it, not stdout"},
	"bundle-out":      {Expected: "a new folder", Folder: true, NotStdio: "a bundle is written into a new folder, not stdout"},
	"out-plan":        {Expected: "a schedule CSV file path", Extensions: []string{"csv"}, NotStdio: "the plan is written to a schedule file, not stdout" + stdoutHoldsResult},
}

// calibrateNotStdin and stdoutHoldsResult are words of pathFlags'
// refusals of "-".
const (
	calibrateNotStdin = "calibrate reads its inputs from files, not stdin"
	stdoutHoldsResult = " (stdout holds the result)"
)

// flagCompletions complete the values of the flags that name a policy, in
// every command that has them.
var flagCompletions = map[string]cobra.CompletionFunc{
	"scheduler":  cliflag.Choices(plant.SchedulerNames),
	"controller": plantflag.CompleteController,
	"router":     cliflag.Choices(fleet.RouterNames),
	"preemption": cliflag.Choices(plant.PreemptionNames),
}
