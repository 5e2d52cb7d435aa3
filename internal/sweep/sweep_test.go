package sweep

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGridOrder(t *testing.T) {
	axes := []Axis{{"scheduler", []string{"static", "chunked"}}, {"load", []string{"0.5", "0.8", "none"}}}
	cells := Grid(axes)
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
	assert.Len(t, Grid(nil), 1, "no axes: one cell with the defaults")
}

func TestShardsPartitionTheGridInOrder(t *testing.T) {
	cells := Grid([]Axis{{"a", []string{"1", "2", "3", "4", "5", "6", "7"}}})
	for n := 1; n <= 9; n++ {
		var joined []Cell
		for i := 1; i <= n; i++ {
			joined = append(joined, Shard(cells, i, n)...)
		}
		assert.Equal(t, cells, joined, "n=%d", n)
	}
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

func TestRunEmitsInGridOrderWhateverTheParallelism(t *testing.T) {
	cells := Grid([]Axis{{"a", make([]string, 50)}})
	for _, jobs := range []int{1, 2, 4, 16, 100} {
		var order []int
		err := Run(cells, jobs, func(c Cell) int {
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
	cells := Grid([]Axis{{"a", make([]string, 40)}})
	boom := errors.New("disk full")
	emitted := 0
	err := Run(cells, 3, func(c Cell) int { return c.Index }, func(c Cell, _ int) error {
		emitted++
		if c.Index == 5 {
			return boom
		}
		return nil
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 6, emitted)
}

func TestParetoFront(t *testing.T) {
	points := []Point{
		{0, 1.0, 5.0},
		{1, 2.0, 3.0},
		{2, 2.5, 3.0}, // dominated by 1
		{3, 3.0, 1.0},
		{4, 4.0, 2.0}, // dominated by 3
		{5, math.NaN(), 0.1},
		{6, 1.0, 5.0}, // duplicate of 0
		{7, 0.5, math.Inf(1)},
	}
	front := ParetoFront(points)
	var idx []int
	for _, p := range front {
		idx = append(idx, p.Index)
	}
	assert.Equal(t, []int{0, 1, 3}, idx)
	assert.Empty(t, ParetoFront(nil))
}

func TestParetoFrontAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		points := make([]Point, 1+r.IntN(30))
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
		var got []int
		for _, p := range ParetoFront(points) {
			got = append(got, p.Index)
		}
		slices.Sort(got)
		assert.Equal(t, want, got, "trial %d", trial)
	}
}
