package trace

import (
	"fmt"
	"strings"
)

// Filter keeps the rows of a BurstGPT trace whose Model is one of Models
// and whose Log Type is one of LogTypes; an empty list keeps any value.
// Values are compared exactly.
type Filter struct {
	Models   []string // values of the Model column kept; any when empty
	LogTypes []string // values of the Log Type column kept; any when empty
}

// Filter keys and the BurstGPT columns they test.
const (
	FilterModel   = "model"    // the Model column
	FilterLogType = "log-type" // the Log Type column
)

// ParseFilter reads filter terms KEY=VALUE, KEY being model or log-type:
// terms with the same key keep rows with any of their values, terms with
// different keys keep rows that match both.
func ParseFilter(terms []string) (Filter, error) {
	var f Filter
	for _, term := range terms {
		key, value, ok := strings.Cut(term, "=")
		switch {
		case !ok:
			return Filter{}, fmt.Errorf("filter term %q: expected KEY=VALUE with KEY %s or %s", term, FilterModel, FilterLogType)
		case key == FilterModel:
			f.Models = append(f.Models, value)
		case key == FilterLogType:
			f.LogTypes = append(f.LogTypes, value)
		default:
			return Filter{}, fmt.Errorf("filter term %q: unknown key %q: expected %s or %s", term, key, FilterModel, FilterLogType)
		}
	}
	return f, nil
}

// Empty reports whether f keeps every row.
func (f Filter) Empty() bool { return len(f.Models) == 0 && len(f.LogTypes) == 0 }

// keeps reports whether a row with this model and log type is kept.
func (f Filter) keeps(model, logType []byte) bool {
	return matches(f.Models, model) && matches(f.LogTypes, logType)
}

// matches reports whether value is one of values, or values is empty.
func matches(values []string, value []byte) bool {
	for _, v := range values {
		if v == string(value) {
			return true
		}
	}
	return len(values) == 0
}
