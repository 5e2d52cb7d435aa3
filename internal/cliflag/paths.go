package cliflag

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// PathFlag says what a flag naming a file or folder takes, for the shell's
// completion and for CheckPaths. A path flag either reads or writes "-" as
// standard input or output (Stdio) or refuses it, saying why (NotStdio):
// never a file named "-".
type PathFlag struct {
	// Expected completes "expected ..." for an empty value: "a file path".
	Expected string
	// Extensions are the ones the shell offers (none: any file; a folder
	// is always offered).
	Extensions []string
	// Folder is set for a flag naming a folder: the shell offers folders.
	Folder bool
	// Stdio is set when "-" is standard input (a file read) or standard
	// output (a file written).
	Stdio bool
	// NotStdio, for a flag without Stdio, says why "-" is refused, as
	// `--fleet "-": NotStdio`.
	NotStdio string
}

// CheckPaths refuses, among the flags of cmd given on its command line that
// paths names, an empty value (a script's unset variable is not "the
// default"): a flag's, a repeatable flag's occurrence, a whole List (an
// empty item among others is a malformed list, the command's to refuse);
// the value "=" of a flag that has a shorthand (`-o=` gives "=", not an
// empty value); and "-" where it is not standard input or output. The
// error is one line naming the flag and the value; the flags are looked at
// in the order of their names.
func CheckPaths(cmd *cobra.Command, paths map[string]PathFlag) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		p, ok := paths[f.Name]
		if !ok || err != nil {
			return
		}
		err = checkPath(f, p)
	})
	return err
}

// checkPath checks the values of one path flag given.
func checkPath(f *pflag.Flag, p PathFlag) error {
	name := "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand
	}
	values := FlagValues(f)
	_, list := f.Value.(*List)
	if len(values) == 0 {
		values = []string{""} // a list given as ""
	}
	for _, v := range values {
		switch {
		case v == "" && (!list || len(values) == 1):
			return fmt.Errorf(`%s "": expected %s (an empty value is not "the default": leave the flag out for it)`, name, p.Expected)
		case v == "=" && f.Shorthand != "":
			return fmt.Errorf(`%s "=": expected %s (%s= gives the value "=", not an empty one: leave the flag out for the default)`, name, p.Expected, name)
		case v == "-" && !p.Stdio:
			return fmt.Errorf(`%s "-": %s`, name, p.NotStdio)
		}
	}
	return nil
}

// CheckPathArgs refuses, among the arguments args of a command that names
// them as what (`sweep merge`), an empty one and, unless p.Stdio, "-".
func CheckPathArgs(what string, args []string, p PathFlag) error {
	for _, v := range args {
		switch {
		case v == "":
			return fmt.Errorf(`%s "": expected %s, not an empty argument`, what, p.Expected)
		case v == "-" && !p.Stdio:
			return fmt.Errorf(`%s "-": %s`, what, p.NotStdio)
		}
	}
	return nil
}

// Itemizer is a flag value holding several items: a List, or a repeatable
// flag of file names.
type Itemizer interface {
	Items() []string
}

// FlagValues are the values flag f holds: a list's or a repeatable flag's
// items (Itemizer, pflag.SliceValue), else its one value.
func FlagValues(f *pflag.Flag) []string {
	switch v := f.Value.(type) {
	case Itemizer:
		return v.Items()
	case pflag.SliceValue:
		return v.GetSlice()
	}
	return []string{f.Value.String()}
}
