package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"servesim/internal/limits"
)

// Caps of the files a profile is read from: the profile CSV and the
// manifest are a few kilobytes (a raw-schema profile a few megabytes); a
// measured bundle's other files hold 1,950 raw rows and some 65,000
// telemetry rows (6 MB).
const (
	MaxProfileBytes    = 16 * limits.MiB  // the profile CSV and the manifest
	MaxBundleFileBytes = 256 * limits.MiB // every file a manifest lists
)

// profileFolder reads the files of one profile: the profile CSV, its
// manifest and the files the manifest lists all sit in one folder, and each
// must be a regular file there. A name that is a symbolic link is followed
// only while it stays inside the folder (a relative link to a file in it),
// so a profile never reads, hashes or reports a file elsewhere; a FIFO, a
// device, a socket or a folder is refused without being opened, and a file
// is opened without blocking and checked again once open, so a node
// swapped in between is refused too.
type profileFolder struct {
	dir  string
	root *os.Root // nil when the folder cannot be opened
	err  error    // why it cannot
	// opened counts the opens of each file, so that tests can check that
	// every file is read once.
	opened map[string]int
}

// openProfileFolder opens dir for reading the files in it.
func openProfileFolder(dir string) *profileFolder {
	root, err := os.OpenRoot(dir)
	return &profileFolder{dir: dir, root: root, err: err, opened: map[string]int{}}
}

// close releases the folder.
func (f *profileFolder) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// fileError says why a profile file cannot be read; its message is the
// file's name and the reason, e.g. "l4_telemetry.csv is a FIFO, not a
// regular file".
type fileError struct {
	name   string
	reason string
	// missing marks a file that does not exist.
	missing bool
}

func (e *fileError) Error() string { return e.name + " " + e.reason }

// stat returns the identity of name when it is a regular file in the
// folder of at most maxBytes bytes, without opening it; otherwise the error
// is a *fileError.
func (f *profileFolder) stat(name string, maxBytes int64) (fs.FileInfo, error) {
	if f.root == nil {
		return nil, &fileError{name: name, reason: fmt.Sprintf("cannot be read: folder %s: %v", f.dir, unwrapPathError(f.err)),
			missing: errors.Is(f.err, fs.ErrNotExist)}
	}
	info, err := f.root.Stat(name)
	if err != nil {
		return nil, f.statError(name, err)
	}
	if err := regular(name, info, maxBytes); err != nil {
		return nil, err
	}
	return info, nil
}

// open opens name for reading when it is a regular file in the folder of at
// most maxBytes bytes; otherwise the error is a *fileError.
func (f *profileFolder) open(name string, maxBytes int64) (*os.File, fs.FileInfo, error) {
	info, err := f.stat(name, maxBytes)
	if err != nil {
		return nil, nil, err
	}
	f.opened[name]++
	file, err := f.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, f.statError(name, err)
	}
	opened, err := file.Stat()
	if err == nil && !os.SameFile(info, opened) {
		err = &fileError{name: name, reason: "changed while it was being opened"}
	}
	if err == nil {
		err = regular(name, opened, maxBytes)
	}
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	return file, opened, nil
}

// statError describes a failed stat or open of name.
func (f *profileFolder) statError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fileError{name: name, reason: "does not exist", missing: true}
	case !errors.Is(err, fs.ErrPermission) && isSymlink(f.root, name):
		return &fileError{name: name, reason: "is a symbolic link that leads out of the folder " + f.dir +
			" (a profile's files must sit in its folder; links must be relative and stay in it)"}
	}
	return &fileError{name: name, reason: "cannot be read: " + unwrapPathError(err).Error()}
}

// isSymlink reports whether name is a symbolic link: one the folder
// refuses to follow when it leads out of it or is absolute.
func isSymlink(root *os.Root, name string) bool {
	info, err := root.Lstat(name)
	return err == nil && info.Mode()&fs.ModeSymlink != 0
}

// regular checks that info is a regular file of at most maxBytes bytes.
func regular(name string, info fs.FileInfo, maxBytes int64) error {
	mode := info.Mode()
	kind := ""
	switch {
	case mode.IsRegular():
		if info.Size() > maxBytes {
			return &fileError{name: name, reason: "is " + (&limits.TooLargeError{Size: info.Size(), Cap: maxBytes}).Error()}
		}
		return nil
	case mode.IsDir():
		kind = "a folder"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "not a regular file (" + mode.Type().String() + ")"
		return &fileError{name: name, reason: "is " + kind}
	}
	return &fileError{name: name, reason: "is " + kind + ", not a regular file"}
}

// read reads name whole (at most maxBytes bytes) and returns its bytes,
// its SHA-256 in hex and its identity.
func (f *profileFolder) read(name string, maxBytes int64) ([]byte, string, fs.FileInfo, error) {
	file, info, err := f.open(name, maxBytes)
	if err != nil {
		return nil, "", nil, err
	}
	defer file.Close()
	data, err := limits.ReadAll(file, maxBytes)
	if err != nil {
		return nil, "", nil, readError(name, err)
	}
	return data, sha256Hex(data), info, nil
}

// hash streams name through SHA-256 (at most maxBytes bytes, in constant
// memory) and returns the digest in hex and the file's identity.
func (f *profileFolder) hash(name string, maxBytes int64) (string, fs.FileInfo, error) {
	file, info, err := f.open(name, maxBytes)
	if err != nil {
		return "", nil, err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, maxBytes+1))
	if err == nil && n > maxBytes {
		err = &limits.TooLargeError{Size: -1, Cap: maxBytes}
	}
	if err != nil {
		return "", nil, readError(name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), info, nil
}

// readError describes an error while reading name.
func readError(name string, err error) error {
	var tooLarge *limits.TooLargeError
	if errors.As(err, &tooLarge) {
		return &fileError{name: name, reason: "is " + err.Error()}
	}
	return &fileError{name: name, reason: "cannot be read: " + unwrapPathError(err).Error()}
}

// splitProfilePath returns the folder and the file name of a profile path.
func splitProfilePath(path string) (dir, name string) {
	dir, name = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir, name
}
