// Package sweep expands a grid of configuration axes into cells, slices it
// into shards, runs the cells in parallel while delivering results in grid
// order, and finds Pareto fronts among the results. It knows nothing of what
// a cell runs.
package sweep

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Axis is one swept dimension: a name (the flag it came from) and its values
// in the order given.
type Axis struct {
	Name   string   // axis name (its flag)
	Values []string // values, in the order given
}

// Cell is one combination of axis values; Index is its place in the full
// grid, Values holds one value per axis in axis order.
type Cell struct {
	Index  int      // place in the full grid
	Values []string // one value per axis, in axis order
}

// Value returns the cell's value of the named axis, or "" if there is none.
func (c Cell) Value(axes []Axis, name string) string {
	for i, a := range axes {
		if a.Name == name {
			return c.Values[i]
		}
	}
	return ""
}

// Grid returns every combination of the axes' values; the first axis varies
// slowest, so the order is that of nested loops written in axis order.
func Grid(axes []Axis) []Cell {
	total := 1
	for _, a := range axes {
		total *= len(a.Values)
	}
	cells := make([]Cell, total)
	for i := range cells {
		values := make([]string, len(axes))
		rest := i
		for a := len(axes) - 1; a >= 0; a-- {
			n := len(axes[a].Values)
			values[a] = axes[a].Values[rest%n]
			rest /= n
		}
		cells[i] = Cell{Index: i, Values: values}
	}
	return cells
}

// ParseShard parses "I/N" (1 <= I <= N): the I-th of N shards.
func ParseShard(s string) (i, n int, err error) {
	left, right, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(left)
		if err == nil {
			n, err = strconv.Atoi(right)
		}
	}
	if !ok || err != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: expected I/N with 1 <= I <= N, e.g. 2/4", s)
	}
	return i, n, nil
}

// Shard returns the i-th (1-based) of n contiguous slices of cells. The
// shards' outputs concatenated in shard order equal the whole grid's.
func Shard(cells []Cell, i, n int) []Cell {
	lo := (i - 1) * len(cells) / n
	hi := i * len(cells) / n
	return cells[lo:hi]
}

// Run calls work on every cell with up to jobs cells at a time and passes
// each result to emit in the cells' order, as soon as it and all cells before
// it are done, so the output is the same whatever jobs is. An error from
// emit stops the run (cells under way finish) and is returned.
func Run[R any](cells []Cell, jobs int, work func(Cell) R, emit func(Cell, R) error) error {
	jobs = max(1, min(jobs, len(cells)))
	type done struct {
		pos    int
		result R
	}
	next := make(chan int)
	results := make(chan done)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pos := range next {
				results <- done{pos, work(cells[pos])}
			}
		}()
	}
	go func() {
		defer close(next)
		for pos := range cells {
			select {
			case next <- pos:
			case <-stop:
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := make(map[int]R)
	emitted := 0
	var emitErr error
	for d := range results {
		if emitErr != nil {
			continue
		}
		pending[d.pos] = d.result
		for {
			r, ok := pending[emitted]
			if !ok {
				break
			}
			delete(pending, emitted)
			if emitErr = emit(cells[emitted], r); emitErr != nil {
				close(stop)
				break
			}
			emitted++
		}
	}
	return emitErr
}

// Point is one result placed for a Pareto comparison: both coordinates are
// to be minimized. Index identifies the result.
type Point struct {
	Index int     // identifies the result
	X, Y  float64 // the two coordinates, both minimized
}

// ParetoFront returns the points not dominated by any other (no other point
// is at least as good in both coordinates and better in one), sorted by X
// then Y. Points with a NaN or infinite coordinate are never on the front;
// of identical points only the first (lowest Index) is kept.
func ParetoFront(points []Point) []Point {
	finite := make([]Point, 0, len(points))
	for _, p := range points {
		if !math.IsNaN(p.X) && !math.IsNaN(p.Y) && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0) {
			finite = append(finite, p)
		}
	}
	slices.SortStableFunc(finite, func(a, b Point) int {
		if c := cmpFloat(a.X, b.X); c != 0 {
			return c
		}
		if c := cmpFloat(a.Y, b.Y); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	front := []Point{}
	bestY := math.Inf(1)
	for _, p := range finite {
		if p.Y < bestY {
			front = append(front, p)
			bestY = p.Y
		}
	}
	return front
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
