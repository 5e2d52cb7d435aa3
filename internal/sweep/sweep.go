// Package sweep expands a grid of configuration axes into cells, slices it
// into shards, runs the cells in parallel while delivering results in grid
// order, and finds Pareto fronts among the results. It knows nothing of what
// a cell runs.
package sweep

import (
	"fmt"
	"math"
	"math/bits"
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

// DefaultMaxCells bounds the runs of one sweep process (its shard, or the
// whole grid) unless the caller allows more: each run keeps a record until
// the output is written, and 100,000 runs of the embedded trace take about
// ten minutes on one core.
const DefaultMaxCells = 100_000

// LimitError reports a grid (or a shard of it) with more cells than the
// limit, or with more than a sweep can index (math.MaxInt).
type LimitError struct {
	Sizes []int   // the lengths of the grid's axes
	Cells float64 // cells of the whole grid, the product of Sizes (a float never overflows)
	// Shard, ShardCount and ShardCells describe the shard asked for
	// (Shard 1 of ShardCount 1 is the whole grid).
	Shard, ShardCount int
	ShardCells        int
	Max               int // the limit; 0 when the grid cannot be indexed at all
}

// Grid describes the grid: "2 x 3 = 6 cells".
func (e *LimitError) Grid() string {
	parts := make([]string, len(e.Sizes))
	for i, n := range e.Sizes {
		parts[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf("%s = %s cells", strings.Join(parts, " x "), formatCells(e.Cells))
}

// Error reads "a grid of 2 x 3 = 6 cells: more than 5", "shard 1/2 of a
// grid of ... = ... cells holds 3 cells: more than 2" or "a grid of ... =
// 1.84e+19 cells: more than a sweep can index (9.2e+18)".
func (e *LimitError) Error() string {
	switch {
	case e.Max == 0:
		return fmt.Sprintf("a grid of %s: more than a sweep can index (%.2g)", e.Grid(), float64(math.MaxInt))
	case e.ShardCount > 1:
		return fmt.Sprintf("shard %d/%d of a grid of %s holds %d cells: more than %d", e.Shard, e.ShardCount, e.Grid(), e.ShardCells, e.Max)
	}
	return fmt.Sprintf("a grid of %s: more than %d", e.Grid(), e.Max)
}

// formatCells writes a cell count in full up to 2^53, where a float holds
// it exactly, else with three significant digits.
func formatCells(x float64) string {
	if x <= 1<<53 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// Plan returns the cells of the i-th (1-based) of n contiguous shards of
// the grid of axes (1 of 1: the whole grid), in grid order: the first axis
// varies slowest, as in nested loops written in axis order, and each cell's
// Index is its place in the whole grid. The shards' cells concatenated in
// shard order are the whole grid. It returns a *LimitError, before
// allocating anything, when the grid has more cells than an int can count
// or the shard more than maxCells.
func Plan(axes []Axis, i, n, maxCells int) ([]Cell, error) {
	sizes := make([]int, len(axes))
	for k, a := range axes {
		sizes[k] = len(a.Values)
	}
	lo, hi, err := shardCells(sizes, i, n, maxCells)
	if err != nil {
		return nil, err
	}
	out := make([]Cell, hi-lo)
	for k := range out {
		out[k] = cellAt(axes, lo+k)
	}
	return out, nil
}

// shardCells is the range [lo, hi) of the cells of the i-th of n shards of
// a grid whose axes have the given lengths, or a *LimitError.
func shardCells(sizes []int, i, n, maxCells int) (lo, hi int, err error) {
	cells := 1.0
	total := uint64(1)
	overflow := false
	for _, size := range sizes {
		cells *= float64(size)
		h, l := bits.Mul64(total, uint64(size))
		overflow = overflow || h != 0 || l > math.MaxInt
		total = l
	}
	if overflow && cells != 0 {
		return 0, 0, &LimitError{Sizes: sizes, Cells: cells, Shard: i, ShardCount: n}
	}
	if overflow {
		total = 0 // an empty axis empties the grid whatever the others
	}
	at := func(k int) int {
		h, l := bits.Mul64(uint64(k), total)
		q, _ := bits.Div64(h, l, uint64(n)) // k <= n and total < 2^63, so h < n
		return int(q)
	}
	lo, hi = at(i-1), at(i)
	if hi-lo > maxCells {
		return 0, 0, &LimitError{Sizes: sizes, Cells: cells, Shard: i, ShardCount: n, ShardCells: hi - lo, Max: maxCells}
	}
	return lo, hi, nil
}

// cellAt is cell index of the grid of axes.
func cellAt(axes []Axis, index int) Cell {
	values := make([]string, len(axes))
	rest := index
	for a := len(axes) - 1; a >= 0; a-- {
		n := len(axes[a].Values)
		values[a] = axes[a].Values[rest%n]
		rest /= n
	}
	return Cell{Index: index, Values: values}
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
