package main

import (
	"errors"
	"fmt"
)

// Exit codes: servesim's scripting contract (see README.md).
const (
	exitOK       = 0 // success
	exitInput    = 1 // bad input, unreadable file or failed validation
	exitUsage    = 2 // unknown command or flag, bad flag value, wrong arguments
	exitInternal = 3 // internal error, including a recovered panic
)

// codedError is an error that knows its exit code (also interrupt.Stopped
// and interrupt.Interruption).
type codedError interface {
	error
	ExitCode() int
}

// exitError is an error with the exit code it ends servesim with.
type exitError struct {
	err  error
	code int
}

// Error returns the wrapped error's message; an internal error's is marked
// as such.
func (e exitError) Error() string {
	if e.code == exitInternal {
		return "internal error: " + e.err.Error()
	}
	return e.err.Error()
}

// Unwrap returns the wrapped error.
func (e exitError) Unwrap() error { return e.err }

// ExitCode returns the exit code.
func (e exitError) ExitCode() int { return e.code }

// usageError marks a usage mistake (exit 2), inputError bad input or a
// failed validation (exit 1), internalError a failure of servesim itself
// (exit 3).
func usageError(err error) error    { return exitError{err, exitUsage} }
func inputError(err error) error    { return exitError{err, exitInput} }
func internalError(err error) error { return exitError{err, exitInternal} }

// withExitCode marks err with code unless it is nil or knows its exit code
// already: a plain error from a command's checks is a usage error (asUsage),
// one from its run bad input (markRunErrors).
func withExitCode(err error, code int) error {
	var coded codedError
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return exitError{err, code}
}

// asUsage marks err as a usage error unless it knows its exit code.
func asUsage(err error) error { return withExitCode(err, exitUsage) }

// usageErrorf formats a usage error, e.g. an invalid flag value.
func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// errValidationFailed is returned after a command has written a complete
// result that reports a failed validation, so the process exits 1.
var errValidationFailed = inputError(errors.New("validation failed"))
