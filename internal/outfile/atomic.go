package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// pending holds the temporary files of the atomic writes under way.
var pending = newRegistry()

// Abort removes the temporary file of every atomic write under way and
// stops every write from creating or renaming one after it: a write that
// gets there waits for ever. It is meant for a process that ends right
// after it, on SIGINT or SIGTERM, so that no half-written temporary file is
// left behind and no file is replaced by one.
func Abort() { pending.abort() }

// registry is a set of temporary files, created, renamed and removed under
// one lock so that abort sees every file that exists and no file appears
// after it.
type registry struct {
	mu    sync.Mutex
	files map[string]struct{}
}

// newRegistry returns an empty registry.
func newRegistry() *registry {
	return &registry{files: make(map[string]struct{})}
}

// create makes a new, empty temporary file in dir named after base
// (".base.tmpNNN", hidden from a plain ls), with mode 0666 less the umask,
// and registers it.
func (r *registry) create(dir, base string) (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		name := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.files[name] = struct{}{}
		return f, nil
	}
}

// has reports whether name is a registered temporary file.
func (r *registry) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.files[name]
	return ok
}

// KeepPartial keeps what a write that is being abandoned has written so
// far as path+".partial", itself written atomically. w is the writer that
// Write gave the write to path: for a regular file, the temporary file that
// was to become path (Write removes it when the write returns an error),
// whose bytes are copied. A device, FIFO or stream received the bytes
// already. It returns where the bytes are and whether that is the partial
// file.
func KeepPartial(w io.Writer, path string) (where string, kept bool, err error) {
	tmp, ok := w.(*os.File)
	if !ok || !pending.has(tmp.Name()) {
		return path, false, nil
	}
	written, err := os.Open(tmp.Name())
	if err != nil {
		return "", false, err
	}
	defer written.Close()
	partial := path + ".partial"
	err = Write(partial, func(w io.Writer) error {
		_, err := io.Copy(w, written)
		return err
	})
	return partial, true, err
}

// rename moves the registered temporary file tmp onto path and forgets it.
func (r *registry) rename(tmp, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	delete(r.files, tmp)
	return nil
}

// remove removes the registered temporary file tmp and forgets it.
func (r *registry) remove(tmp string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	os.Remove(tmp)
	delete(r.files, tmp)
}

// abort removes every registered file and keeps the registry locked.
func (r *registry) abort() {
	r.mu.Lock()
	for name := range r.files {
		os.Remove(name)
	}
	clear(r.files)
}

// writeAtomic writes the output of write to a temporary file in path's
// folder and renames it onto path (stageAtomic, then the rename). On any
// failure, a panic included, the temporary file is removed and path is
// left as it was.
func writeAtomic(path string, old fs.FileInfo, write func(io.Writer) error) error {
	tmp, err := stageAtomic(path, old, write)
	if err != nil {
		return err
	}
	if err := pending.rename(tmp, path); err != nil {
		pending.remove(tmp)
		return err
	}
	return nil
}

// stageAtomic writes the output of write to a new temporary file in path's
// folder, closes it and returns its name, still registered: the caller
// renames it onto path or removes it. old describes the file path names
// now, nil when there is none; its permission bits (and owner, where
// allowed) carry over. On any failure, a panic included, the temporary
// file is removed.
func stageAtomic(path string, old fs.FileInfo, write func(io.Writer) error) (string, error) {
	dir := filepath.Dir(path)
	tmp, err := pending.create(dir, filepath.Base(path))
	if err != nil {
		return "", createError(dir, err)
	}
	name := tmp.Name()
	staged := false
	defer func() {
		if !staged {
			tmp.Close()
			pending.remove(name)
		}
	}()
	if old != nil {
		keepOwner(tmp, old)
		if err := tmp.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return "", err
		}
	}
	if err := write(tmp); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	staged = true
	return name, nil
}

// createError says in words why no file could be made in dir.
func createError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("folder %s is not writable", dir)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("folder %s is on a read-only file system", dir)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		if ferr := checkFolder(dir); ferr != nil {
			return ferr
		}
	}
	return fmt.Errorf("cannot create a file in folder %s: %w", dir, plain(err))
}
