//go:build !linux

package plant

import (
	"os"
	"syscall"
)

// childProcAttr is the default: outside Linux only the child itself is
// killed, not what it started.
func childProcAttr() *syscall.SysProcAttr { return nil }

// killProcessGroup kills p.
func killProcessGroup(p *os.Process) { _ = p.Kill() }
