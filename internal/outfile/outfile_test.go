//go:build unix

package outfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// text returns a write function that writes s.
func text(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// lmode is the mode of path itself (a link is not followed).
func lmode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	return info.Mode()
}

// withUmask runs the test with the process umask set to mask.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func TestNewFileGetsTheUmaskMode(t *testing.T) {
	for _, tc := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}, {0, 0o666}} {
		t.Run(strconv.FormatInt(int64(tc.umask), 8), func(t *testing.T) {
			withUmask(t, tc.umask)
			path := filepath.Join(t.TempDir(), "new.json")
			require.NoError(t, Write(path, text("{}\n")))
			assert.Equal(t, tc.want, lmode(t, path))
			assert.Equal(t, []string{"new.json"}, names(t, filepath.Dir(path)), "no temporary file is left")
		})
	}
}

func TestExistingFileKeepsItsModeAndOwner(t *testing.T) {
	withUmask(t, 0o022)
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o755, 0o444} {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
			require.NoError(t, os.Chmod(path, mode))
			require.NoError(t, Write(path, text("new")))
			assert.Equal(t, mode, lmode(t, path))
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "new", string(data))
		})
	}
	if os.Geteuid() != 0 {
		return // only root may give a file to another user
	}
	path := filepath.Join(t.TempDir(), "theirs.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, os.Chown(path, 4321, 8765))
	require.NoError(t, Write(path, text("new")))
	info, err := os.Stat(path)
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	assert.Equal(t, []uint32{4321, 8765}, []uint32{st.Uid, st.Gid}, "owner and group")
}

func TestSymbolicLinksStayLinks(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll("data/sub", 0o755))
	require.NoError(t, os.WriteFile("data/target.json", []byte("old"), 0o600))
	require.NoError(t, os.Symlink("data", "datalink"))
	tests := []struct {
		name       string
		link, to   string // the link made, and what it points at
		via        string // the path written to (default: link)
		wantTarget string // the file that must hold the output
	}{
		{"relative link to a file", "out.json", "data/target.json", "", "data/target.json"},
		{"absolute link to a file", "abs.json", filepath.Join(dir, "data/target.json"), "", "data/target.json"},
		{"chain of links", "chain.json", "out.json", "", "data/target.json"},
		{"dangling link: its target is made", "dangling.json", "data/sub/new.json", "", "data/sub/new.json"},
		{"link inside a linked folder: ../ from the real folder", "data/sub/up.json", "../target.json", "datalink/sub/up.json", "data/target.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.Symlink(tc.to, tc.link))
			via := tc.via
			if via == "" {
				via = tc.link
			}
			require.NoError(t, Write(via, text(tc.name)))
			assert.Equal(t, fs.ModeSymlink, lmode(t, tc.link)&fs.ModeType, "the link stays a link")
			got, err := os.Readlink(tc.link)
			require.NoError(t, err)
			assert.Equal(t, tc.to, got, "the link is unchanged")
			data, err := os.ReadFile(tc.wantTarget)
			require.NoError(t, err)
			assert.Equal(t, tc.name, string(data))
			assert.True(t, lmode(t, tc.wantTarget).IsRegular())
		})
	}
	assert.Equal(t, fs.FileMode(0o600), lmode(t, "data/target.json"), "the target kept its mode")
	assert.ElementsMatch(t, []string{"target.json", "sub"}, names(t, "data"), "no temporary file is left")
}

func TestSymbolicLinkLoopIsAnError(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Symlink("b", "a"))
	require.NoError(t, os.Symlink("a", "b"))
	err := Write("a", text("x"))
	require.EqualError(t, err, "a: too many levels of symbolic links")
}

