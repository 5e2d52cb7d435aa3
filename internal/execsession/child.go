package execsession

import (
	"os/exec"
	"sync"
	"time"

	"servesim/internal/interrupt"
)

// execChildren are the sessions' children alive in this process, so that an
// interrupted servesim can end them all before it exits
// (KillChildren, which the first child registers with
// interrupt.KillOnInterrupt).
var execChildren struct {
	sync.Mutex
	live       map[*execChild]struct{}
	registered bool
}

// execChild is a session's child process, /bin/sh -c COMMAND,
// the leader of a process group of its own (on Linux): what it starts is
// in that group unless it leaves it (setsid, setpgid).
type execChild struct {
	cmd *exec.Cmd
	// mu guards reaped: once the leader is reaped its pid, and so its
	// group's id, may name another process, which kill must not signal.
	mu     sync.Mutex
	reaped bool
	once   sync.Once
	err    error // the leader's Wait error, once ended
}

// startExecChild starts cmd and registers it. While exec: children are
// alive servesim adopts the orphans of their process trees (on Linux: a
// child subreaper), so that it can reap what it kills.
func startExecChild(cmd *exec.Cmd) (*execChild, error) {
	execChildren.Lock()
	defer execChildren.Unlock()
	if !execChildren.registered {
		interrupt.KillOnInterrupt(KillChildren)
		execChildren.registered = true
	}
	if len(execChildren.live) == 0 {
		adoptOrphans(true)
	}
	// Under the lock: KillChildren misses no child that has forked.
	if err := cmd.Start(); err != nil {
		if len(execChildren.live) == 0 {
			adoptOrphans(false)
		}
		return nil, err
	}
	k := &execChild{cmd: cmd}
	if execChildren.live == nil {
		execChildren.live = map[*execChild]struct{}{}
	}
	execChildren.live[k] = struct{}{}
	return k, nil
}

// kill kills the child's process group, unless the child is reaped.
func (k *execChild) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.reaped {
		killProcessGroup(k.cmd.Process)
	}
}

// exited reports whether the child has exited, without reaping it.
func (k *execChild) exited() bool { return hasExited(k.cmd.Process.Pid) }

// end gives the child grace to exit by itself, then kills its process
// group, reaps the child and the processes of its group that servesim
// adopted, and unregisters it. It returns the child's Wait error. end runs
// once: later and concurrent calls wait for the first and return its
// result.
func (k *execChild) end(grace time.Duration) error {
	k.once.Do(func() {
		if grace > 0 {
			t := time.AfterFunc(grace, k.kill)
			waitExited(k.cmd.Process.Pid) // not reaped: its group's id stays its own
			t.Stop()
		}
		k.kill() // the background processes of a child that exited, too
		k.mu.Lock()
		k.reaped = true
		k.mu.Unlock()
		k.err = k.cmd.Wait()
		reapProcessGroup(k.cmd.Process.Pid)
		execChildren.Lock()
		delete(execChildren.live, k)
		if len(execChildren.live) == 0 {
			adoptOrphans(false)
		}
		execChildren.Unlock()
	})
	return k.err
}

// KillChildren ends every session's child alive in this process: it
// kills each child's process group, and reaps the child and what servesim
// adopted of its group (a child being ended already: it waits for that). An interrupted servesim calls it before it exits; the
// sessions whose children it killed fail.
func KillChildren() {
	execChildren.Lock()
	kids := make([]*execChild, 0, len(execChildren.live))
	for k := range execChildren.live {
		kids = append(kids, k)
	}
	execChildren.Unlock()
	for _, k := range kids {
		k.kill() // all at once: a session in its grace period ends now
	}
	for _, k := range kids {
		_ = k.end(0)
	}
}
