package sweep

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grid returns every cell of the grid of axes.
func grid(t testing.TB, axes []Axis) []Cell {
	t.Helper()
	shard, err := Plan(axes, 1, 1, DefaultMaxCells)
	require.NoError(t, err)
	return slices.Collect(shard.All())
}

func TestGridOrder(t *testing.T) {
	axes := []Axis{{"scheduler", []string{"static", "chunked"}}, {"load", []string{"0.5", "0.8", "none"}}}
	cells := grid(t, axes)
	require.Len(t, cells, 6)
	var got [][]string
	for i, c := range cells {
		assert.Equal(t, i, c.Index)
		got = append(got, c.Values)
	}
	assert.Equal(t, [][]string{
		{"static", "0.5"}, {"static", "0.8"}, {"static", "none"},
		{"chunked", "0.5"}, {"chunked", "0.8"}, {"chunked", "none"},
	}, got)
	assert.Equal(t, "none", cells[5].Value(axes, "load"))
	assert.Equal(t, "", cells[5].Value(axes, "nosuch"))
	assert.Len(t, grid(t, nil), 1, "no axes: one cell with the defaults")
}

func TestShardsPartitionTheGridInOrder(t *testing.T) {
	axes := []Axis{{"a", []string{"1", "2", "3", "4", "5", "6", "7"}}}
	cells := grid(t, axes)
	for n := 1; n <= 9; n++ {
		var joined []Cell
		for i := 1; i <= n; i++ {
			shard, err := Plan(axes, i, n, DefaultMaxCells)
			require.NoError(t, err)
			assert.Equal(t, len(cells), shard.Cells)
			assert.Equal(t, shard.Hi-shard.Lo, shard.Len())
			joined = slices.AppendSeq(joined, shard.All())
		}
		assert.Equal(t, cells, joined, "n=%d", n)
	}
}

// axesOf builds axes with the given numbers of values.
func axesOf(sizes ...int) []Axis {
	axes := make([]Axis, len(sizes))
	for i, n := range sizes {
		axes[i] = Axis{Name: fmt.Sprintf("axis%d", i), Values: make([]string, n)}
	}
	return axes
}

func TestPlanRefusesGridsPastTheLimitBeforeAllocating(t *testing.T) {
	tests := []struct {
		name        string
		sizes       []int
		shard, of   int
		maxCells    int
		want        string
		wantIndexed bool // the grid can be indexed: only the limit is passed
	}{
		{"1e12 cells", []int{1000, 1000, 1000, 1000}, 1, 1, DefaultMaxCells,
			"a grid of 1000 x 1000 x 1000 x 1000 = 1000000000000 cells: more than 100000", true},
		{"4 axes of 65,536 values overflow", []int{65536, 65536, 65536, 65536}, 1, 1, DefaultMaxCells,
			"a grid of 65536 x 65536 x 65536 x 65536 = 1.84e+19 cells: more than a sweep can index (9.2e+18)", false},
		{"an overflowing grid, even in a tiny shard", []int{65536, 65536, 65536, 65536}, 1, math.MaxInt, DefaultMaxCells,
			"more than a sweep can index", false},
		{"a shard past the limit", []int{10, 10}, 1, 2, 49, "shard 1/2 of a grid of 10 x 10 = 100 cells holds 50 cells: more than 49", true},
		{"one cell over", []int{11, 10}, 1, 1, 109, "a grid of 11 x 10 = 110 cells: more than 109", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var shard Shard
			var err error
			axes := axesOf(tt.sizes...)
			allocs := testing.AllocsPerRun(1, func() { shard, err = Plan(axes, tt.shard, tt.of, tt.maxCells) })
			assert.Zero(t, shard)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.ErrorContains(t, err, tt.want)
			assert.Equal(t, tt.wantIndexed, le.Max != 0)
			assert.Equal(t, tt.sizes, le.Sizes)
			assert.LessOrEqual(t, allocs, 3.0, "nothing allocated for the cells")
		})
	}
	// A large grid is fine in small enough shards.
	shard, err := Plan(axesOf(1000, 1000, 1000, 1000), 7, 1e8, DefaultMaxCells)
	require.NoError(t, err)
	require.Equal(t, 10000, shard.Len())
	assert.Equal(t, 60000, shard.Lo)
	assert.Equal(t, 1_000_000_000_000, shard.Cells)
	first, _ := iter.Pull(shard.All())
	c, _ := first()
	assert.Equal(t, 60000, c.Index)
}