func TestDevicesAreWrittenNotReplaced(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("making device nodes needs root; this test runs as root in CI")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null") // a private copy of /dev/null: 1,3
	full := filepath.Join(dir, "full") // a private copy of /dev/full: 1,7
	require.NoError(t, unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	require.NoError(t, unix.Mknod(full, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 7))))

	require.NoError(t, Write(null, text("discarded")))
	assert.Equal(t, fs.ModeDevice|fs.ModeCharDevice, lmode(t, null)&fs.ModeType, "still the device")

	err := Write(full, text("too much"))
	require.EqualError(t, err, full+": no space left on device")
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, fs.ModeDevice|fs.ModeCharDevice, lmode(t, full)&fs.ModeType, "still the device")

	// A link to a device writes the device and stays a link.
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("null", link))
	require.NoError(t, Write(link, text("discarded")))
	assert.Equal(t, fs.ModeSymlink, lmode(t, link)&fs.ModeType)
	assert.ElementsMatch(t, []string{"null", "full", "link"}, names(t, dir))
}

func TestFIFOIsWrittenNotReplaced(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	got := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(fifo)
		got <- string(data)
	}()
	require.NoError(t, Write(fifo, text("through the pipe")))
	require.Equal(t, fs.ModeNamedPipe|0o600, lmode(t, fifo), "still the FIFO") // else the reader waits for ever
	assert.Equal(t, "through the pipe", <-got)
	assert.Equal(t, []string{"fifo"}, names(t, dir))
}

func TestSocketIsConnectedTo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		data, _ := io.ReadAll(conn)
		conn.Close()
		got <- string(data)
	}()
	require.NoError(t, Write(path, text("over the socket")))
	assert.Equal(t, "over the socket", <-got)
	assert.Equal(t, fs.ModeSocket, lmode(t, path)&fs.ModeType)
}

func TestProcDescriptorLinkIsOpenedDirectly(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	path := "/proc/self/fd/" + strconv.Itoa(int(w.Fd()))
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("this test needs Linux's /proc: %v", err)
	}
	link := filepath.Join(t.TempDir(), "pipe.json")
	require.NoError(t, os.Symlink(path, link))
	require.NoError(t, Write(link, text("via /proc")))
	w.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "via /proc", string(data))
}

func TestStandardStreamNames(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	for path, want := range map[string]*os.File{
		"/dev/stdout": os.Stdout, "/dev/stderr": os.Stderr, "/dev//stdout": os.Stdout,
		"/dev/fd/1": os.Stdout, "/dev/fd/2": os.Stderr,
		"/proc/self/fd/1": os.Stdout, "/proc/thread-self/fd/2": os.Stderr, "/proc/" + pid + "/fd/1": os.Stdout,
		"/dev/stdin": nil, "/dev/fd/3": nil, "/proc/1/fd/1": nil, "stdout": nil, "/dev/fd/10": nil, "/dev/null": nil,
	} {
		assert.Same(t, want, standardStream(path), path)
	}
}

func TestFolderProblemsAreSaidInWords(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("file.txt", nil, 0o644))
	require.NoError(t, os.Mkdir("dir", 0o755))
	require.NoError(t, os.Symlink("missing/x.json", "dangling-into-nothing"))
	for path, want := range map[string]string{
		"out/run.json":          "out/run.json: folder out does not exist",
		"a/b/c/run.json":        "a/b/c/run.json: folder a/b/c does not exist",
		"file.txt/run.json":     "file.txt/run.json: file.txt is not a folder",
		"file.txt/sub/run.json": "file.txt/sub/run.json: file.txt is not a folder",
		"dir":                   "dir: is a folder",
		"dangling-into-nothing": "dangling-into-nothing: folder missing does not exist",
	} {
		assert.EqualError(t, Write(path, text("x")), want)
	}
	assert.ElementsMatch(t, []string{"file.txt", "dir", "dangling-into-nothing"}, names(t, "."))
}

func TestCreateErrors(t *testing.T) {
	assert.EqualError(t, createError("ro", &fs.PathError{Op: "open", Path: "ro/.x.tmp1", Err: syscall.EACCES}), "folder ro is not writable")
	assert.EqualError(t, createError("ro", &fs.PathError{Op: "open", Path: "ro/.x.tmp1", Err: syscall.EPERM}), "folder ro is not writable")
	assert.EqualError(t, createError("ro", &fs.PathError{Op: "open", Path: "ro/.x.tmp1", Err: syscall.EROFS}), "folder ro is on a read-only file system")
	assert.EqualError(t, createError("q", &fs.PathError{Op: "open", Path: "q/.x.tmp1", Err: syscall.EDQUOT}), "cannot create a file in folder q: disk quota exceeded")
}

func TestFailedWriteLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return boom
	})
	assert.ErrorIs(t, err, boom, "the write function's error is wrapped")
	assert.EqualError(t, err, path+": boom")
	assert.Panics(t, func() {
		_ = Write(path, func(w io.Writer) error {
			_, _ = io.WriteString(w, "partial")
			panic("bug")
		})
	})
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(data))
	assert.Equal(t, []string{"run.json"}, names(t, dir), "no temporary file is left")
	assert.Empty(t, pending.files)
}

func TestClosedAtStartKnowsTheRuntimesNullStream(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("making device nodes needs root; this test runs as root in CI")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null") // stands for /dev/null
	require.NoError(t, unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	regular := filepath.Join(dir, "regular")
	require.NoError(t, os.WriteFile(regular, nil, 0o644))
	for _, tc := range []struct {
		path string
		flag int
		want bool
	}{
		{null, os.O_RDWR, true}, // what the runtime opens for a closed stream
		{null, os.O_WRONLY, false},
		{regular, os.O_RDWR, false},
	} {
		f, err := os.OpenFile(tc.path, tc.flag, 0)
		require.NoError(t, err)
		assert.Equal(t, tc.want, closedAtStart(f, null), "%s %#o", tc.path, tc.flag)
		f.Close()
	}
}

func TestAbortRemovesTemporaryFilesAndStopsWrites(t *testing.T) {
	dir := t.TempDir()
	r := newRegistry()
	a, err := r.create(dir, "a.json")
	require.NoError(t, err)
	b, err := r.create(dir, "b.json")
	require.NoError(t, err)
	defer a.Close()
	defer b.Close()
	require.Len(t, names(t, dir), 2)
	r.abort()
	assert.Empty(t, names(t, dir))

	done := make(chan struct{})
	go func() {
		_, _ = r.create(dir, "c.json") // waits for ever: the process is ending
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a temporary file was created after abort")
	case <-time.After(50 * time.Millisecond):
	}
	assert.Empty(t, names(t, dir))
}

// TestAbortRacesWrites aborts while writes run; run with -race. Afterwards
// only complete outputs exist: no temporary file, no partial output.
func TestAbortRacesWrites(t *testing.T) {
	dir := t.TempDir()
	r := newRegistry()
	for i := range 20 {
		go func() {
			for j := 0; ; j++ {
				path := filepath.Join(dir, strconv.Itoa(i)+"-"+strconv.Itoa(j%3))
				f, err := r.create(dir, filepath.Base(path))
				if err != nil {
					return
				}
				_, _ = f.WriteString("complete")
				f.Close()
				if r.rename(f.Name(), path) != nil {
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	r.abort()
	// The writers now wait for ever in create or rename; the directory must
	// hold complete outputs only.
	for _, name := range names(t, dir) {
		require.NotContains(t, name, ".tmp", "a temporary file survived abort")
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, "complete", string(data))
	}
}

// TestKeepPartialCopiesAnAbandonedWrite abandons an atomic write after a
// first line: the line is kept in FILE.partial, FILE never appears, and a
// write that went straight to its target keeps nothing.
func TestKeepPartialCopiesAnAbandonedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	stop := errors.New("stopped")
	err := Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "line 1\n")
		require.NoError(t, err)
		where, kept, err := KeepPartial(w, path)
		require.NoError(t, err)
		assert.True(t, kept)
		assert.Equal(t, path+".partial", where)
		return stop
	})
	require.ErrorIs(t, err, stop)
	data, err := os.ReadFile(path + ".partial")
	require.NoError(t, err)
	assert.Equal(t, "line 1\n", string(data))
	assert.Equal(t, []string{"out.jsonl.partial"}, names(t, dir))

	where, kept, err := KeepPartial(io.Discard, path)
	require.NoError(t, err)
	assert.False(t, kept)
	assert.Equal(t, path, where)
}
