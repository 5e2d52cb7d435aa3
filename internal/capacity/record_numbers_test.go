package capacity

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
)

// TestCapacityRecordsKeepEveryNumber writes evaluations as a shard does and
// reads them back: every number comes back with the same bits (NaN as
// NaN), so the final run's document is the plain run's.
func TestCapacityRecordsKeepEveryNumber(t *testing.T) {
	t.Parallel()
	grid := Grid{Sizes: []int{1, 2, 4}, Digest: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	special := []float64{0, 1, math.NaN(), math.Copysign(0, -1), 5e-324, math.SmallestNonzeroFloat64 * 3, 1e-7, 1e21, 1e15, 999999999999999.9,
		math.MaxFloat64, 0.1 + 0.2, 2.3000202995371297, 33777.541884716404}
	rng := rand.New(rand.NewPCG(3, 4))
	path := filepath.Join(t.TempDir(), "cap.jsonl")
	values := func(k int) float64 {
		if k < len(special) {
			return special[k]
		}
		return math.Float64frombits(rng.Uint64() &^ (1 << 63)) // any nonnegative bits, NaN and Inf aside below
	}
	for k := range 2000 {
		e := Evaluation{Replicas: 4, Attainment: rng.Float64(), CompletedFraction: values(k), P95TTFTS: values(k + 1),
			P99TTFTS: values(k + 2), EnergyPerOutputTokenJ: values(k + 3), PeakPowerW: values(k + 4),
			EnergyPerRequestJ: values(k + 5), EnergyPer1kRequestsKJ: values(k + 6), EnergyKWh: values(k + 7), MeanPowerW: values(k + 8)}
		for _, x := range []*float64{&e.CompletedFraction, &e.P95TTFTS, &e.P99TTFTS, &e.EnergyPerOutputTokenJ, &e.PeakPowerW,
			&e.EnergyPerRequestJ, &e.EnergyPer1kRequestsKJ, &e.EnergyKWh, &e.MeanPowerW} {
			if math.IsInf(*x, 0) {
				*x = math.NaN() // never an evaluation's: the document writes both as null
			}
		}
		line, err := jsonout.AppendLine(nil, grid.Record(2, e))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, line, 0o644))
		known, err := grid.ReadEvaluations([]string{path}, nil)
		require.NoError(t, err, "%s", line)
		require.Len(t, known.Evaluations, 1)
		got := known.Evaluations[0]
		for i, pair := range [][2]float64{{e.Attainment, got.Attainment}, {e.CompletedFraction, got.CompletedFraction},
			{e.P95TTFTS, got.P95TTFTS}, {e.P99TTFTS, got.P99TTFTS}, {e.EnergyPerOutputTokenJ, got.EnergyPerOutputTokenJ},
			{e.PeakPowerW, got.PeakPowerW}, {e.EnergyPerRequestJ, got.EnergyPerRequestJ}, {e.EnergyPer1kRequestsKJ, got.EnergyPer1kRequestsKJ},
			{e.EnergyKWh, got.EnergyKWh}, {e.MeanPowerW, got.MeanPowerW}} {
			if math.IsNaN(pair[0]) {
				assert.True(t, math.IsNaN(pair[1]), "number %d of %s", i, line)
				continue
			}
			assert.Equal(t, math.Float64bits(pair[0]), math.Float64bits(pair[1]), "number %d of %s", i, line)
		}
		// The document writes the numbers the record holds, character for character.
		doc, err := jsonout.Chunks(got)
		require.NoError(t, err)
		want, err := jsonout.Chunks(e)
		require.NoError(t, err)
		require.Equal(t, string(bytes.Join(want, nil)), string(bytes.Join(doc, nil)))
	}
}