// FuzzSweepCells checks over any axis lengths and shard that the grid
// arithmetic either returns exactly the shard's range, within the limit, or
// a *LimitError, and that a grid whose size overflows is always refused
// (never an empty or wrapped-around range).
func FuzzSweepCells(f *testing.F) {
	f.Add(uint32(65536), uint32(65536), uint32(65536), uint32(65536), 1, 1, 100000)
	f.Add(uint32(3), uint32(0), uint32(7), uint32(1), 1, 1, 100)
	f.Add(uint32(4_000_000_000), uint32(4_000_000_000), uint32(0), uint32(1), 1, 1, 1000)
	f.Add(uint32(4_000_000_000), uint32(4_000_000_000), uint32(2), uint32(1), 3, 1<<40, 1000)
	f.Fuzz(func(t *testing.T, a, b, c, d uint32, shard, of, maxCells int) {
		if of < 1 || shard < 1 || shard > of || maxCells < 0 {
			return
		}
		sizes := []int{int(a), int(b), int(c), int(d)}
		product := big.NewInt(1)
		for _, n := range sizes {
			product.Mul(product, big.NewInt(int64(n)))
		}
		lo, hi, err := shardCells(sizes, shard, of, maxCells)
		var le *LimitError
		if product.Cmp(big.NewInt(math.MaxInt)) > 0 {
			if !errors.As(err, &le) || le.Max != 0 || !strings.Contains(err.Error(), "more than a sweep can index") {
				t.Fatalf("%v: an overflowing grid not refused: %v", sizes, err)
			}
			return
		}
		part := func(k int) int64 {
			return new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(k)), product), big.NewInt(int64(of))).Int64()
		}
		wantLo, wantHi := part(shard-1), part(shard)
		if wantHi-wantLo > int64(maxCells) {
			if !errors.As(err, &le) || int64(le.ShardCells) != wantHi-wantLo || le.Max != maxCells {
				t.Fatalf("%v, shard %d/%d: %d cells past the limit %d not refused: %v", sizes, shard, of, wantHi-wantLo, maxCells, err)
			}
			return
		}
		if err != nil || int64(lo) != wantLo || int64(hi) != wantHi {
			t.Fatalf("%v, shard %d/%d: [%d, %d) %v, want [%d, %d)", sizes, shard, of, lo, hi, err, wantLo, wantHi)
		}
	})
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		i, n int
		ok   bool
	}{
		{"1/1", 1, 1, true}, {"2/4", 2, 4, true}, {"0/4", 0, 0, false}, {"5/4", 0, 0, false},
		{"1", 0, 0, false}, {"a/b", 0, 0, false}, {"1/0", 0, 0, false}, {"-1/2", 0, 0, false},
	}
	for _, tt := range tests {
		i, n, err := ParseShard(tt.in)
		if !tt.ok {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, []int{tt.i, tt.n}, []int{i, n})
	}
}

