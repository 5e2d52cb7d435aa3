package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// defaultFleet is n replicas of the embedded profile under sched and ctrl.
func defaultFleet(n int, sched, ctrl string) Config {
	return Config{
		Plant:  plant.NewPlant(nil),
		Groups: []Group{{Replicas: n, Profile: profile.Default(), Scheduler: sched, Controller: ctrl}},
	}
}

// embeddedTrace is the embedded synthetic trace.
func embeddedTrace(t testing.TB) []plant.Request {
	w, err := plant.DefaultTrace(plant.NoElapsedLimit)
	require.NoError(t, err)
	return w.Requests
}

func TestRoundRobinReplicaIsSimulateOnItsSubList(t *testing.T) {
	requests := embeddedTrace(t)
	for _, n := range []int{1, 2, 3, 7} {
		cfg := defaultFleet(n, "chunked", "reactive")
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		for k := range n {
			var sub []plant.Request
			for i := k; i < len(requests); i += n {
				sub = append(sub, requests[i])
			}
			p := plant.NewPlant(profile.Default())
			want, err := plant.Simulate(sub, p, plant.ChunkedPrefill{}, plant.Reactive{}, plant.Options{})
			require.NoError(t, err)
			got := res.Replicas[k].Result
			require.Equal(t, want.Metrics, got.Metrics, "replica %d of %d", k, n)
			require.Equal(t, want.Trajectory, got.Trajectory, "replica %d of %d", k, n)
		}
	}
}

// lockStepped hides a router's StateFree, forcing lock-step stepping.
type lockStepped struct{ Router }

func TestLockStepEqualsParallelSmoke(t *testing.T) {
	requests := embeddedTrace(t)
	for _, n := range []int{1, 2, 5} {
		cfg := defaultFleet(n, "chunked", "reactive")
		par, err := Simulate(requests, cfg)
		require.NoError(t, err)
		cfg.Router = lockStepped{&RoundRobin{}}
		ls, err := Simulate(requests, cfg)
		require.NoError(t, err)
		require.Equal(t, par.Steps, ls.Steps)
		for k := range n {
			require.Equal(t, par.Replicas[k].Result.Metrics, ls.Replicas[k].Result.Metrics, "replica %d of %d", k, n)
			require.Equal(t, par.Replicas[k].Result.Trajectory, ls.Replicas[k].Result.Trajectory, "replica %d of %d", k, n)
		}
		require.Equal(t, par.Metrics, ls.Metrics)
		require.Equal(t, par.PowerW, ls.PowerW)
	}
}
