//go:build unix

package interrupt

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestInterruptionIsTheContextsCause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	assert.Nil(t, Of(ctx))
	in := New(syscall.SIGTERM)
	cancel(in)
	assert.Same(t, in, Of(ctx))
	assert.EqualError(t, in, "interrupted by SIGTERM")
	assert.Equal(t, 143, in.ExitCode())
	assert.Equal(t, 130, New(syscall.SIGINT).ExitCode())
	other, cancelOther := context.WithCancelCause(context.Background())
	cancelOther(errors.New("not a signal"))
	assert.Nil(t, Of(other))
}

func TestStoppedSaysWhatWasWrittenWhere(t *testing.T) {
	t.Parallel()
	e := &Stopped{Signal: syscall.SIGINT, Task: "sweep", Written: 30, Total: 150, Unit: "runs", Where: "stdout"}
	assert.EqualError(t, e, "sweep interrupted: 30 of 150 runs written to stdout")
	assert.Equal(t, 130, e.ExitCode())
	e.Where, e.Next = "s.jsonl.partial", errors.New("rerun with --resume s.jsonl.partial")
	assert.EqualError(t, e, "sweep interrupted: 30 of 150 runs written to s.jsonl.partial; rerun with --resume s.jsonl.partial")
}

// TestWatcherStopsInTwoStages sends the process SIGINT: Start closes at
// once and Wait after the grace period; Release, after a signal only,
// calls what KillOnInterrupt registered.
func TestWatcherStopsInTwoStages(t *testing.T) {
	kills := 0
	KillOnInterrupt(func() { kills++ })
	quiet := Watch(time.Second)
	quiet.Release()
	assert.Zero(t, kills, "no signal, nothing killed")

	w := Watch(50 * time.Millisecond)
	assert.Equal(t, syscall.Signal(0), w.Signal())
	start := time.Now()
	assert.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	<-w.Start()
	assert.Equal(t, syscall.SIGINT, w.Signal())
	select {
	case <-w.Wait():
		t.Fatal("Wait closed before the grace period")
	default:
	}
	<-w.Wait()
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.Zero(t, kills, "the runs under way go on")
	w.Release()
	assert.Equal(t, 1, kills)
}
