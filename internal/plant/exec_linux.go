package plant

import (
	"os"
	"syscall"
)

// childProcAttr puts an exec: controller's child in a process group of its
// own, so that killing the group also ends what the shell started, and has
// the kernel kill the child when servesim dies without closing it (a
// signal): a child is never left running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills the process group that p leads, and p.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
