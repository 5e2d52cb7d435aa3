package plant

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// windowWorkload is an hour of the synthetic code-like trace at 12
// requests a second (about 43,000 requests), stretched to 70% load, with
// summary runs reserving room for 1024 records at first: long enough for
// them to drop the records of completed requests many times.
func windowWorkload(t *testing.T) []Request {
	t.Helper()
	window := compactWindow
	compactWindow = 1 << 10
	t.Cleanup(func() { compactWindow = window })
	c := CodeTraceLike(5, 3600)
	c.MeanRequestsPerS, c.BurstGapS = 12, 0.02
	requests := c.Requests()
	_, err := NormalizeOfferedLoadInPlace(requests, profile.Default(), 0.7)
	require.NoError(t, err)
	return requests
}

// sameMetrics asserts that two runs have the same metrics and slo block to
// the last bit, NaN included (their shortest decimal forms agree).
func sameMetrics(t *testing.T, want, got *Result) {
	t.Helper()
	assert.Equal(t, fmt.Sprintf("%+v", want.Metrics), fmt.Sprintf("%+v", got.Metrics), "metrics")
	wantSLO, gotSLO := want.SLO, got.SLO
	assert.Equal(t, wantSLO.E2ESLOSeconds, gotSLO.E2ESLOSeconds)
	wantSLO.E2ESLOSeconds, gotSLO.E2ESLOSeconds = nil, nil
	assert.Equal(t, fmt.Sprintf("%+v", wantSLO), fmt.Sprintf("%+v", gotSLO), "slo block")
}

// TestSummaryDropsRecordsAndKeepsTheMetrics: a summary run holds only the
// records of the requests in flight (and some completed among them), yet
// its metrics and slo block are the full run's bit for bit, whether every
// request completes, the run stops at MaxSimulationTimeS with requests
// queued, decoding and never arrived, or the horizon lies past the end.
func TestSummaryDropsRecordsAndKeepsTheMetrics(t *testing.T) {
	requests := windowWorkload(t)
	last := requests[len(requests)-1].ArrivalTimeS
	tests := []struct {
		name       string
		sched      Scheduler
		ctrl       func() ClockController
		maxSimS    float64
		horizonS   float64
		slo        SLO
		unfinished bool
	}{
		{"chunked max, all complete", ChunkedPrefill{}, func() ClockController { return MaxClock{} }, 2 * last, 60, SLO{}, false},
		{"static reactive, e2e objective", StaticBatch{}, func() ClockController { return Reactive{} }, 2 * last, 600, SLO{TTFTSeconds: 20, E2ESeconds: 60}, false},
		{"continuous min, stopped early", ContinuousBatch{}, func() ClockController { return MinClock{} }, last / 2, 60, SLO{}, true},
		{"chunked user policy, horizon past the end", userScheduler{ChunkedPrefill{}}, func() ClockController { return userController{Reactive{}} }, last / 3, last, SLO{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlant(profile.Default())
			p.MaxSimulationTimeS, p.ReportingHorizonS = tt.maxSimS, tt.horizonS
			full, err := Simulate(requests, p, tt.sched, tt.ctrl(), Options{Stride: 1000, SLO: tt.slo})
			require.NoError(t, err)
			require.Len(t, full.Requests, len(requests))

			sim, err := startSimulation(requests, p, tt.sched, tt.ctrl(), Options{Summary: true, SLO: tt.slo})
			require.NoError(t, err)
			// held is the most records held; span the most records from
			// the oldest request in flight to the newest.
			held, span := 0, 0
			for {
				done, err := sim.advance()
				require.NoError(t, err)
				held = max(held, cap(sim.records))
				first := sim.head
				for _, i := range sim.active {
					first = min(first, i)
				}
				span = max(span, len(sim.records)-first)
				if done {
					break
				}
			}
			require.NoError(t, sim.drain())
			summary := sim.result(WorkloadChecksum(requests), Options{Summary: true, SLO: tt.slo})

			assert.Positive(t, sim.dropped, "records dropped")
			if 4*span < len(requests) {
				assert.LessOrEqual(t, held, 2*span+compactWindow, "records held at most")
			} else {
				// Requests in flight near half of those still to come:
				// room for all of them.
				assert.LessOrEqual(t, held, len(requests), "records held at most")
			}
			if !tt.unfinished {
				assert.Less(t, held, len(requests)/4, "records held at most")
			}
			assert.Equal(t, tt.unfinished, full.Metrics.UnfinishedRequestsAtEnd > 0)
			sameMetrics(t, full, summary)
			assert.Equal(t, full.Steps, summary.Steps)
			assert.Nil(t, summary.Requests)
		})
	}
}

// TestSummaryWithRequestLogKeepsRecords: a request log needs every record.
func TestSummaryWithRequestLogKeepsRecords(t *testing.T) {
	requests := windowWorkload(t)[:5000]
	sim, err := startSimulation(requests, NewPlant(profile.Default()), ChunkedPrefill{}, MaxClock{}, Options{Summary: true, RequestLog: true})
	require.NoError(t, err)
	for {
		done, err := sim.advance()
		require.NoError(t, err)
		if done {
			break
		}
	}
	require.NoError(t, sim.drain())
	assert.Zero(t, sim.dropped)
	assert.Len(t, sim.records, len(requests))
}

// TestSummaryWithServerStateKeepsRecords: a controller that sees the server
// state names requests by their place among the records, which are kept.
func TestSummaryWithServerStateKeepsRecords(t *testing.T) {
	requests := windowWorkload(t)[:3000]
	c, err := NewController("mpc")
	require.NoError(t, err)
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 120
	sim, err := startSimulation(requests, p, ChunkedPrefill{}, c, Options{Summary: true})
	require.NoError(t, err)
	for {
		done, err := sim.advance()
		require.NoError(t, err)
		if done {
			break
		}
	}
	assert.False(t, sim.compacting)
	assert.Zero(t, sim.dropped)
}

// TestSummarizingStepperHoldsRoomForWhatItHolds: a Stepper that drops its
// records, fed a few requests at a time (a replica of a large fleet), holds
// room for about as many records as it has in flight, not compactWindow
// (5.8 MB of records and progress each; 1024 replicas of a streamed fleet
// reserved 5.6 GB).
func TestSummarizingStepperHoldsRoomForWhatItHolds(t *testing.T) {
	for _, expected := range []int{0, 40, 100} { // unknown, then known
		st := newTestStepper(t, NewPlant(profile.Default()), "chunked", "max", Options{Summary: true})
		st.Summarize(expected, func(*RequestRecord) {})
		requests := smallWorkload(t)
		for i, r := range requests[:40] {
			r.ArrivalTimeS = float64(i) * 5
			require.NoError(t, st.Add(r))
			for st.sim.timeS < r.ArrivalTimeS+4 {
				_, err := st.Step()
				require.NoError(t, err)
			}
		}
		room := max(64, expected+expected/4)
		assert.LessOrEqual(t, cap(st.sim.records), room, "room for records, %d expected", expected)
		assert.LessOrEqual(t, cap(st.sim.progress), room, "room for progress, %d expected", expected)
	}
}
