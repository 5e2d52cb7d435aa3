package cliflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TypedName is the name an unknown flag was typed with, without dashes:
// for a mistyped shorthand group such as -normalize, the whole group (a long
// flag written with one dash).
func TypedName(e *pflag.NotExistError) string {
	if group := e.GetSpecifiedShortnames(); group != "" {
		name, _, _ := strings.Cut(group, "=")
		return name
	}
	return e.GetSpecifiedName()
}

// Expecter is a flag value that describes what it accepts.
type Expecter interface {
	// Expected completes "expected ...", e.g. "a number in (0, 1)".
	Expected() string
}

// Expected says what flag f accepts, completing "expected ...": its
// value's own words (Expecter), else byName's for its name, else its
// type's (ExpectedByType).
func Expected(f *pflag.Flag, byName map[string]string) string {
	if e, ok := f.Value.(Expecter); ok {
		return e.Expected()
	}
	if want, ok := byName[f.Name]; ok {
		return want
	}
	return ExpectedByType(f.Value.Type())
}

// ExpectedByType describes the values of a pflag type.
func ExpectedByType(typ string) string {
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

// Suggest returns the visible flags of cmd nearest to typed: the flags
// whose name starts with it, else those within two edits of it (cobra's
// distance for commands), in name order and at most maxSuggestedFlags.
func Suggest(cmd *cobra.Command, typed string) []string {
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
		case d >= len(f.Name):
			// Every letter edited: nothing alike ("-x" is not "--gpu").
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

// OrList joins names as "a", "a or b", "a, b or c".
func OrList(names []string) string {
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

// ParseError turns a flag parse error of cmd into one line that names the
// flag and what it expects (`--normalize "abc": expected a number in (0,
// 1)`; byName as for Expected), and suggests the nearest flags for an
// unknown one, as cobra does for an unknown command. Other errors pass as
// they are.
func ParseError(cmd *cobra.Command, err error, byName map[string]string) error {
	var invalid *pflag.InvalidValueError
	var missing *pflag.ValueRequiredError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return fmt.Errorf("--%s %q: expected %s", f.Name, invalid.GetValue(), Expected(f, byName))
	case errors.As(err, &missing):
		f := missing.GetFlag()
		want := Expected(f, byName)
		if want == ExpectedByType("string") {
			// A free-form value: what the flag's help says it is.
			_, want = pflag.UnquoteUsage(f)
		}
		return fmt.Errorf("--%s needs a value: %s", f.Name, want)
	case errors.As(err, &unknown):
		if names := Suggest(cmd, TypedName(unknown)); len(names) > 0 {
			return fmt.Errorf("%v; did you mean %s?", err, OrList(names))
		}
	}
	return err
}

// UnknownCommand is the error for a subcommand name of cmd that names none:
// it suggests the nearest, else adds hint (": expected stats or
// convert").
func UnknownCommand(cmd *cobra.Command, name, hint string) error {
	if suggestions := cmd.SuggestionsFor(name); len(suggestions) > 0 {
		return fmt.Errorf("unknown command %q for %q; did you mean %q?", name, cmd.CommandPath(), suggestions[0])
	}
	return fmt.Errorf("unknown command %q for %q%s", name, cmd.CommandPath(), hint)
}
