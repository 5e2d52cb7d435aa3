package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// TestLostErrorBound: the bound is the share of requests not lost yet.
func TestLostErrorBound(t *testing.T) {
	e := &LostError{Lost: 25, Total: 100, Target: 0.9}
	assert.InDelta(t, 0.75, e.Bound(), 1e-15)
	assert.Contains(t, e.Error(), "25 of 100 requests lost")
}

// TestStreamedRunKeepsWhatItsCallerNeeds: a streamed run of an overloaded
// fleet keeps its attainment and TTFT percentiles bit for bit when it
// keeps only the TTFT samples (its TPOT metrics are then NaN) and no
// replica checksum; asked to stop below an attainment it cannot reach, it
// stops with a *LostError bounding it, and runs whole below one it
// reaches. Under both routing paths (in parallel and in lock-step).
func TestStreamedRunKeepsWhatItsCallerNeeds(t *testing.T) {
	w := codeLike(3, 4, 600)
	for _, router := range []string{RoundRobinName, LeastOutstandingName} {
		t.Run(router, func(t *testing.T) {
			run := func(set func(*Config)) (*Result, error) {
				r, err := NewRouter(router, 1)
				require.NoError(t, err)
				cfg := defaultFleet(1, "chunked", "max")
				cfg.Router, cfg.Options = r, plant.Options{Summary: true, SLO: plant.SLO{TTFTSeconds: 5}}
				set(&cfg)
				ws, err := plant.OpenWorkloadStream(context.Background(), heldSource{w}, 0, nil, 0)
				require.NoError(t, err)
				defer ws.Close()
				return SimulateStream(context.Background(), ws, cfg)
			}
			whole, err := run(func(*Config) {})
			require.NoError(t, err)
			attainment := whole.SLO.Attainment
			require.Less(t, attainment, 0.5, "one replica cannot serve the trace")
			require.NotEmpty(t, whole.Replicas[0].Result.WorkloadChecksum)
			require.False(t, math.IsNaN(whole.Metrics.MeanTPOTS))

			lean, err := run(func(c *Config) { c.TTFTOnly, c.SkipReplicaChecksums = true, true })
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(whole.SLO.Attainment, whole.SLO.TTFTS, whole.Metrics.P95TTFTS, whole.Metrics.EnergyJ),
				fmt.Sprint(lean.SLO.Attainment, lean.SLO.TTFTS, lean.Metrics.P95TTFTS, lean.Metrics.EnergyJ))
			assert.True(t, math.IsNaN(lean.Metrics.MeanTPOTS))
			assert.Empty(t, lean.Replicas[0].Result.WorkloadChecksum)

			_, err = run(func(c *Config) { c.StopBelowAttainment = 0.9 })
			var lost *LostError
			require.True(t, errors.As(err, &lost), "%v", err)
			assert.Equal(t, len(w.Requests), lost.Total)
			assert.Less(t, lost.Bound(), 0.9)
			assert.GreaterOrEqual(t, lost.Bound(), attainment)

			reached, err := run(func(c *Config) { c.StopBelowAttainment = attainment / 2 })
			require.NoError(t, err)
			assert.Equal(t, attainment, reached.SLO.Attainment)
		})
	}
}
