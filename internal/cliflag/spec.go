package cliflag

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"servesim/internal/limits"
)

// SpecFlag is the flag that names a spec file.
const SpecFlag = "spec"

// MaxSpecBytes bounds a spec file: a spec is a page of settings, and a
// sweep's longest axis of 65,536 values fits with room to spare.
const MaxSpecBytes = 4 * limits.MiB

// AddSpec defines --spec FILE on cmd: a YAML or JSON file whose keys are
// cmd's flags (ApplySpec).
func AddSpec(cmd *cobra.Command) {
	cmd.Flags().String(SpecFlag, "", "read flags from a YAML or JSON `FILE` keyed by flag name (max-sim-time or max_sim_time); flags on the command line win")
}

// SpecError is a spec file that cannot be read, is not one mapping of
// scalars and lists, or sets a flag that refuses the value. Line is 0 when
// the error is about the whole file. Usage says that the file was read and
// a key or value is wrong for the command (a usage error), not that the
// file is unreadable (bad input).
type SpecError struct {
	File  string
	Line  int
	Key   string // the key, or "" for the file
	Why   string
	Usage bool
}

// Error reads "spec s.yaml line 4: key "normalize": ...".
func (e *SpecError) Error() string {
	where := "spec " + e.File
	if e.Line > 0 {
		where += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Key != "" {
		where += fmt.Sprintf(": key %s", limits.Quote(e.Key))
	}
	return where + ": " + e.Why
}

// ApplySpec reads the spec file --spec names, when it is given, and sets
// each flag of cmd its keys name that the command line did not give: a
// scalar is the flag's value as it would be typed, a list gives a list
// flag (or a repeatable one) its items in order. A key is a flag's long
// name, with "_" for "-" allowed (the JSON fields' spelling). A relative
// path given to a flag that paths names is taken from the spec's folder,
// as a fleet file's profile paths are. A flag the spec sets counts as
// given (Changed). The error is a *SpecError. An empty --spec is the
// caller's to refuse (CheckPaths).
func ApplySpec(cmd *cobra.Command, paths map[string]PathFlag) error {
	flags := cmd.Flags()
	path, err := flags.GetString(SpecFlag)
	if err != nil || !flags.Changed(SpecFlag) {
		return nil
	}
	data, err := readSpec(path)
	if err != nil {
		return &SpecError{File: path, Why: err.Error()}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return &SpecError{File: path, Why: limits.OneLine(strings.TrimPrefix(err.Error(), "yaml: ")) + ": expected YAML or JSON"}
	}
	if len(doc.Content) == 0 {
		return &SpecError{File: path, Why: "empty: expected a mapping of flag names to values"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return &SpecError{File: path, Line: root.Line, Why: "expected a mapping of flag names to values"}
	}
	given := map[string]bool{}
	flags.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, value := root.Content[i], root.Content[i+1]
		name := strings.ReplaceAll(key.Value, "_", "-")
		fail := func(why string) error {
			return &SpecError{File: path, Line: key.Line, Key: key.Value, Why: why, Usage: true}
		}
		f := flags.Lookup(name)
		switch {
		case key.Kind != yaml.ScalarNode:
			return &SpecError{File: path, Line: key.Line, Why: "a key must be a flag name", Usage: true}
		case f == nil || name == SpecFlag || name == "help":
			return fail(fmt.Sprintf("expected a flag of %s (see %s --help)", cmd.CommandPath(), cmd.CommandPath()))
		case seen[name] > 0:
			return fail(fmt.Sprintf("given twice (line %d too)", seen[name]))
		}
		seen[name] = key.Line
		if given[name] {
			continue // the command line wins
		}
		values, err := specValues(value)
		if err != nil {
			return fail(err.Error())
		}
		if _, ok := paths[name]; ok {
			for k, v := range values {
				values[k] = specPath(path, v)
			}
		}
		if err := setSpecValues(flags, f, values); err != nil {
			return fail(limits.OneLine(err.Error()))
		}
	}
	return nil
}

// readSpec reads a spec file within MaxSpecBytes.
func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err) // "no such file or directory", without the path said twice
	}
	defer f.Close()
	return limits.ReadAll(f, MaxSpecBytes)
}

// specValues are the values of one key as the command line would give
// them: one for a scalar, one per item for a list of scalars.
func specValues(value *yaml.Node) ([]string, error) {
	switch value.Kind {
	case yaml.ScalarNode:
		if value.Tag == "!!null" {
			return nil, errors.New("no value: expected a value, or leave the key out")
		}
		return []string{value.Value}, nil
	case yaml.SequenceNode:
		if len(value.Content) == 0 {
			return nil, errors.New("an empty list: expected at least one value")
		}
		items := make([]string, len(value.Content))
		for i, item := range value.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("item %d: expected a value (a number, a word or a path)", i+1)
			}
			items[i] = item.Value
		}
		return items, nil
	}
	return nil, errors.New("expected a value or a list of values")
}

// specPath takes a relative path from the spec's folder; "-" and absolute
// paths are kept.
func specPath(spec, value string) string {
	if value == "" || value == "-" || filepath.IsAbs(value) {
		return value
	}
	return filepath.Join(filepath.Dir(spec), value)
}

// setSpecValues gives flag f its values: one Set per item for a list or
// repeatable flag (an item holding a comma is quoted for a List), one Set
// for any other flag, which takes a single value.
func setSpecValues(flags *pflag.FlagSet, f *pflag.Flag, values []string) error {
	_, list := f.Value.(*List)
	_, slice := f.Value.(pflag.SliceValue)
	if !list && !slice {
		if len(values) != 1 {
			return fmt.Errorf("a list of %d values: --%s takes one value", len(values), f.Name)
		}
		return flags.Set(f.Name, values[0])
	}
	for _, v := range values {
		if list && strings.ContainsAny(v, ",\"") {
			v = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
		}
		if err := flags.Set(f.Name, v); err != nil {
			return err
		}
	}
	return nil
}
