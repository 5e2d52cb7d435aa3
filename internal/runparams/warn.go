package runparams

import (
	"fmt"
	"io"
)

// Warner is where a run writes its warnings (and whatever else it says on
// stderr: an exec: child's stderr, a progress bar): a Writer, and Name,
// which words the settings a warning names as the caller sets them (flags:
// "--resume"); nil leaves them bare ("resume"), as a *FieldError's message
// reads.
type Warner struct {
	io.Writer
	Name func(Setting) string
}

// Warnf writes a warning formatted as Format formats it with w's Name.
func (w Warner) Warnf(format string, args ...any) {
	io.WriteString(w, Format(w.Name, format, args...))
}

// Format formats as fmt.Sprintf does, but writes the Setting arguments as
// name writes them (bare when name is nil), and the settings an error
// argument names (those of a *FieldError in its chain) so too.
func Format(name func(Setting) string, format string, args ...any) string {
	named := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case Setting:
			if name != nil {
				named[i] = name(a)
			} else {
				named[i] = string(a)
			}
		case error:
			named[i] = message(a, name)
		default:
			named[i] = a
		}
	}
	return fmt.Sprintf(format, named...)
}
