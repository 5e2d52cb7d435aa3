package cards

import (
	"fmt"
	"strconv"
	"strings"

	"servesim/internal/limits"
)

// FieldError reports a card that is not valid: a field of a card file or
// of a card value, by its JSON name, with the text it was given and why;
// or, with Field empty, the file as a whole (empty, not a JSON object,
// trailing data, too large, unreadable).
type FieldError struct {
	Kind  string // "gpu" or "model"
	File  string // the card file's path as given; empty for a card that is no file (a built-in)
	Card  string // the card's name, named when File is empty
	Field string // JSON name: "memory_gb"; empty when the file as a whole is at fault
	Value string // the field's text as given (a JSON string unquoted); empty when there is none (a missing field)
	// Unknown is set when Field is a name the card does not have.
	Unknown bool
	Why     string // what is wrong and what was expected: "must be finite and positive"
	Err     error  // the error underneath, for errors.Is: a file that cannot be read; nil for most
}

// Error reads `gpu card my.json: field memory_bandwidth_gb_per_s "-3":
// must be finite and positive`, `gpu card L4: ...` for a card that is no
// file, `model card m.json: unknown field "layer": expected one of ...`
// for an unknown field and `gpu card my.json: empty file: ...` for the
// file as a whole.
func (e *FieldError) Error() string {
	msg := e.Kind + " card"
	switch {
	case e.File != "":
		msg += " " + e.File
	case e.Card != "":
		msg += " " + e.Card
	}
	switch {
	case e.Field == "":
	case e.Unknown:
		msg += ": unknown field " + limits.Quote(e.Field)
	default:
		msg += ": field " + e.Field
		if e.Value != "" {
			msg += " " + limits.Quote(e.Value)
		}
	}
	return msg + ": " + e.Why
}

// Unwrap returns the error underneath, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// UnknownCardError reports a card name that is neither a built-in card
// (nor one of its aliases) nor an existing file, or an alias that names
// more than one built-in card ("a100").
type UnknownCardError struct {
	Kind  string   // "gpu" or "model"
	Name  string   // the name as given
	Known []string // the built-in names, in GPUNames or ModelNames order
	// Ambiguous lists the built-in cards an ambiguous alias could mean;
	// empty for an unknown name.
	Ambiguous []string
}

// Error reads `unknown GPU card "FOO": expected one of L4, A10G, ... or a
// card file`, or `ambiguous GPU card "a100": expected A100-40GB or
// A100-80GB`.
func (e *UnknownCardError) Error() string {
	kind := e.Kind
	if kind == "gpu" {
		kind = "GPU"
	}
	if len(e.Ambiguous) > 0 {
		return fmt.Sprintf("ambiguous %s card %s: expected %s", kind, limits.Quote(e.Name), orList(e.Ambiguous))
	}
	return fmt.Sprintf("unknown %s card %s: expected one of %s or a card file", kind, limits.Quote(e.Name), strings.Join(e.Known, ", "))
}

// orList writes "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// FitError reports a model whose weights leave no room for a KV cache in
// the share of a GPU's memory the engine may use.
type FitError struct {
	GPU         string  // the GPU card's name
	Model       string  // the model card's name
	MemoryGB    float64 // the GPU's memory, GB
	WeightGB    float64 // the model's weights, GB
	Utilization float64 // the share of MemoryGB the engine may use, in (0, 1]
}

// Error reads `model Qwen2.5-14B-Instruct (29.5 GB of weights) does not
// fit in 90% of L4's 24 GB (21.6 GB)`.
func (e *FitError) Error() string {
	return fmt.Sprintf("model %s (%s GB of weights) does not fit in %s%% of %s's %s GB (%s GB)",
		e.Model, short(e.WeightGB), short(e.Utilization*100), e.GPU, short(e.MemoryGB), short(e.MemoryGB*e.Utilization))
}

// short writes x with at most three significant digits ("29.5", "24",
// "21.6", "0.125"), and values of 1000 and more whole, without an
// exponent ("1200").
func short(x float64) string {
	s := strconv.FormatFloat(x, 'g', 3, 64)
	if strings.Contains(s, "e+") {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}
