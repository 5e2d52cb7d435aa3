package plant

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// workloadSource reads a workload held whole, counting its passes.
type workloadSource struct {
	w        Workload
	estimate int
	passes   int
	returned int // passes that have returned
	failAt   int // fail when emitting this request (0: never)
}

func (s *workloadSource) Read(emit func(Request) error) (Workload, error) {
	s.passes++
	defer func() { s.returned++ }()
	for i, r := range s.w.Requests {
		if s.failAt > 0 && i == s.failAt {
			return Workload{}, errors.New("trace t.csv line 9: bad row")
		}
		if err := emit(r); err != nil {
			return Workload{}, err
		}
	}
	return Workload{Source: s.w.Source, SHA256: s.w.SHA256, Skipped: s.w.Skipped}, nil
}

func (s *workloadSource) Estimate() int { return s.estimate }

// TestRunStreamIsRun: a workload streamed gives Run's report, whatever the
// options, in one pass without normalization and two with it.
func TestRunStreamIsRun(t *testing.T) {
	requests := windowWorkload(t)[:20_000]
	w := Workload{Requests: requests, Source: "t.csv", SHA256: "abc", Skipped: map[string]int{"filtered": 2}}
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 2 * requests[len(requests)-1].ArrivalTimeS
	tests := []struct {
		name      string
		normalize float64
		opt       Options
		estimate  int
		maxSimS   float64
	}{
		{"summary", 0, Options{Summary: true}, 0, 0},
		{"summary, normalized", 0.7, Options{Summary: true}, 0, 0},
		{"summary, estimated", 0, Options{Summary: true}, len(requests), 0},
		{"trajectory and records", 0.6, Options{Stride: 100}, 0, 0},
		{"request log", 0, Options{Summary: true, RequestLog: true}, 0, 0},
		{"stopped early", 0.9, Options{Summary: true}, 0, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plant := p
			if tt.maxSimS != 0 {
				plant.MaxSimulationTimeS = tt.maxSimS
			}
			cfg := Config{Plant: plant, Scheduler: ChunkedPrefill{}, Controller: Reactive{}, Normalize: tt.normalize, Options: tt.opt, Version: "v"}
			want, err := Run(w, cfg)
			require.NoError(t, err)
			src := &workloadSource{w: w, estimate: tt.estimate}
			got, err := RunStream(src, cfg)
			require.NoError(t, err)
			wantPasses := 1
			if tt.normalize != 0 {
				wantPasses = 2
			}
			assert.Equal(t, wantPasses, src.passes, "passes over the workload")
			sameMetrics(t, &want.Result, &got.Result)
			assert.Equal(t, want.WorkloadChecksum, got.WorkloadChecksum)
			assert.Equal(t, want.Dilation, got.Dilation)
			assert.Equal(t, want.Provenance, got.Provenance)
			assert.Equal(t, want.Trajectory, got.Trajectory)
			assert.Equal(t, want.Requests, got.Requests)
			assert.Equal(t, want.Log, got.Log)
			assert.Equal(t, want.Steps, got.Steps)
			assert.Equal(t, want.LastArrivalS, got.LastArrivalS)
		})
	}
}

// TestRunStreamErrors: a read error, a request failing the workload checks
// and an empty workload end the run with their error, and the reader has
// returned when RunStream does.
func TestRunStreamErrors(t *testing.T) {
	requests := smallWorkload(t)
	unsorted := append([]Request(nil), requests...)
	unsorted[300].ArrivalTimeS = 0
	duplicate := append([]Request(nil), requests...)
	duplicate[300].ID = 7
	bad := append([]Request(nil), requests...)
	bad[300].PromptTokens = 0
	tests := []struct {
		name      string
		src       *workloadSource
		normalize float64
		want      string
	}{
		{"read error", &workloadSource{w: Workload{Requests: requests}, failAt: 200}, 0, "line 9: bad row"},
		{"read error while normalizing", &workloadSource{w: Workload{Requests: requests}, failAt: 200}, 0.5, "line 9: bad row"},
		{"unsorted", &workloadSource{w: Workload{Requests: unsorted}}, 0, "sorted by arrival_time_s"},
		{"duplicate identifier", &workloadSource{w: Workload{Requests: duplicate}}, 0, "identifiers must be unique"},
		{"bad request", &workloadSource{w: Workload{Requests: bad}}, 0, "request 300: token counts must be positive"},
		{"empty", &workloadSource{}, 0, "at least one request"},
		{"empty, normalized", &workloadSource{}, 0.5, "at least one request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: tt.normalize, Options: Options{Summary: true}}
			_, err := RunStream(tt.src, cfg)
			assert.ErrorContains(t, err, tt.want)
			assert.Equal(t, tt.src.passes, tt.src.returned, "every pass over the workload has ended")
		})
	}

}

// TestPipeStopsItsReader: closing a pipe before its end stops the reader,
// which sees the error emit returns.
func TestPipeStopsItsReader(t *testing.T) {
	var readErr error
	p := newPipe(func(emit func(Request) error) (Workload, error) {
		for i := 0; ; i++ {
			if err := emit(Request{ID: i, ArrivalTimeS: float64(i), PromptTokens: 1, OutputTokens: 1}); err != nil {
				readErr = err
				return Workload{}, err
			}
		}
	})
	for i := range 3 * pipeBatch {
		r, ok := p.Next()
		require.True(t, ok)
		require.Equal(t, i, r.ID)
	}
	p.Close()
	assert.ErrorIs(t, readErr, errPipeClosed)
}

// TestPipePanicsInTheConsumer: a reader's panic is raised by Next, in the
// goroutine that can recover it.
func TestPipePanicsInTheConsumer(t *testing.T) {
	p := newPipe(func(emit func(Request) error) (Workload, error) { panic("reader bug") })
	defer p.Close()
	assert.PanicsWithValue(t, "reader bug", func() { p.Next() })
}

// TestRunStreamRefusesClairvoyance: a controller that must see the whole
// workload first cannot run on a stream.
func TestRunStreamRefusesClairvoyance(t *testing.T) {
	c, err := NewController("mpc-clairvoyant")
	require.NoError(t, err)
	_, err = RunStream(&workloadSource{w: Workload{Requests: smallWorkload(t)}}, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: c, Options: Options{Summary: true}})
	assert.ErrorContains(t, err, "needs the whole workload in advance")
}

// TestRunStreamContextStops: a cancelled context ends the run, or its
// normalization pass, with the context's error.
func TestRunStreamContextStops(t *testing.T) {
	requests := windowWorkload(t)[:10_000]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, normalize := range []float64{0, 0.7} {
		src := &workloadSource{w: Workload{Requests: requests}}
		cfg := Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: normalize, Options: Options{Summary: true}}
		_, err := RunStreamContext(ctx, src, cfg)
		assert.ErrorIs(t, err, context.Canceled, "normalize %v", normalize)
		assert.Equal(t, src.passes, src.returned)
	}
}
