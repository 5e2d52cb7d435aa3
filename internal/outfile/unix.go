//go:build unix

package outfile

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// keepOwner gives tmp the owner and group of the file old describes, where
// the process may (root may; others may only keep their own user and
// choose among their groups). Where it may not, the new file is the
// writer's, as after any editor's atomic save.
func keepOwner(tmp *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	_ = tmp.Chown(int(st.Uid), int(st.Gid)) // best effort, as documented
}

// ClosedAtStart reports whether f, a standard stream of the process, was
// closed when the process started. The Go runtime then opens /dev/null
// for reading and writing in its place (so that no file opened later takes
// the stream's number), and that is what ClosedAtStart recognizes: a
// stream that is /dev/null open for reading and writing. A user who opens
// it that way on purpose (1<>/dev/null) gets the same answer; `>/dev/null`
// opens it for writing only and is not closed.
func ClosedAtStart(f *os.File) bool { return closedAtStart(f, os.DevNull) }

// closedAtStart reports whether f is the file null open for reading and
// writing.
func closedAtStart(f *os.File, null string) bool {
	conn, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var flags int
	var st unix.Stat_t
	ferr := conn.Control(func(fd uintptr) {
		flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err == nil {
			err = unix.Fstat(int(fd), &st)
		}
	})
	if ferr != nil || err != nil || flags&unix.O_ACCMODE != unix.O_RDWR {
		return false
	}
	var nst unix.Stat_t
	if unix.Stat(null, &nst) != nil {
		return false
	}
	return st.Dev == nst.Dev && st.Ino == nst.Ino
}
