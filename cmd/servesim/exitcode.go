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

// usageError marks a usage mistake (exit 2).
type usageError struct{ err error }

// Error returns the message of the wrapped error.
func (e usageError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e usageError) Unwrap() error { return e.err }

func (usageError) ExitCode() int { return exitUsage }

// inputError marks bad input or a failed validation (exit 1).
type inputError struct{ err error }

// Error returns the message of the wrapped error.
func (e inputError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e inputError) Unwrap() error { return e.err }

func (inputError) ExitCode() int { return exitInput }

// internalError marks a failure of servesim itself (exit 3).
type internalError struct{ err error }

// Error returns the wrapped error's message, marked as internal.
func (e internalError) Error() string { return "internal error: " + e.err.Error() }

// Unwrap returns the wrapped error.
func (e internalError) Unwrap() error { return e.err }

func (internalError) ExitCode() int { return exitInternal }

// asUsage marks err as a usage error (exit 2) unless it is nil or knows
// its exit code already.
func asUsage(err error) error {
	var coded codedError
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return usageError{err}
}

// usageErrorf formats a usage error, e.g. an invalid flag value.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// errValidationFailed is returned after a command has written a complete
// result that reports a failed validation, so the process exits 1.
var errValidationFailed = inputError{errors.New("validation failed")}
