package plant

import (
	"errors"
	"fmt"
)

// ErrNoProfile is Plant.Validate's error for a plant without a profile.
var ErrNoProfile = errors.New("plant has no profile")

// FieldError reports a setting out of its range: a field of a Plant, an
// SLO or a normalization, by its JSON name, with its value and why. A
// command maps Field to the flag that sets it (errors.As).
type FieldError struct {
	Field string  // JSON name: "time_step_s"
	Value float64 // the value given
	Why   string  // what it must be: "must be finite and positive"
}

// Error reads "time_step_s -1: must be finite and positive".
func (e *FieldError) Error() string { return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Why) }
