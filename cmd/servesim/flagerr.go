package main

import (
	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
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
	"jobs":     "a whole number of at least 1",
	"ttft-slo": "a nonnegative number of seconds (0: each profile's SLO)",
	"tpot-slo": "a nonnegative number of seconds (0: each profile's SLO)",
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
}

// badFlagValue is the usage error for a value of a flag listed in
// flagExpectations that parsed but is out of range.
func badFlagValue(flag string, value any) error {
	return usageErrorf("--%s %v: expected %s", flag, value, flagExpectations[flag])
}
