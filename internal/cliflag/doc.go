// Package cliflag holds what servesim's commands share about flags beyond
// their definitions: the comma-separated List flag, a string flag of fixed
// choices (AddChoice), the wording of what a flag expects (Expected,
// Expecter) and of a flag parse error (ParseError), suggestions for a
// mistyped flag or command name (Suggest, UnknownCommand), the checks of flags
// naming files (PathFlag, CheckPaths: no empty value, "-" only where it is
// stdin or stdout) and shell-completion helpers (Choices, CompleteItems,
// RegisterCompletions). It knows cobra and pflag, nothing of
// servesim's domain.
package cliflag
