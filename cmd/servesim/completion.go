package main

import (
	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
)

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
}

// registerCompletions makes the shell complete flag values for every
// subcommand of root: the choices of --scheduler, --controller and
// --router, and file names for the file flags. A command completes only
// the flags it has.
func registerCompletions(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		f := cmd.Flags()
		has := func(name string) bool { return f.Lookup(name) != nil }
		if has("scheduler") {
			_ = cmd.RegisterFlagCompletionFunc("scheduler", cliflag.Choices(plant.SchedulerNames))
		}
		if has("controller") {
			_ = cmd.RegisterFlagCompletionFunc("controller", plantflag.CompleteController)
		}
		if has("router") {
			_ = cmd.RegisterFlagCompletionFunc("router", cliflag.Choices(fleet.RouterNames))
		}
		if has("preemption") {
			_ = cmd.RegisterFlagCompletionFunc("preemption", cliflag.Choices(plant.PreemptionNames))
		}
		for name, extensions := range fileFlags {
			if has(name) {
				_ = cmd.MarkFlagFilename(name, extensions...)
			}
		}
	}
}
