// Package outfile writes a command's output to the path a user named, the
// way a user expects of the kind of file the path is:
//
//   - A regular file, or a path where nothing exists yet, is written
//     atomically: the output goes to a temporary file in the same folder,
//     which is renamed onto the path once it is complete. Readers never see
//     a partial file, and a failure leaves the old file (or no file) behind.
//     An existing file keeps its permission bits (and its owner, where the
//     process may set it, as root can); a new file gets 0666 less the umask,
//     as a shell's `>` would create it.
//   - A symbolic link is followed to the file it names (also when that file
//     does not exist yet); the rename happens at the link's target, so the
//     link stays a link.
//   - A character or block device, a FIFO and anything else that is not a
//     regular file is opened for writing (never created or truncated) and
//     written directly: the node itself is never replaced. Opening a FIFO
//     waits for a reader, as `echo > fifo` does. A Unix socket is connected
//     to and written.
//   - /dev/stdout and /dev/stderr (also as /dev/fd/1, /proc/self/fd/1 and
//     the like, or through a link to one of them) are the process's own
//     standard output and error, written as they are; another /proc or
//     /dev/fd descriptor link is opened directly.
//
// A device, FIFO or stream receives the output as it is written, so a
// failure part-way cannot be taken back there; the error is still reported.
//
// Stage writes an output as Write does but leaves a regular file in its
// temporary file until Commit (CommitAll for the outputs of one run, which
// appear together or not at all); SameFile tells whether two paths name
// one file, so that one output would replace another.
//
// Abort removes the temporary files of the writes under way, for a process
// that is ending on a signal.
//
// Errors name the path as given, followed by what went wrong in words
// ("out/run.json: folder out does not exist").
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed from one path, as the kernel
// bounds them (Linux's MAXSYMLINKS is 40).
const maxLinks = 40

// kind is how a path is written.
type kind int

const (
	atomic kind = iota // a regular file, or nothing yet: temporary file and rename
	direct             // a device, a FIFO or another special node: opened and written
	socket             // a Unix socket: connected to and written
	stream             // the process's standard output or error
)

// target is where a write to a path goes.
type target struct {
	kind kind
	// path is the file the output replaces (atomic), the node opened
	// (direct) or connected to (socket), links followed.
	path string
	// old describes the regular file that atomic replaces; nil when the
	// file does not exist yet.
	old fs.FileInfo
	// stream is the standard stream for kind stream.
	stream *os.File
}

// Write writes to path what write produces, in the way the package
// documentation describes for the kind of file path is. write is called
// once, with a writer that is closed (and, for a regular file, renamed into
// place) after write returns nil. An error from write is returned wrapped,
// so errors.As still finds it.
func Write(path string, write func(io.Writer) error) error {
	t, err := resolve(path)
	if err == nil {
		err = t.write(write)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, plain(err))
	}
	return nil
}

// write writes the output to t.
func (t target) write(write func(io.Writer) error) error {
	switch t.kind {
	case atomic:
		return writeAtomic(t.path, t.old, write)
	case stream:
		if ClosedAtStart(t.stream) {
			return errors.New("the stream is closed")
		}
		return write(t.stream)
	case socket:
		conn, err := net.Dial("unix", t.path)
		if err != nil {
			return err
		}
		return writeClose(conn, write)
	default:
		f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return writeClose(f, write)
	}
}

// writeClose runs write on w and closes w, returning the first error.
func writeClose(w io.WriteCloser, write func(io.Writer) error) error {
	err := write(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// resolve finds where a write to path goes, following symbolic links.
func resolve(path string) (target, error) {
	p := path
	for range maxLinks + 1 {
		if f := standardStream(p); f != nil {
			return target{kind: stream, path: p, stream: f}, nil
		}
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return target{kind: atomic, path: p}, checkFolder(filepath.Dir(p))
		case errors.Is(err, syscall.ENOTDIR):
			if ferr := checkFolder(filepath.Dir(p)); ferr != nil {
				return target{}, ferr
			}
			return target{}, err
		case err != nil:
			return target{}, err
		}
		switch mode := info.Mode(); {
		case mode.IsRegular():
			return target{kind: atomic, path: p, old: info}, nil
		case mode.IsDir():
			return target{}, errors.New("is a folder")
		case mode&fs.ModeSocket != 0:
			return target{kind: socket, path: p}, nil
		case mode&fs.ModeSymlink == 0:
			return target{kind: direct, path: p}, nil
		}
		// A link: resolve it from its real folder, so that a relative
		// "../x" means what it means to the kernel.
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return target{}, err
		}
		if dir == "/proc" || strings.HasPrefix(dir, "/proc/") {
			// A /proc descriptor link names an open file, which may have no
			// path at all ("pipe:[1234]"): the kernel opens it.
			return target{kind: direct, path: p}, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return target{}, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		p = link
	}
	return target{}, errors.New("too many levels of symbolic links")
}

// standardStream returns os.Stdout or os.Stderr when p names the process's
// standard output or error, else nil.
func standardStream(p string) *os.File {
	p = filepath.Clean(p)
	switch p {
	case "/dev/stdout":
		return os.Stdout
	case "/dev/stderr":
		return os.Stderr
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"} {
		switch p {
		case dir + "1":
			return os.Stdout
		case dir + "2":
			return os.Stderr
		}
	}
	return nil
}

// checkFolder explains why a file cannot be made in dir, the folder of a
// path that does not exist; it returns nil when dir is an existing folder.
func checkFolder(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// A component that is a file, not a folder, makes the folder
		// missing too: name that file.
		if file := fileAmongFolders(dir); file != "" {
			return fmt.Errorf("%s is not a folder", file)
		}
		return fmt.Errorf("folder %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("folder %s: %w", dir, plain(err))
	case !info.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// fileAmongFolders returns the first existing ancestor of dir (or dir
// itself) that is not a folder, or "" when every existing one is a folder.
func fileAmongFolders(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err == nil {
			if info.IsDir() {
				return ""
			}
			return d
		}
		if parent := filepath.Dir(d); parent == d {
			return ""
		}
	}
}

// plain strips the wrappers that repeat a path or an operation ("write
// /tmp/.run.json.tmp123: no space left on device") down to what happened
// ("no space left on device"), keeping any other error as it is.
func plain(err error) error {
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		case *net.OpError:
			err = e.Err
		default:
			return err
		}
	}
}
