package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/interrupt"
	"servesim/internal/limits"
)

// version is set at build time with -ldflags "-X main.version=...". When it
// is empty, the module build information supplies the version.
var version string

// resolvedVersion returns the version servesim reports and records in its
// provenance output.
func resolvedVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// newRootCmd builds the servesim command tree of the subcommands subs,
// writing to the given streams, for the command line args: when args name
// a subcommand, the tree holds that one alone (building the others' flags
// is start-up time spent for nothing); otherwise (help, completion, a flag
// or a mistyped name, which cobra answers with suggestions) it holds them
// all.
func newRootCmd(s *streams, args []string, subs []subcommand) *cobra.Command {
	root := &cobra.Command{
		Use:           "servesim",
		Short:         "Simulate and diagnose large-language-model inference serving",
		Long:          help("servesim"),
		Version:       resolvedVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError(cliflag.UnknownCommand(cmd, args[0], ""))
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(flagError)
	root.SuggestionsMinimumDistance = 2
	for _, sub := range subcommandsFor(subs, args) {
		root.AddCommand(sub.build(s))
	}
	root.SetHelpCommand(helpCommand())
	for _, sub := range root.Commands() {
		if specCommands[sub.Name()] {
			takeSpec(sub)
		}
	}
	cliflag.RegisterCompletions(root, flagCompletions, pathFlags)
	markRunErrors(root)
	return root
}

// checkThenRun returns a command's RunE: the path flags given are checked
// (cliflag.CheckPaths on pathFlags: no empty value, "-" only where it is
// stdin or stdout), check validates the parsed arguments and flags (its
// errors, like those, are usage errors), a result bound for a stdout
// closed at start is refused (checkStdoutOpen), then the options go to
// runF when a test supplied one (to see what was parsed), else to run with
// the command's context. The settings the errors of check and run name
// (runparams) are named as flags (flagNamed).
func checkThenRun[O any](opts *O, check func(cmd *cobra.Command, args []string) error, runF func(*O) error, run func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := cliflag.CheckPaths(cmd, pathFlags); err != nil {
			return usageError(err)
		}
		if err := check(cmd, args); err != nil {
			return asUsage(flagNamed(err))
		}
		if err := checkStdoutOpen(cmd); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return flagNamed(run(cmd.Context(), opts))
	}
}

// subcommand is a subcommand of servesim: its name and its constructor.
type subcommand struct {
	name  string
	build func(*streams) *cobra.Command
}

// commands lists servesim's subcommands. A new command adds its line here
// (and nowhere else): the list is the whole command tree.
func commands() []subcommand {
	return []subcommand{
		{"bench", func(s *streams) *cobra.Command { return newBenchCmd(s, nil) }},
		{"calibrate", func(s *streams) *cobra.Command { return newCalibrateCmd(s, nil) }},
		{"capacity", func(s *streams) *cobra.Command { return newCapacityCmd(s, nil) }},
		{"diagnose", func(s *streams) *cobra.Command { return newDiagnoseCmd(s, nil) }},
		{"scenarios", func(s *streams) *cobra.Command { return newScenariosCmd(s, nil) }},
		{"simulate", func(s *streams) *cobra.Command { return newSimulateCmd(s, nil) }},
		{"sweep", func(s *streams) *cobra.Command { return newSweepCmd(s, nil) }},
		{"trace", func(s *streams) *cobra.Command { return newTraceCmd(s, nil, nil) }},
		{"validate-profile", func(s *streams) *cobra.Command { return newValidateProfileCmd(s, nil) }},
	}
}

// subcommandsFor returns the subcommand of subs that args name first, or
// all of them when args do not start with a subcommand's name.
func subcommandsFor(subs []subcommand, args []string) []subcommand {
	if len(args) > 0 {
		for _, sub := range subs {
			if sub.name == args[0] {
				return []subcommand{sub}
			}
		}
	}
	return subs
}

// markRunErrors wraps every RunE in the tree so that a plain error returned
// while running a command counts as bad input (exit 1). Errors that cobra
// itself returns before running (unknown command, bad arguments) stay
// unmarked and count as usage errors.
func markRunErrors(cmd *cobra.Command) {
	if inner := cmd.RunE; inner != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return withExitCode(inner(c, args), exitInput) }
	}
	for _, child := range cmd.Commands() {
		markRunErrors(child)
	}
}