func TestParseShardFlag(t *testing.T) {
	env := map[string]string{EnvJobCompletionIndex: "2", EnvShardCount: "3"}
	getenv := func(name string) string { return env[name] }
	for _, tt := range []struct {
		in   string
		i, n int
	}{{"", 1, 1}, {"auto", 3, 3}, {"2/5", 2, 5}} {
		i, n, err := ParseShardFlag(tt.in, getenv)
		require.NoError(t, err, tt.in)
		assert.Equal(t, []int{tt.i, tt.n}, []int{i, n}, tt.in)
	}
	_, _, err := ParseShardFlag("auto", func(string) string { return "" })
	assert.Error(t, err, "auto outside a job array")
	_, _, err = ParseShardFlag("0/2", getenv)
	assert.Error(t, err)
}

func TestRunEmitsInGridOrderWhateverTheParallelism(t *testing.T) {
	cells := grid(t, []Axis{{"a", make([]string, 50)}})
	for _, jobs := range []int{1, 2, 4, 16, 100} {
		var order []int
		err := Run(slices.Values(cells), jobs, Stop{}, func(c Cell) int {
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			return c.Index * c.Index
		}, func(c Cell, r int) error {
			assert.Equal(t, c.Index*c.Index, r)
			order = append(order, c.Index)
			return nil
		})
		require.NoError(t, err)
		want := make([]int, len(cells))
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, order, "jobs=%d", jobs)
	}
}

