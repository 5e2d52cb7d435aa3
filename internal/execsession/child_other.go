//go:build !linux

package execsession

import (
	"os"
	"syscall"
)

// childProcAttr is the default: outside Linux only the child itself is
// killed, not what it started.
func childProcAttr() *syscall.SysProcAttr { return nil }

// killProcessGroup kills p.
func killProcessGroup(p *os.Process) { _ = p.Kill() }

// hasExited is false: outside Linux servesim cannot look at a child
// without reaping it, and notices its exit on the pipes only.
func hasExited(int) bool { return false }

// waitExited returns at once: outside Linux servesim cannot wait for a
// child without reaping it, so it kills the child when it ends it.
func waitExited(int) {}

// reapProcessGroup does nothing: only the child itself is reaped.
func reapProcessGroup(int) {}

// adoptOrphans does nothing: outside Linux the orphans go to init.
func adoptOrphans(bool) {}
