package fleet

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// TestControllerBuiltSeesEveryReplicasController runs a fleet on the
// parallel path and in lock step: ControllerBuilt is given each replica's
// own controller once, and the result is the same as without it.
func TestControllerBuiltSeesEveryReplicasController(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)
	for _, router := range []Router{nil, lockStepped{&RoundRobin{}}} {
		cfg := defaultFleet(4, "chunked", "reactive")
		cfg.Router = router
		want, err := Simulate(requests, cfg)
		require.NoError(t, err)
		var mu sync.Mutex
		seen := map[int]plant.ClockController{}
		cfg.ControllerBuilt = func(k int, c plant.ClockController) {
			mu.Lock()
			defer mu.Unlock()
			_, again := seen[k]
			assert.False(t, again, "replica %d built twice", k)
			seen[k] = c
		}
		got, err := Simulate(requests, cfg)
		require.NoError(t, err)
		assert.Len(t, seen, 4)
		for k := range 4 {
			assert.NotNil(t, seen[k], "replica %d", k)
		}
		requireSameFleet(t, want, got)
	}
}