func TestRunStopsOnEmitError(t *testing.T) {
	cells := grid(t, []Axis{{"a", make([]string, 40)}})
	boom := errors.New("disk full")
	emitted := 0
	err := Run(slices.Values(cells), 3, Stop{}, func(c Cell) int { return c.Index }, func(c Cell, _ int) error {
		emitted++
		if c.Index == 5 {
			return boom
		}
		return nil
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 6, emitted)
}

// TestRunHoldsBackAtMostJobsResults makes the first cell slow: the other
// workers go on only until jobs results wait behind it.
func TestRunHoldsBackAtMostJobsResults(t *testing.T) {
	cells := grid(t, []Axis{{"a", make([]string, 100)}})
	for _, jobs := range []int{1, 2, 4} {
		release := make(chan struct{})
		var started atomic.Int32
		var emitted []int
		go func() {
			// Let the fast workers run as far as they may, then free cell 0.
			time.Sleep(50 * time.Millisecond)
			close(release)
		}()
		err := Run(slices.Values(cells), jobs, Stop{}, func(c Cell) int {
			started.Add(1)
			if c.Index == 0 {
				<-release
				assert.LessOrEqual(t, started.Load(), int32(jobs+1), "jobs=%d: cell 0 and at most jobs cells after it started", jobs)
			}
			return c.Index
		}, func(c Cell, _ int) error {
			emitted = append(emitted, c.Index)
			return nil
		})
		require.NoError(t, err)
		assert.Len(t, emitted, 100)
		assert.True(t, slices.IsSorted(emitted))
	}
}

func TestRunStop(t *testing.T) {
	cells := grid(t, []Axis{{"a", make([]string, 1000)}})
	t.Run("no cell starts after Start, the ones under way are emitted", func(t *testing.T) {
		start := make(chan struct{})
		var emitted []int
		err := Run(slices.Values(cells), 3, Stop{Start: start}, func(c Cell) int {
			if c.Index == 10 {
				close(start) // the signal comes while cell 10 runs
				time.Sleep(20 * time.Millisecond)
			}
			return c.Index
		}, func(c Cell, _ int) error {
			emitted = append(emitted, c.Index)
			return nil
		})
		assert.ErrorIs(t, err, ErrStopped)
		assert.Less(t, len(emitted), 20, "the cells after the stop never start")
		require.Greater(t, len(emitted), 10, "cell 10 finished after the stop and is emitted")
		for i, c := range emitted {
			assert.Equal(t, i, c, "in order, no gap: every cell started finished")
		}
	})
	t.Run("Wait abandons the cells under way; the results held back are emitted", func(t *testing.T) {
		start, wait := make(chan struct{}), make(chan struct{})
		stuck := make(chan struct{})
		defer close(stuck)
		var emitted []int
		err := Run(slices.Values(cells), 2, Stop{Start: start, Wait: wait}, func(c Cell) int {
			if c.Index == 3 {
				go func() {
					time.Sleep(20 * time.Millisecond)
					close(start)
					time.Sleep(20 * time.Millisecond)
					close(wait)
				}()
				<-stuck // never finishes while Run waits
			}
			return c.Index
		}, func(c Cell, _ int) error {
			emitted = append(emitted, c.Index)
			return nil
		})
		assert.ErrorIs(t, err, ErrStopped)
		require.GreaterOrEqual(t, len(emitted), 4)
		assert.Equal(t, []int{0, 1, 2}, emitted[:3])
		assert.NotContains(t, emitted, 3)
		assert.True(t, slices.IsSorted(emitted))
		assert.LessOrEqual(t, len(emitted), 3+2, "at most jobs results held back behind cell 3")
	})
	t.Run("a stop after the last cell started is no stop", func(t *testing.T) {
		start := make(chan struct{})
		few := grid(t, []Axis{{"a", make([]string, 3)}})
		n := 0
		err := Run(slices.Values(few), 4, Stop{Start: start}, func(c Cell) int {
			if c.Index == 2 {
				time.Sleep(10 * time.Millisecond) // every cell has started
				close(start)
			}
			return c.Index
		}, func(Cell, int) error { n++; return nil })
		require.NoError(t, err)
		assert.Equal(t, 3, n)
	})
	t.Run("no cells", func(t *testing.T) {
		require.NoError(t, Run(slices.Values([]Cell(nil)), 2, Stop{}, func(Cell) int { return 0 }, func(Cell, int) error { return nil }))
	})
}

// frontOf adds points to a front in the given order and returns the
// Indexes of its members, in front order.
func frontOf(points []Point, order []int) []int {
	var f Front[int]
	for _, k := range order {
		f.Add(points[k], points[k].Index)
	}
	var idx []int
	for k, p := range f.Points() {
		if p.Index != f.Values()[k] {
			panic("values out of step with points")
		}
		idx = append(idx, p.Index)
	}
	return idx
}

func TestFront(t *testing.T) {
	points := []Point{
		{0, 1.0, 5.0},
		{1, 2.0, 3.0},
		{2, 2.5, 3.0}, // dominated by 1
		{3, 3.0, 1.0},
		{4, 4.0, 2.0}, // dominated by 3
		{5, math.NaN(), 0.1},
		{6, 1.0, 5.0}, // duplicate of 0
		{7, 0.5, math.Inf(1)},
		{8, 3.0, 1.0 + 1e-9}, // same X as 3, worse Y
	}
	order := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	assert.Equal(t, []int{0, 1, 3}, frontOf(points, order))
	slices.Reverse(order)
	assert.Equal(t, []int{0, 1, 3}, frontOf(points, order), "in any order")
	var empty Front[string]
	assert.Empty(t, empty.Points())
}

func TestFrontAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		points := make([]Point, 1+r.IntN(40))
		for i := range points {
			points[i] = Point{i, float64(r.IntN(10)), float64(r.IntN(10))}
		}
		var want []int
		for i, p := range points {
			dominated := false
			for j, q := range points {
				better := q.X <= p.X && q.Y <= p.Y && (q.X < p.X || q.Y < p.Y)
				same := q.X == p.X && q.Y == p.Y && j < i
				if better || same {
					dominated = true
					break
				}
			}
			if !dominated {
				want = append(want, i)
			}
		}
		// The front is sorted by X; its Indexes, sorted, are the
		// undominated points, whatever order the points came in.
		got := frontOf(points, r.Perm(len(points)))
		var xs []float64
		for _, k := range got {
			xs = append(xs, points[k].X)
		}
		assert.True(t, slices.IsSorted(xs), "trial %d: sorted by X", trial)
		slices.Sort(got)
		assert.Equal(t, want, got, "trial %d", trial)
	}
}
