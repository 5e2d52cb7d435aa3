// Package interrupt is how servesim ends on SIGINT and SIGTERM: the
// interruption a signal makes the cause of a run's context (Of), and the
// watcher a sweep or a capacity shard uses instead, to finish the runs under
// way and keep what it wrote (Watch, Stopped). Both end the process with the
// exit code a shell reports for a process a signal ended: 128 plus the
// signal's number (130 for SIGINT, 143 for SIGTERM). Both first end what
// the process started outside itself (KillOnInterrupt: the exec:
// controllers' children). The package prints nothing and never exits: the
// command does both.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Signals are the signals servesim ends on by itself, with their names.
var Signals = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}

// Interruption is the cause of an interrupted run's context: the signal,
// and an error whose exit code is 128 plus the signal's number.
type Interruption struct {
	sig  syscall.Signal
	name string
	// ending is held, until the process exits, by whichever ends the run
	// first: the run itself or the command's grace timer, so that the
	// run's one line is written once.
	ending sync.Mutex
	// signalled: the interruption is OnSignal's, which ends what the
	// process started outside itself (KillOnInterrupt).
	signalled bool
}

// New is the interruption of a run by sig.
func New(sig syscall.Signal) *Interruption {
	name := Signals[sig]
	if name == "" {
		name = sig.String()
	}
	return &Interruption{sig: sig, name: name}
}

// Error reads "interrupted by SIGINT".
func (i *Interruption) Error() string { return "interrupted by " + i.name }

// ExitCode is 128 plus the signal's number.
func (i *Interruption) ExitCode() int { return 128 + int(i.sig) }

// End claims the ending of the run: the first caller returns, any later
// one waits for ever (the process exits meanwhile). After a signal
// (OnSignal) the first caller returns once what the process started
// outside itself has ended (KillOnInterrupt), also what a run started
// after the signal.
func (i *Interruption) End() {
	i.ending.Lock()
	if i.signalled {
		killAll()
	}
}

// Of returns what interrupted ctx's run, or nil.
func Of(ctx context.Context) *Interruption {
	in, _ := context.Cause(ctx).(*Interruption)
	return in
}

// Grace is how long an interrupted sweep or capacity shard waits for the
// runs under way: less than the time Kubernetes (30 s) and Slurm
// (KillWait, 30 s) leave between SIGTERM and SIGKILL. A second signal ends
// the wait.
const Grace = 10 * time.Second

// OnSignal makes SIGINT and SIGTERM end a run: the first signal calls
// abort (which removes unfinished output), cancels the returned context
// with an *Interruption as its cause, so that the run's loops stop, and
// ends what the process started outside itself (KillOnInterrupt), so that
// a run waiting for an exec: controller's child stops too; if the run has not ended grace later, or
// on a second signal, end is called with the interruption (to write the
// run's line and exit). SIGPIPE keeps the Go runtime's default.
func OnSignal(grace time.Duration, abort func(), end func(*Interruption)) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	for sig := range Signals {
		signal.Notify(signals, sig)
	}
	go func() {
		in := New((<-signals).(syscall.Signal))
		in.signalled = true
		abort()
		cancel(in)
		killAll()
		select {
		case <-signals:
		case <-time.After(grace):
		}
		end(in)
	}()
	return ctx
}

// killers end what the process started outside itself; KillOnInterrupt
// registers them.
var killers struct {
	sync.Mutex
	kill []func()
}

// KillOnInterrupt registers kill, which ends what the process started
// outside itself and waits for it to end (package plant registers its exec:
// controllers' children): an interruption calls it before the process
// exits, OnSignal at the first signal and again when the run ends (End), a
// Watcher when it is released after a signal.
func KillOnInterrupt(kill func()) {
	killers.Lock()
	defer killers.Unlock()
	killers.kill = append(killers.kill, kill)
}

// killAll calls every registered kill.
func killAll() {
	killers.Lock()
	kill := slices.Clone(killers.kill)
	killers.Unlock()
	for _, k := range kill {
		k()
	}
}
