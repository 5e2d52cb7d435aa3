package main

import (
	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
)

// flagError is every command's flag error function: a usage error naming
// the flag and what it expects (cliflag.ParseError).
func flagError(cmd *cobra.Command, err error) error {
	return usageError(cliflag.ParseError(cmd, err, flagExpectations))
}

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
	"exec-timeout": plantflag.ExecTimeoutExpected,
	// simulate (fleet) and capacity
	"replicas":    "a whole number from 1 to 4096",
	"router-seed": "a whole number, 0 or more",
	// sweep
	"jobs": "a whole number of at least 1",
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

// fileFlags are the flags that name files, with the extensions the shell
// offers for them (none: any file). A folder is always offered, so a
// profile bundle folder completes too.
var fileFlags = map[string][]string{
	"profile":  {"csv"},
	"trace":    {"csv"},
	"profiles": {"json"},
	"output":   nil,
	"plot":     {"png", "svg"},
	// simulate's request log
	"request-log": {"csv", "jsonl"},
	// bench's dataset
	"dataset-path": {"json", "jsonl"},
	// calibrate's inputs and outputs
	"bench":       {"json"},
	"holdout":     {"json"},
	"power-log":   {"csv"},
	"out-gpu":     {"json"},
	"out-profile": {"csv"},
	// calibrate's bundle
	"bundle-raw":       {"csv"},
	"bundle-telemetry": {"csv"},
	"bundle-metadata":  {"json"},
	"bundle-out":       nil,
}

// flagCompletions complete the values of the flags that name a policy, in
// every command that has them.
var flagCompletions = map[string]cobra.CompletionFunc{
	"scheduler":  cliflag.Choices(plant.SchedulerNames),
	"controller": plantflag.CompleteController,
	"router":     cliflag.Choices(fleet.RouterNames),
	"preemption": cliflag.Choices(plant.PreemptionNames),
}
