package sweep

import (
	"fmt"
	"slices"
)

// The axes of a simulate sweep that every grid has, by name: cells are
// looked up by these names, never by position, so an axis can be moved
// or added without sending values to the wrong setting.
const (
	AxisProfile    = "profile"
	AxisTrace      = "trace"
	AxisScheduler  = "scheduler"
	AxisController = "controller"
	AxisNormalize  = "normalize"
)

// GroupAxes are the axes whose values make a Pareto group: the front and
// the best run under the SLOs are of one profile on one trace.
var GroupAxes = []string{AxisProfile, AxisTrace}

// Grid is a sweep's axes with every value parsed once: a cell's values are
// then looked up by axis name, already typed.
type Grid struct {
	Axes   []Axis
	parsed [][]any // parsed[a][k] is Axes[a].Values[k] parsed
}

// AxisError is a value of an axis that does not parse.
type AxisError struct {
	Axis  string // the axis (its flag)
	Value string // the value as given
	Err   error  // why it does not parse
}

// Error is the parser's error.
func (e *AxisError) Error() string { return e.Err.Error() }

// Unwrap returns the parser's error.
func (e *AxisError) Unwrap() error { return e.Err }

// NewGrid parses every value of every axis with parse(axis, value); the
// first value that does not parse is an *AxisError. Axis names must be
// unique.
func NewGrid(axes []Axis, parse func(axis, value string) (any, error)) (*Grid, error) {
	g := &Grid{Axes: axes, parsed: make([][]any, len(axes))}
	for a, axis := range axes {
		if slices.ContainsFunc(axes[:a], func(b Axis) bool { return b.Name == axis.Name }) {
			return nil, fmt.Errorf("axis %s given twice", axis.Name)
		}
		g.parsed[a] = make([]any, len(axis.Values))
		for k, v := range axis.Values {
			x, err := parse(axis.Name, v)
			if err != nil {
				return nil, &AxisError{Axis: axis.Name, Value: v, Err: err}
			}
			g.parsed[a][k] = x
		}
	}
	return g, nil
}

// Has reports whether the grid has the named axis.
func (g *Grid) Has(axis string) bool { return g.axis(axis) >= 0 }

// axis returns the position of the named axis, or -1.
func (g *Grid) axis(name string) int {
	return slices.IndexFunc(g.Axes, func(a Axis) bool { return a.Name == name })
}

// Parsed returns cell c's value of the named axis, as parse returned it.
// It panics for an axis the grid does not have: the caller names its own
// axes.
func (g *Grid) Parsed(c Cell, axis string) any {
	a := g.axis(axis)
	if a < 0 {
		panic("sweep: no axis " + axis)
	}
	return g.parsed[a][c.Choices[a]]
}

// Values returns the parsed values of the named axis, in its order (nil
// for an axis the grid does not have).
func (g *Grid) Values(axis string) []any {
	if a := g.axis(axis); a >= 0 {
		return g.parsed[a]
	}
	return nil
}

// Text returns cell c's value of the named axis as given.
func (g *Grid) Text(c Cell, axis string) string {
	a := g.axis(axis)
	if a < 0 {
		panic("sweep: no axis " + axis)
	}
	return g.Axes[a].Values[c.Choices[a]]
}
