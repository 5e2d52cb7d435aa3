package execsession

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// childProcAttr puts a session's child in a process group of its
// own, so that killing the group also ends what the shell started, and has
// the kernel kill the child when servesim dies without closing it (a
// signal it cannot catch).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills the process group that p leads, and p.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}

// waitid's idtype and options (<sys/wait.h>), and PR_SET_CHILD_SUBREAPER
// (<linux/prctl.h>).
const (
	pPID                = 1
	wNOWAIT             = 0x1000000
	prSetChildSubreaper = 36
)

// waitid waits for pid to exit without reaping it (WNOWAIT), and with
// nohang not at all; it reports whether pid has exited. A pid that is not
// a child (already reaped) counts as exited.
func waitid(pid int, nohang bool) bool {
	options := syscall.WEXITED | wNOWAIT
	if nohang {
		options |= syscall.WNOHANG
	}
	for {
		var info [128]byte // siginfo_t; si_pid at byte 16, zero when nothing exited
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), uintptr(options), 0, 0)
		switch errno {
		case 0:
			return *(*int32)(unsafe.Pointer(&info[16])) != 0
		case syscall.EINTR:
			continue
		}
		return true
	}
}

// hasExited reports whether the child pid has exited; it stays
// unreaped.
func hasExited(pid int) bool { return waitid(pid, true) }

// waitExited waits for the child pid to exit; it stays unreaped, so that
// its process group's id cannot name another group meanwhile.
func waitExited(pid int) { waitid(pid, false) }

// reapProcessGroup reaps the processes of group pgid that servesim
// adopted (adoptOrphans) once their leader, reaped, had died: the
// grandchildren of a killed group. One still alive is killed again; after
// a second it is given up.
func reapProcessGroup(pgid int) {
	deadline := time.Now().Add(time.Second)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR, pid > 0:
			continue
		case err != nil: // ECHILD: none left
			return
		case time.Now().After(deadline):
			return
		}
		// One is alive: its group, which it keeps, is still pgid.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(time.Millisecond)
	}
}

// adoptOrphans makes servesim a child subreaper, or no longer one: the
// orphans of its exec: children's process trees become its children, not
// init's, so that it reaps the grandchildren it kills.
func adoptOrphans(on bool) {
	v := uintptr(0)
	if on {
		v = 1
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, v, 0)
}
