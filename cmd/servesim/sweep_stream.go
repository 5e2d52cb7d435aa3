package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"servesim/internal/sweep"
)

// keepPartial keeps the records an interrupted sweep wrote to its -o
// target as FILE.partial. out is what writeResult gave the sweep: for a
// regular file, the temporary file that was to become FILE (package
// outfile names it ".FILE.tmpNNN"), which it removes when the sweep
// returns an error; its records are copied to FILE.partial, itself written
// atomically. A device, FIFO or stream received the records already. It
// returns where the records are and whether that is a file to resume from.
func keepPartial(out io.Writer, path string) (where string, resumable bool, err error) {
	tmp, ok := out.(*os.File)
	if !ok || !isTemporary(tmp.Name()) {
		return path, false, nil
	}
	records, err := os.Open(tmp.Name())
	if err != nil {
		return "", false, err
	}
	defer records.Close()
	partial := path + ".partial"
	err = writeTarget("-o", partial, func(w io.Writer) error {
		_, err := io.Copy(w, records)
		return err
	})
	return partial, true, err
}

// isTemporary reports whether name is one of package outfile's temporary
// files, ".BASE.tmpNNN".
func isTemporary(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, ".") && strings.Contains(base, ".tmp")
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
// SIGINT and SIGTERM over while it runs: signal.Reset drops the handler
// main installs (exitOnSignal, which would end the process at once), so
// that the sweep writes the runs under way and keeps its partial output;
// release gives the signals their default behaviour back, just before the
// process ends.
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
	where          string // stdout, or the file that holds the records
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

func (e interruptedError) ExitCode() int { return 128 + int(e.sig) }
