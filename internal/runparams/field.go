package runparams

import (
	"errors"
	"fmt"
	"strings"
)

// Setting is the name of a setting of a run: the flag that sets it,
// without dashes ("stride", "max-sim-time"). In a *FieldError's message it
// reads bare, unless the message is Named.
type Setting string

// FieldError is a setting of a run that cannot mean anything, or a run
// that its settings make impossible. Field is the setting at fault; the
// message may name others (a limit says which settings to change), each a
// Setting, so that Named can word them as the caller's flags or keys.
type FieldError struct {
	// Field is the setting at fault: the first Setting of the message.
	Field  Setting
	format string
	args   []any
	err    error // the message with the settings bare, wrapping any %w
}

// Errorf formats a *FieldError as fmt.Errorf formats an error (%w wraps);
// the Setting arguments are the settings the message names, the first the
// one at fault.
func Errorf(format string, args ...any) error {
	e := &FieldError{format: format, args: args, err: fmt.Errorf(format, args...)}
	for _, a := range args {
		if s, ok := a.(Setting); ok {
			e.Field = s
			break
		}
	}
	return e
}

// Error returns the message with the settings named bare.
func (e *FieldError) Error() string { return e.err.Error() }

// Unwrap returns the errors the message wraps (%w).
func (e *FieldError) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	}
	return nil
}

// named is the message with every setting, its own and those of the
// errors it wraps, written as name writes it (Format).
func (e *FieldError) named(name func(Setting) string) string {
	return Format(name, strings.ReplaceAll(e.format, "%w", "%v"), e.args...)
}

// message is err's message with the settings of the first *FieldError in
// its chain (and those it wraps) written as name writes them; the text
// around that error's message is kept as it is.
func message(err error, name func(Setting) string) string {
	msg := err.Error()
	var fe *FieldError
	if !errors.As(err, &fe) {
		return msg
	}
	bare := fe.Error()
	i := strings.LastIndex(msg, bare)
	if i < 0 {
		return msg
	}
	return msg[:i] + fe.named(name) + msg[i+len(bare):]
}

// Named returns err with the settings its message names (those of a
// *FieldError in its chain) written as name writes them, for a command
// that sets them by flags ("--stride") or a file by keys; it unwraps to
// err, so its type and exit code stay. An error without a *FieldError is
// returned as it is.
func Named(err error, name func(Setting) string) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return &namedError{msg: message(err, name), err: err}
}

// namedError is an error whose message names its settings (Named).
type namedError struct {
	msg string
	err error
}

// Error returns the message with the settings named.
func (e *namedError) Error() string { return e.msg }

// Unwrap returns the error as the run reported it.
func (e *namedError) Unwrap() error { return e.err }

// LateUsageError is a setting found wrong only when the run runs (a glob
// pattern that does not parse): servesim exits 2 for it, as for any usage
// error.
type LateUsageError struct{ Err error }

// Error returns the wrapped error's message.
func (e *LateUsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *LateUsageError) Unwrap() error { return e.Err }

// ExitCode is 2, the exit code of a usage error.
func (e *LateUsageError) ExitCode() int { return 2 }
