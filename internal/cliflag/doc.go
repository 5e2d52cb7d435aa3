// Package cliflag holds what servesim's commands share about flags beyond
// their definitions: the comma-separated List flag, the wording of what a
// flag expects (Expected, Expecter), suggestions for a mistyped flag name
// (Suggest) and shell-completion helpers (Choices, CompleteItems). It
// knows cobra and pflag, nothing of servesim's domain.
package cliflag
