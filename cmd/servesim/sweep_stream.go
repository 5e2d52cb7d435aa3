package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"servesim/internal/sweep"
)

// sweepSink is where a sweep writes its output as it goes: standard
// output; or, for -o FILE, a temporary file in FILE's folder that becomes
// FILE when the sweep completes and FILE.partial when it is interrupted
// (FILE is never left half written); or, when FILE is a device or a FIFO,
// FILE itself. Every write is one system call, so each record is out of
// the process as soon as it is written.
type sweepSink struct {
	w      io.Writer
	file   *os.File // the file written, nil for standard output
	path   string   // -o as given
	target string   // the file -o names, links followed
	tmp    string   // the temporary file; "" when writing directly
}

// openSweepSink opens the sink of out.
func openSweepSink(s *streams, out outputOptions) (*sweepSink, error) {
	if out.Path == "" || out.Path == "-" {
		return &sweepSink{w: s.Out}, nil
	}
	target := out.Path
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		target = resolved // a link is followed: the file it names is replaced, the link stays
	}
	if info, err := os.Stat(target); err == nil && !info.Mode().IsRegular() {
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", out.Path, err)
		}
		return &sweepSink{w: f, file: f, path: out.Path}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", out.Path, err)
	}
	return &sweepSink{w: f, file: f, path: out.Path, target: target, tmp: f.Name()}, nil
}

// Write writes p at once.
func (k *sweepSink) Write(p []byte) (int, error) {
	n, err := k.w.Write(p)
	if err != nil {
		err = fmt.Errorf("output %s: %w", k.name(), err)
	}
	return n, err
}

// name is what messages call the output.
func (k *sweepSink) name() string {
	if k.file == nil {
		return "stdout"
	}
	return k.path
}

// commit ends a complete output: the temporary file becomes the target.
func (k *sweepSink) commit() error {
	return k.finish(func() error { return os.Rename(k.tmp, k.target) })
}

// keepPartial ends an interrupted output: the temporary file becomes
// FILE.partial. It returns what holds the records written: "stdout",
// FILE.partial, or the device or FIFO, and whether that is a file to
// resume from.
func (k *sweepSink) keepPartial() (where string, resumable bool, err error) {
	if k.tmp == "" {
		return k.name(), false, k.finish(nil)
	}
	partial := k.path + ".partial"
	return partial, true, k.finish(func() error { return os.Rename(k.tmp, partial) })
}

// discard ends a failed output: the temporary file is removed.
func (k *sweepSink) discard() {
	if k.file != nil {
		k.file.Close()
	}
	if k.tmp != "" {
		os.Remove(k.tmp)
	}
}

// finish closes the file and, for a temporary file, makes it readable and
// moves it into place; on failure the temporary file is removed.
func (k *sweepSink) finish(move func() error) error {
	if k.file == nil {
		return nil
	}
	err := k.file.Close()
	if err == nil && k.tmp != "" {
		err = os.Chmod(k.tmp, 0o644)
		if err == nil {
			err = move()
		}
	}
	if err != nil {
		if k.tmp != "" {
			os.Remove(k.tmp)
		}
		return fmt.Errorf("output %s: %w", k.path, err)
	}
	return nil
}

// sweepGrace is how long an interrupted sweep waits for the runs under
// way: less than the time Kubernetes (30 s) and Slurm (KillWait, 30 s)
// leave between SIGTERM and SIGKILL. A second signal ends the wait.
const sweepGrace = 10 * time.Second

// sweepInterrupt turns SIGINT and SIGTERM into a sweep.Stop: the first
// signal starts no further run, and the runs under way are waited for
// until the grace period ends or a second signal comes.
type sweepInterrupt struct {
	start, wait chan struct{}
	done        chan struct{}
	signals     chan os.Signal
	mu          sync.Mutex
	sig         os.Signal // the first signal; nil until one comes
}

// watchSignals starts turning signals into a stop. The sweep takes
// SIGINT and SIGTERM over while it runs (signal.Reset drops any earlier
// handler), so that its end, not the default, decides what is written;
// release gives them back.
func watchSignals(grace time.Duration) *sweepInterrupt {
	in := &sweepInterrupt{start: make(chan struct{}), wait: make(chan struct{}), done: make(chan struct{}), signals: make(chan os.Signal, 2)}
	signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	signal.Notify(in.signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-in.signals:
			in.mu.Lock()
			in.sig = sig
			in.mu.Unlock()
			close(in.start)
		case <-in.done:
			return
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-in.signals:
		case <-timer.C:
		case <-in.done:
			return
		}
		close(in.wait)
	}()
	return in
}

// stop is the sweep.Stop the signals drive.
func (in *sweepInterrupt) stop() sweep.Stop { return sweep.Stop{Start: in.start, Wait: in.wait} }

// signal returns the first signal received, or nil.
func (in *sweepInterrupt) signal() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// release stops watching: the signals get their default behaviour back.
func (in *sweepInterrupt) release() {
	signal.Stop(in.signals)
	close(in.done)
}

// interruptedError ends a sweep stopped by a signal: exit 128 + the
// signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a
// process a signal ended.
type interruptedError struct {
	sig            syscall.Signal
	written, total int
	where          string // stdout, or the file holding the records
	resumable      bool   // the records can be resumed from where
}

// Error reads "sweep interrupted: 30 of 150 runs written to
// sweep.jsonl.partial; rerun with --resume sweep.jsonl.partial".
func (e interruptedError) Error() string {
	msg := fmt.Sprintf("sweep interrupted: %d of %d runs written to %s", e.written, e.total, e.where)
	if e.resumable {
		msg += "; rerun with --resume " + e.where
	}
	return msg
}

func (e interruptedError) exitCode() int { return 128 + int(e.sig) }
