package fleet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimulateContextStops: a fleet run, on either path (replicas in
// parallel or in lock-step), returns its context's error once the context
// is done, instead of running to the end.
func TestSimulateContextStops(t *testing.T) {
	requests := embeddedTrace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, router := range []Router{&RoundRobin{}, lockStepped{&RoundRobin{}}} {
		cfg := defaultFleet(2, "chunked", "max")
		cfg.Router = router
		_, err := SimulateContext(ctx, requests, cfg)
		require.ErrorIs(t, err, context.Canceled, "%T", router)
	}
}
