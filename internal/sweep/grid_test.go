package sweep

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseTest parses "n" axes as integers and any other axis as text.
func parseTest(axis, v string) (any, error) {
	if axis != "n" {
		return v, nil
	}
	return strconv.Atoi(v)
}

func TestGridLooksValuesUpByName(t *testing.T) {
	axes := []Axis{{Name: AxisProfile, Values: []string{"a", "b"}}, {Name: "n", Values: []string{"1", "2", "3"}}}
	reordered := []Axis{axes[1], axes[0]}
	for _, order := range [][]Axis{axes, reordered} {
		g, err := NewGrid(order, parseTest)
		require.NoError(t, err)
		shard, err := Plan(order, 1, 1, 100)
		require.NoError(t, err)
		var got []string
		for c := range shard.All() {
			got = append(got, g.Text(c, AxisProfile)+strconv.Itoa(g.Parsed(c, "n").(int)))
		}
		assert.ElementsMatch(t, []string{"a1", "a2", "a3", "b1", "b2", "b3"}, got, "the same cells whatever the axis order")
		assert.True(t, g.Has("n"))
		assert.False(t, g.Has(AxisTrace))
		assert.Equal(t, []any{1, 2, 3}, g.Values("n"), "parsed once, in axis order")
		assert.Nil(t, g.Values(AxisTrace))
	}

	_, err := NewGrid([]Axis{{Name: "n", Values: []string{"1", "x"}}}, parseTest)
	var axisErr *AxisError
	require.ErrorAs(t, err, &axisErr)
	assert.Equal(t, "n", axisErr.Axis)
	assert.Equal(t, "x", axisErr.Value)
	assert.True(t, errors.Is(err, strconv.ErrSyntax), "the parser's error is kept")

	_, err = NewGrid([]Axis{{Name: "n", Values: []string{"1"}}, {Name: "n", Values: []string{"2"}}}, parseTest)
	assert.EqualError(t, err, "axis n given twice")
}

func TestParetoBestUnderTheSLOs(t *testing.T) {
	var p Pareto[string]
	run := func(cell int, trace string, energy, ttft, tpot, unfinished float64) ParetoRun[string] {
		return ParetoRun[string]{Cell: cell, Profile: "p", Trace: trace, OK: true, TTFTSLOSeconds: 1, TPOTSLOSeconds: 0.1,
			EnergyPerOutputTokenJ: energy, P95TTFTS: ttft, P95TPOTS: tpot, UnfinishedRequests: unfinished, Data: strconv.Itoa(cell)}
	}
	p.Add(ParetoRun[string]{Cell: 0, Profile: "p", Trace: "t", TTFTSLOSeconds: 2}) // failed: no metrics
	p.Add(run(1, "t", 3, 0.5, 0.05, 0))
	p.Add(run(2, "t", 2, 0.9, 0.05, 0))
	p.Add(run(3, "t", 1, 0.2, 0.05, 4))   // cheapest and fastest, but unfinished requests
	p.Add(run(4, "t", 1.5, 1.5, 0.05, 0)) // misses the TTFT objective
	p.Add(run(5, "t", 2, 0.8, 0.2, 0))    // misses the TPOT objective
	p.Add(run(6, "t", 2, 0.9, 0.05, 0))   // ties cell 2: the earlier wins
	p.Add(run(7, "u", 9, 9, 9, 0))
	groups := p.Groups()
	require.Len(t, groups, 2)
	g := groups[0]
	assert.Equal(t, 1.0, g.TTFTSLOSeconds, "the objectives of the first run with metrics")
	require.NotNil(t, g.Best)
	assert.Equal(t, "2", g.Best.Data)
	var front []int
	for _, r := range g.Front() {
		front = append(front, r.Cell)
	}
	assert.Equal(t, []int{3}, front, "cell 3 beats every other run on both axes")
	assert.Nil(t, groups[1].Best)
}

func TestParetoJudgesEachRunByItsOwnObjectives(t *testing.T) {
	var p Pareto[string]
	// Runs under two service models take different default objectives.
	p.Add(ParetoRun[string]{Cell: 0, Profile: "p", Trace: "t", OK: true, TTFTSLOSeconds: 0.5, TPOTSLOSeconds: 0.03,
		EnergyPerOutputTokenJ: 1, P95TTFTS: 0.4, P95TPOTS: 0.05, Data: "reference"}) // misses its 0.03 s TPOT
	p.Add(ParetoRun[string]{Cell: 1, Profile: "p", Trace: "t", OK: true, TTFTSLOSeconds: 0.6, TPOTSLOSeconds: 0.09,
		EnergyPerOutputTokenJ: 2, P95TTFTS: 0.55, P95TPOTS: 0.06, Data: "batched"}) // within its own
	g := p.Groups()[0]
	require.NotNil(t, g.Best)
	assert.Equal(t, "batched", g.Best.Data)
	assert.Zero(t, g.TTFTSLOSeconds, "no one objective for the group")
	assert.Zero(t, g.TPOTSLOSeconds)
}
