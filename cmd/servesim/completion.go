package main

import (
	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
)

// formatsByCommand lists the --format values of each command, for shell
// completion; each command's check accepts exactly these.
var formatsByCommand = map[string][]string{
	"simulate":         {"json", "table", "vllm-bench"},
	"sweep":            {"jsonl", "csv", "table"},
	"scenarios":        {"json", "table"},
	"diagnose":         {"json", "table"},
	"validate-profile": {"json", "text"},
}

// routerNames are the values of --router, where a command has it.
var routerNames = []string{"round-robin", "random", "least-outstanding", "least-tokens"}

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
// subcommand of root: the choices of --scheduler, --controller, --format
// and --router, and file names for the file flags. A command completes only
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
		if formats, ok := formatsByCommand[cmd.Name()]; ok && has("format") {
			_ = cmd.RegisterFlagCompletionFunc("format", cliflag.Choices(formats))
		}
		if has("router") {
			_ = cmd.RegisterFlagCompletionFunc("router", cliflag.Choices(routerNames))
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
