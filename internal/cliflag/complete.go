package cliflag

import (
	"strings"

	"github.com/spf13/cobra"
)

// Choices completes a flag from a fixed set of values.
func Choices(values []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return CompleteItems(toComplete, values), cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteItems returns the values that complete toComplete. For a comma
// list (sweep's axes) only the item after the last comma is completed, and
// the items before it are kept.
func CompleteItems(toComplete string, values []string) []cobra.Completion {
	head := ""
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		head, toComplete = toComplete[:i+1], toComplete[i+1:]
	}
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, toComplete) {
			out = append(out, head+v)
		}
	}
	return out
}

// RegisterCompletions makes the shell complete, in every subcommand of
// root that has them, the flags of funcs by their function and the path
// flags of paths as folders (PathFlag.Folder) or file names with their
// extensions (none: any file; a folder is always offered).
func RegisterCompletions(root *cobra.Command, funcs map[string]cobra.CompletionFunc, paths map[string]PathFlag) {
	for _, cmd := range root.Commands() {
		for name, fn := range funcs {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, fn)
			}
		}
		for name, p := range paths {
			switch {
			case cmd.Flags().Lookup(name) == nil:
			case p.Folder:
				_ = cmd.MarkFlagDirname(name)
			default:
				_ = cmd.MarkFlagFilename(name, p.Extensions...)
			}
		}
	}
}