// debugEnv names the environment variable that, set to 1, adds the stack
// of a recovered panic to its one-line message.
const debugEnv = "SERVESIM_DEBUG"

// debugRequested reports whether debugEnv's value asks for stacks.
func debugRequested(value string) bool { return value == "1" }

// run executes servesim with args and returns the process exit code; ctx
// ends the run early (exitOnSignal).
func run(ctx context.Context, args []string, s *streams) int {
	return runCommands(ctx, args, s, commands())
}

// runCommands executes the command tree of subs with args under ctx and
// returns the process exit code. It is the single place where errors
// become exit codes and one-line messages; a run that a signal interrupted
// ends with the signal's line and code, whatever it returned.
func runCommands(ctx context.Context, args []string, s *streams, subs []subcommand) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(s.Err, "servesim: internal error: %s\n", limits.OneLine(fmt.Sprint(p)))
			if s.Debug {
				s.Err.Write(debug.Stack())
			}
			code = exitInternal
		}
	}()
	root := newRootCmd(s, args, subs)
	var refused error
	refuseHelpOfUnknownCommand(root, &refused)
	root.SetArgs(args)
	if s.OutClosed {
		ctx = context.WithValue(ctx, stdoutClosedKey{}, true)
	}
	err := root.ExecuteContext(ctx)
	if err == nil {
		err = refused
	}
	if in := interrupt.Of(ctx); in != nil {
		in.End() // held until the process exits
		err = in
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(s.Err, "servesim: %s\n", limits.OneLine(err.Error()))
	var coded codedError
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return exitUsage
}

// refuseHelpOfUnknownCommand makes --help on a command group given an
// argument that names none of its commands (`servesim nosuch --help`,
// `servesim completion tcsh`, which cobra answers with the group's help and
// exit 0) the usage error the group gives without --help, stored in
// *refused in place of the help: the group's own RunE (root, trace), or,
// for a group without one (completion), its commands listed.
func refuseHelpOfUnknownCommand(root *cobra.Command, refused *error) {
	show := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if rest := cmd.Flags().Args(); len(rest) > 0 && cmd.HasAvailableSubCommands() {
			if cmd.RunE != nil {
				*refused = asUsage(cmd.RunE(cmd, rest))
			} else {
				*refused = usageErrorf("unknown command %q for %q: expected %s", rest[0], cmd.CommandPath(), subcommandNames(cmd))
			}
			if *refused != nil {
				return
			}
		}
		show(cmd, args)
	})
}

// specCommands are the commands that take --spec FILE.
var specCommands = map[string]bool{"simulate": true, "sweep": true, "capacity": true}

// takeSpec gives cmd --spec FILE: before its own checks run, the spec's
// keys set the flags the command line did not give (cliflag.ApplySpec). A
// spec that cannot be read is bad input; a key or value wrong for the
// command is a usage error, as the flag would be.
func takeSpec(cmd *cobra.Command) {
	cliflag.AddSpec(cmd)
	inner := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if err := cliflag.CheckPaths(c, map[string]cliflag.PathFlag{cliflag.SpecFlag: pathFlags[cliflag.SpecFlag]}); err != nil {
			return usageError(err)
		}
		if err := cliflag.ApplySpec(c, pathFlags); err != nil {
			var spec *cliflag.SpecError
			if errors.As(err, &spec) && spec.Usage {
				return usageError(err)
			}
			return err
		}
		return inner(c, args)
	}
}

// helpCommand is `servesim help [command]`: cobra's help command, except
// that a topic naming no command is a usage error (exit 2) where cobra
// prints the root's usage and exits 0.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type servesim help [path to command] for full details.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usageErrorf("unknown help topic %q: expected a command: %s", strings.Join(args, " "), subcommandNames(c.Root()))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// subcommandNames lists the available commands of cmd: "a, b or c".
func subcommandNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" {
			names = append(names, c.Name())
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// helpFiles hold the long help and the examples of every command, as they
// read in a terminal: help/COMMAND.txt and help/COMMAND.example.txt.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the text of help/name.txt without its final newline.
func help(name string) string {
	text, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("no help file " + name) // the files are embedded: a test reads every one
	}
	return strings.TrimSuffix(string(text), "\n")
}
