// Package sweep expands a grid of configuration axes into cells, slices it
// into shards, runs the cells in parallel while delivering results in grid
// order, and finds Pareto fronts among the results. A Grid holds every axis
// value parsed once and gives a cell's values by axis name (the axes of a
// simulate sweep are named here); Pareto keeps the front and the best run
// under the SLOs of each profile and trace. What a cell runs is the
// caller's.
package sweep

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Axis is one swept dimension: a name (the flag it came from) and its values
// in the order given.
type Axis struct {
	Name   string   // axis name (its flag)
	Values []string // values, in the order given
}

// Cell is one combination of axis values; Index is its place in the full
// grid, Values holds one value per axis in axis order, and Choices the
// place of each value in its axis's Values.
type Cell struct {
	Index   int      // place in the full grid
	Values  []string // one value per axis, in axis order
	Choices []int    // Values[a] is Axes[a].Values[Choices[a]]
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
// whole grid) unless the caller allows more: 100,000 runs of the embedded
// trace take about ten minutes on one core, and a larger grid is better
// split into shards run on several machines.
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

// Shard is the part of a grid one process runs: the cells Lo to Hi-1 of
// the grid of Axes (all of them for shard 1 of 1). Cells are made when
// asked for, so a shard of any size costs nothing until it runs.
type Shard struct {
	Axes   []Axis // the grid's axes
	Lo, Hi int    // the shard's cells, by grid index: [Lo, Hi)
	Cells  int    // cells of the whole grid
}

// Len is the number of cells of the shard.
func (s Shard) Len() int { return s.Hi - s.Lo }

// Cell returns the cell of the grid whose index is index.
func (s Shard) Cell(index int) Cell { return cellAt(s.Axes, index) }

// All yields the shard's cells in grid order.
func (s Shard) All() iter.Seq[Cell] {
	return func(yield func(Cell) bool) {
		for index := s.Lo; index < s.Hi; index++ {
			if !yield(s.Cell(index)) {
				return
			}
		}
	}
}

// Plan returns the i-th (1-based) of n contiguous shards of the grid of
// axes (1 of 1: the whole grid). Grid order is that of nested loops written
// in axis order: the first axis varies slowest, and a cell's Index is its
// place in the whole grid. The shards' cells concatenated in shard order
// are the whole grid. Plan returns a *LimitError when the grid has more
// cells than an int can count or the shard more than maxCells.
func Plan(axes []Axis, i, n, maxCells int) (Shard, error) {
	sizes := make([]int, len(axes))
	for k, a := range axes {
		sizes[k] = len(a.Values)
	}
	lo, hi, err := shardCells(sizes, i, n, maxCells)
	if err != nil {
		return Shard{}, err
	}
	cells := 1
	for _, size := range sizes {
		cells *= size // shardCells checked that the product fits
	}
	return Shard{Axes: axes, Lo: lo, Hi: hi, Cells: cells}, nil
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
	choices := make([]int, len(axes))
	rest := index
	for a := len(axes) - 1; a >= 0; a-- {
		n := len(axes[a].Values)
		choices[a] = rest % n
		values[a] = axes[a].Values[choices[a]]
		rest /= n
	}
	return Cell{Index: index, Values: values, Choices: choices}
}

// ParseShardFlag parses the value of a --shard flag: "" for the whole grid
// (1 of 1), "auto" for the shard a job array gives (ShardFromEnv, reading
// the environment with getenv), else "I/N" (ParseShard).
func ParseShardFlag(value string, getenv func(string) string) (i, n int, err error) {
	switch value {
	case "":
		return 1, 1, nil
	case "auto":
		return ShardFromEnv(getenv)
	}
	return ParseShard(value)
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

// Stop ends a Run early. Once Start is closed no further cell starts; once
// Wait is closed Run no longer waits for the cells under way. A nil channel
// never closes.
type Stop struct {
	Start <-chan struct{} // closed: start no further cell
	Wait  <-chan struct{} // closed: stop waiting for the cells under way
}

// ErrStopped is what Run returns when Stop ended it before every cell's
// result was emitted.
var ErrStopped = errors.New("sweep stopped before every cell ran")

// Run calls work on the cells with up to jobs cells at a time and passes
// each result to emit in the cells' order, as soon as it and all the
// results before it are done, so the output is the same whatever jobs is.
// A cell starts only while fewer than jobs results wait for an earlier one:
// the results held back never number more than jobs, whatever the number
// of cells.
//
// An error from emit ends the run at once (the cells under way are not
// waited for) and is returned. When stop.Start closes, no further cell
// starts; the results of the cells under way are emitted as they finish
// (until stop.Wait closes), and then, still in order, the results held
// back behind a cell that did not finish, so every finished cell is
// emitted; Run then returns ErrStopped, or nil if every cell was emitted.
func Run[R any](cells iter.Seq[Cell], jobs int, stop Stop, work func(Cell) R, emit func(Cell, R) error) error {
	jobs = max(1, jobs)
	type task struct {
		pos  int // place in cells
		cell Cell
	}
	type done struct {
		task
		result R
	}
	tasks := make(chan task)
	results := make(chan done)
	quit := make(chan struct{}) // closed when Run returns
	defer close(quit)
	// window holds a token for every cell started and not yet emitted:
	// the cell being waited for and at most jobs results after it.
	window := make(chan struct{}, jobs+1)
	var started atomic.Int64  // cells started
	var exhausted atomic.Bool // every cell was started
	go func() {
		defer close(tasks)
		pos := 0
		for c := range cells {
			select {
			case window <- struct{}{}:
			case <-stop.Start:
				return
			case <-quit:
				return
			}
			select {
			case <-stop.Start: // when both were ready, the stop wins
				return
			default:
			}
			select {
			case tasks <- task{pos, c}:
			case <-stop.Start:
				return
			case <-quit:
				return
			}
			pos++
			started.Store(int64(pos))
		}
		exhausted.Store(true)
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for t := range tasks {
				r := work(t.cell)
				select {
				case results <- done{t, r}:
				case <-quit:
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	pending := map[int]done{} // finished, waiting for an earlier cell
	next := 0                 // the place of the next result to emit
	finished := false         // results is closed: no cell is under way
	for !finished {
		select {
		case d, ok := <-results:
			if !ok {
				finished = true
				break
			}
			pending[d.pos] = d
			for d, ok := pending[next]; ok; d, ok = pending[next] {
				delete(pending, next)
				if err := emit(d.cell, d.result); err != nil {
					return err
				}
				next++
				<-window
			}
		case <-stop.Wait:
			finished = true
		}
	}
	if exhausted.Load() && int64(next) == started.Load() {
		return nil
	}
	held := slices.Sorted(maps.Keys(pending))
	for _, pos := range held {
		if err := emit(pending[pos].cell, pending[pos].result); err != nil {
			return err
		}
	}
	return ErrStopped
}

// Point is one result placed for a Pareto comparison: both coordinates are
// to be minimized. Index identifies the result.
type Point struct {
	Index int     // identifies the result
	X, Y  float64 // the two coordinates, both minimized
}

// before reports whether p comes before q in the front's order: by X, then
// Y, then Index.
func (p Point) before(q Point) bool {
	if p.X != q.X {
		return p.X < q.X
	}
	if p.Y != q.Y {
		return p.Y < q.Y
	}
	return p.Index < q.Index
}

// beats reports whether p keeps q off the front: p comes first and is at
// least as good in Y (so p is at least as good in both, better in one, or
// the same point with a lower Index).
func (p Point) beats(q Point) bool { return p.before(q) && p.Y <= q.Y }

// Front is the Pareto front of the points added so far, each with a value:
// the points no other point beats (no other is at least as good in both
// coordinates and better in one; of identical points only the one with the
// lowest Index counts). Points with a NaN or infinite coordinate are never
// on it. The front does not depend on the order the points come in, and it
// keeps only its own members: its memory does not grow with the points
// added.
type Front[T any] struct {
	points []Point // sorted by X, then Y, then Index; Y strictly decreasing
	values []T
}

// Add considers p, with its value v, for the front.
func (f *Front[T]) Add(p Point, v T) {
	if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
		return
	}
	// at is where p goes in the order; the member just before it has the
	// lowest Y of the members that come before p.
	at, _ := slices.BinarySearchFunc(f.points, p, func(m, p Point) int {
		if m.before(p) {
			return -1
		}
		return 1
	})
	if at > 0 && f.points[at-1].beats(p) {
		return
	}
	// p beats the members after it whose Y is not lower: they are next to
	// it, since Y decreases along the front.
	end := at
	for end < len(f.points) && p.Y <= f.points[end].Y {
		end++
	}
	f.points = slices.Replace(f.points, at, end, p)
	f.values = slices.Replace(f.values, at, end, v)
}

// Points returns the front's points sorted by X (then Y, then Index).
func (f *Front[T]) Points() []Point { return f.points }

// Values returns the values of the front's points, in the order of Points.
func (f *Front[T]) Values() []T { return f.values }
