package outfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Staged is an output whose bytes are all written but which may not be in
// place yet: a regular file's complete temporary file, waiting to be
// renamed onto its path. Outputs of one run that must appear together, or
// not at all, are staged one by one and committed when every one is
// staged (or all discarded when one fails).
type Staged struct {
	path    string // the path as given, for errors
	dest    string // the file the temporary file replaces
	tmp     string // the temporary file; "" once committed or discarded, or for a direct write
	written bool   // the output is in place: written directly, or committed
}

// Stage writes to path what write produces, as Write does, except that a
// regular file (or a path where nothing exists yet) is left in its
// temporary file: Commit renames it into place, Discard removes it. A
// device, FIFO, socket or standard stream receives the output at once,
// since it cannot be taken back: its Staged is in place already, and
// InPlace reports it. On an error nothing is staged, and the error names
// path as Write's does.
func Stage(path string, write func(io.Writer) error) (*Staged, error) {
	t, err := resolve(path)
	if err == nil {
		if t.kind != atomic {
			if err = t.write(write); err == nil {
				return &Staged{path: path, dest: t.path, written: true}, nil
			}
		} else {
			var tmp string
			if tmp, err = stageAtomic(t.path, t.old, write); err == nil {
				return &Staged{path: path, dest: t.path, tmp: tmp}, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: %w", path, plain(err))
}

// InPlace reports whether the output is where it belongs: written directly
// to its device, FIFO or stream, or committed.
func (s *Staged) InPlace() bool { return s.written }

// Commit renames a staged regular file onto its path. It does nothing for
// an output in place. On an error the temporary file is removed and the
// path is left as it was.
func (s *Staged) Commit() error {
	if s.tmp == "" {
		return nil
	}
	tmp := s.tmp
	s.tmp = ""
	if err := pending.rename(tmp, s.dest); err != nil {
		pending.remove(tmp)
		return fmt.Errorf("%s: %w", s.path, plain(err))
	}
	s.written = true
	return nil
}

// Discard removes a staged regular file's temporary file, leaving its path
// as it was. It does nothing for an output in place.
func (s *Staged) Discard() {
	if s.tmp == "" {
		return
	}
	pending.remove(s.tmp)
	s.tmp = ""
}

// SameFile reports whether writes to the paths a and b would land on one
// regular file, so that one output would replace the other: two names
// (relative and absolute, with "." or "..", through symbolic links or hard
// links) of one existing file, the same device and inode as os.SameFile
// tells, or one resolved path (links followed, folders made absolute) of
// a file not there yet. Devices, FIFOs, sockets and standard streams are
// never the same file: each output is written to them in turn.
func SameFile(a, b string) bool {
	ka, oka := fileKey(a)
	kb, okb := fileKey(b)
	if !oka || !okb {
		return false
	}
	if ka.info != nil || kb.info != nil {
		return ka.info != nil && kb.info != nil && os.SameFile(ka.info, kb.info)
	}
	return ka.path == kb.path
}

// key is what identifies the file a write lands on: an existing regular
// file's description, or the absolute, link-free path of a file not
// there yet.
type key struct {
	info fs.FileInfo
	path string
}

// fileKey returns the key of the file a write to path lands on, and false
// when it is not a regular file (nor a file to be made) or cannot be told.
func fileKey(path string) (key, bool) {
	t, err := resolve(path)
	if err != nil || t.kind != atomic {
		return key{}, false
	}
	if t.old != nil {
		return key{info: t.old}, true
	}
	dir, err := filepath.Abs(filepath.Dir(t.path))
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return key{}, false
	}
	return key{path: filepath.Join(dir, filepath.Base(t.path))}, true
}

// CommitAll commits every staged output in order. When one fails, the
// ones after it are discarded, and the error (a *CommitError) says which
// outputs are in place and which are not, by name: names[i] names
// staged[i] ("-o run.json").
func CommitAll(staged []*Staged, names []string) error {
	for i, s := range staged {
		if err := s.Commit(); err != nil {
			e := &CommitError{Err: err}
			for j, other := range staged {
				if j > i {
					other.Discard()
				}
				if other.InPlace() {
					e.Written = append(e.Written, names[j])
				} else {
					e.NotWritten = append(e.NotWritten, names[j])
				}
			}
			return e
		}
	}
	return nil
}

// DiscardAll discards every staged output.
func DiscardAll(staged []*Staged) {
	for _, s := range staged {
		s.Discard()
	}
}

// CommitError is the failure of CommitAll part-way: the outputs written
// before it stay in place.
type CommitError struct {
	Err        error    // the failed rename, naming its path
	Written    []string // the outputs in place
	NotWritten []string // the failed one and the discarded ones
}

func (e *CommitError) Error() string {
	msg := e.Err.Error()
	if len(e.Written) > 0 {
		msg += "; written: " + strings.Join(e.Written, ", ")
	}
	return msg + "; not written: " + strings.Join(e.NotWritten, ", ")
}

func (e *CommitError) Unwrap() error { return e.Err }
