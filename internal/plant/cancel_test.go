package plant

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// cancellingController is the maximum-clock controller that cancels its
// run's context at its cancelAt-th step and counts the steps it is asked.
type cancellingController struct {
	MaxClock
	cancel   context.CancelFunc
	cancelAt int
	steps    int
}

func (c *cancellingController) RequestClock(obs Observation) float64 {
	c.steps++
	if c.steps == c.cancelAt {
		c.cancel()
	}
	return c.MaxClock.RequestClock(obs)
}

func TestSimulateContextStopsWithinTheCheckSteps(t *testing.T) {
	w, err := DefaultTrace(NoElapsedLimit)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl := &cancellingController{cancel: cancel, cancelAt: 100}
	_, err = RunContext(ctx, w, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: ctrl})
	require.ErrorIs(t, err, context.Canceled)
	assert.LessOrEqual(t, ctrl.steps, CancelCheckSteps, "the run stops at the first check after the cancellation")

	// Without a cancellation the same run goes on to its end.
	whole := &cancellingController{cancel: func() {}, cancelAt: -1}
	_, err = Simulate(w.Requests, NewPlant(profile.Default()), ChunkedPrefill{}, whole, Options{Summary: true})
	require.NoError(t, err)
	assert.Greater(t, whole.steps, 4*CancelCheckSteps)
}
