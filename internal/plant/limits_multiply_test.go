package plant

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestCheckPlantsAtOnce(t *testing.T) {
	prefix := EngineOptions{PrefixCache: true}
	tests := []struct {
		name      string
		kvTokens  float64
		opt       Options
		plants    int
		wantLimit string // "" when the plants fit
		wantValue float64
	}{
		{"one plant, every step", 131072, Options{Stride: 1}, 1, "", 0},
		{"277 replicas of 36001 samples fit", 131072, Options{Stride: 1}, 277, "", 0},
		{"278 do not", 131072, Options{Stride: 1}, 278, LimitTrajectorySamples, 36002 * 278},
		{"a stride keeps them in", 131072, Options{Stride: 2}, 278, "", 0},
		{"summaries keep no samples", 131072, Options{Summary: true}, 4096, "", 0},
		{"4096 default prefix caches fit exactly", 131072, Options{Summary: true, Engine: prefix}, 4096, "", 0},
		{"16 of the largest fit", 1 << 25, Options{Summary: true, Engine: prefix}, 16, "", 0},
		{"17 do not", 1 << 25, Options{Summary: true, Engine: prefix}, 17, LimitLiveKVBlocks, 17 << 21},
		{"without the prefix cache no block counts", 1 << 25, Options{Summary: true}, 4096, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlant(profile.Default())
			p.KVCapacityTokens = tt.kvTokens
			err := CheckPlantsAtOnce(p, tt.opt, tt.plants)
			if tt.wantLimit == "" {
				require.NoError(t, err)
				return
			}
			var le *LimitError
			require.True(t, errors.As(err, &le), "got %v", err)
			assert.Equal(t, tt.wantLimit, le.Limit)
			assert.Equal(t, tt.wantValue, le.Value)
			assert.Equal(t, tt.plants, le.Plants)
		})
	}
}

func TestCheckPlantsAtOnceKeepsTheStepLimit(t *testing.T) {
	p := NewPlant(profile.Default())
	p.TimeStepS = 1e-9
	var le *LimitError
	require.True(t, errors.As(CheckPlantsAtOnce(p, Options{Summary: true}, 8), &le))
	assert.Equal(t, LimitSteps, le.Limit)
	assert.Equal(t, 8, le.Plants)
}

func TestPlantsAtOnce(t *testing.T) {
	p := NewPlant(profile.Default())
	assert.Equal(t, math.MaxInt, PlantsAtOnce(p, EngineOptions{}), "no prefix cache: no bound")
	assert.Equal(t, 4096, PlantsAtOnce(p, EngineOptions{PrefixCache: true}), "8192 blocks each")
	p.KVCapacityTokens = 1 << 25
	assert.Equal(t, 16, PlantsAtOnce(p, EngineOptions{PrefixCache: true}))
	assert.Equal(t, 8192, PrefixCacheBlocks(NewPlant(profile.Default()), EngineOptions{PrefixCache: true}))
}

func TestMinFleetStride(t *testing.T) {
	assert.Equal(t, 2.0, MinFleetStride(36001, 278))
	assert.Equal(t, 1.0, MinFleetStride(36001, 277))
	// The stride it gives keeps the replicas within the limit.
	for _, plants := range []int{2, 278, 1024, 4096} {
		stride := MinFleetStride(36001, plants)
		p := NewPlant(profile.Default())
		require.NoError(t, CheckPlantsAtOnce(p, Options{Stride: int(stride)}, plants), "%d plants at stride %g", plants, stride)
	}
}
