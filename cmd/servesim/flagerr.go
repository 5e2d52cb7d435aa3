package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is every command's flag error function: it turns pflag's parse
// errors into one usage line that names the flag and what it expects
// (`--normalize "abc": expected a number in (0, 1)`), and suggests the
// nearest flags for an unknown one, as cobra does for an unknown command.
func flagError(cmd *cobra.Command, err error) error {
	var invalid *pflag.InvalidValueError
	var missing *pflag.ValueRequiredError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return usageErrorf("--%s %q: expected %s", f.Name, invalid.GetValue(), expectedValue(f))
	case errors.As(err, &missing):
		f := missing.GetFlag()
		return usageErrorf("--%s needs a value: %s", f.Name, expectedValue(f))
	case errors.As(err, &unknown):
		if names := suggestFlags(cmd, typedFlagName(unknown)); len(names) > 0 {
			return usageErrorf("%v; did you mean %s?", err, orList(names))
		}
	}
	return usageError{err}
}

// typedFlagName is the name an unknown flag was typed with, without dashes:
// for a mistyped shorthand group such as -normalize, the whole group (a long
// flag written with one dash).
func typedFlagName(e *pflag.NotExistError) string {
	if group := e.GetSpecifiedShortnames(); group != "" {
		name, _, _ := strings.Cut(group, "=")
		return name
	}
	return e.GetSpecifiedName()
}

// expecter is a flag value that describes what it accepts.
type expecter interface {
	// Expected completes "expected ...", e.g. "a number in (0, 1)".
	Expected() string
}

// flagExpectations describe what the plain typed flags (numbers, integers,
// booleans) accept, by flag name; a flag's meaning is the same in every
// command that has it. Flags whose values describe themselves (expecter)
// and flags not listed here fall back to their type (expectedByType).
var flagExpectations = map[string]string{
	// simulate and sweep
	"max-elapsed":  "a nonnegative number of seconds",
	"normalize":    "a number in (0, 1)",
	"stride":       "a positive whole number",
	"exec-timeout": "a positive number of seconds",
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

// expectedValue says what flag f accepts.
func expectedValue(f *pflag.Flag) string {
	if e, ok := f.Value.(expecter); ok {
		return e.Expected()
	}
	if want, ok := flagExpectations[f.Name]; ok {
		return want
	}
	return expectedByType(f.Value.Type())
}

// expectedByType describes the values of a pflag type.
func expectedByType(typ string) string {
	switch typ {
	case "float64", "float32", "float":
		return "a number"
	case "int", "int8", "int16", "int32", "int64":
		return "a whole number"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number, 0 or more"
	case "bool":
		return "true or false"
	case "duration":
		return "a duration such as 1.5s or 2m"
	}
	return "a valid " + typ
}

// maxSuggestedFlags caps the names one suggestion lists.
const maxSuggestedFlags = 3

// suggestFlags returns the visible flags of cmd nearest to typed: the flags
// whose name starts with it, else those within two edits of it (cobra's
// distance for commands), in name order and at most maxSuggestedFlags.
func suggestFlags(cmd *cobra.Command, typed string) []string {
	if typed == "" {
		return nil
	}
	lower := strings.ToLower(typed)
	var prefixed, near []string
	best := 3
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if strings.HasPrefix(f.Name, lower) {
			prefixed = append(prefixed, f.Name)
			return
		}
		switch d := levenshtein(lower, f.Name); {
		case d < best:
			best, near = d, []string{f.Name}
		case d == best:
			near = append(near, f.Name)
		}
	})
	names := near
	if len(prefixed) > 0 {
		names = prefixed
	}
	if len(names) > maxSuggestedFlags {
		names = names[:maxSuggestedFlags]
	}
	for i, n := range names {
		names[i] = "--" + n
	}
	return names
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// levenshtein is the edit distance between a and b (insertions, deletions
// and substitutions of bytes).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
