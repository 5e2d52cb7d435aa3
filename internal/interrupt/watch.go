package interrupt

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// A Watcher turns SIGINT and SIGTERM into a stop in two stages: the first
// signal closes Start (start no further run), and Wait closes when the
// grace period has passed since or a second signal comes (stop waiting
// for the runs under way).
type Watcher struct {
	start, wait chan struct{}
	done        chan struct{}
	signals     chan os.Signal
	mu          sync.Mutex
	sig         os.Signal // the first signal; nil until one comes
}

// Watch starts turning signals into a stop. The caller takes SIGINT and
// SIGTERM over while it runs: signal.Reset drops any handler installed
// before (servesim's own, which would end the process at once), so that
// the runs under way are written and the partial output kept; Release
// gives the signals their default behaviour back, just before the process
// ends.
func Watch(grace time.Duration) *Watcher {
	w := &Watcher{start: make(chan struct{}), wait: make(chan struct{}), done: make(chan struct{}), signals: make(chan os.Signal, 2)}
	signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	signal.Notify(w.signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-w.signals:
			w.mu.Lock()
			w.sig = sig
			w.mu.Unlock()
			close(w.start)
		case <-w.done:
			return
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-w.signals:
		case <-timer.C:
		case <-w.done:
			return
		}
		close(w.wait)
	}()
	return w
}

// Start is closed by the first signal.
func (w *Watcher) Start() <-chan struct{} { return w.start }

// Wait is closed when the grace period after the first signal has passed,
// or by a second signal.
func (w *Watcher) Wait() <-chan struct{} { return w.wait }

// Signal returns the first signal received, or 0.
func (w *Watcher) Signal() syscall.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	sig, _ := w.sig.(syscall.Signal)
	return sig
}

// Release stops watching: the signals get their default behaviour back.
// After a signal, it ends what the runs still under way, whose results
// are not waited for, started outside the process (KillOnInterrupt): the
// process is about to exit.
func (w *Watcher) Release() {
	signal.Stop(w.signals)
	close(w.done)
	if w.Signal() != 0 {
		killAll()
	}
}

// Stopped ends a task a Watcher stopped: "sweep interrupted: 30 of 150 runs
// written to sweep.jsonl.partial; rerun with --resume
// sweep.jsonl.partial", with the exit code 128 + the signal's number.
type Stopped struct {
	Signal         syscall.Signal
	Task           string // "sweep", "capacity shard"
	Written, Total int
	Unit           string // what Written counts: "runs", "sizes"
	Where          string // stdout, or the file that holds the records
	// Next, when not nil, says what to do with the records at Where: an
	// error, so that the settings it names (a run package's
	// *runparams.FieldError) are worded as the command's flags.
	Next error
}

// Error says what was written where.
func (e *Stopped) Error() string {
	msg := fmt.Sprintf("%s interrupted: %d of %d %s written to %s", e.Task, e.Written, e.Total, e.Unit, e.Where)
	if e.Next != nil {
		msg += "; " + e.Next.Error()
	}
	return msg
}

// Unwrap returns Next, what to do with the records.
func (e *Stopped) Unwrap() error { return e.Next }

// ExitCode is 128 plus the signal's number.
func (e *Stopped) ExitCode() int { return 128 + int(e.Signal) }
