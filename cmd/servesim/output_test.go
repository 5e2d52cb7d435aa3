//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

// startUntil starts cmd and returns once its stdout has given a line
// (cmd is then where the test wants it); its stderr is collected in the
// returned buffer, which may be read once cmd has ended.
func startUntil(t *testing.T, cmd *exec.Cmd) *bytes.Buffer {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if _, err = bufio.NewReader(stdout).ReadString('\n'); err != nil {
		_ = cmd.Wait() // stderr is complete, and no longer written, after Wait
		t.Fatalf("no line on stdout: %v; stderr: %s", err, stderr.String())
	}
	return &stderr
}

func TestSignalRemovesTheUnfinishedOutput(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("blockedwrite")
	require.NoError(t, err)
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
		flag string
		file string
		old  string // the file's content before the run; "" means no file
	}{
		{syscall.SIGINT, "SIGINT", 130, "-o", "run.json", ""},
		{syscall.SIGTERM, "SIGTERM", 143, "-o", "run.json", "old result\n"},
		{syscall.SIGINT, "SIGINT", 130, "--plot", "fig.png", "old figure"},
		{syscall.SIGTERM, "SIGTERM", 143, "--plot", "fig.svg", ""},
	} {
		t.Run(fmt.Sprintf("%s %s %s", tc.name, tc.flag, tc.file), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if tc.old != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.old), 0o600))
			}
			cmd := exec.Command(bin, tc.flag, path)
			stderr := startUntil(t, cmd)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var temps int
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "."+tc.file+".tmp") {
					temps++
				}
			}
			require.Equal(t, 1, temps, "the write is under way in a temporary file")

			require.NoError(t, cmd.Process.Signal(tc.sig))
			err = cmd.Wait()
			require.Error(t, err)
			assert.Equal(t, tc.code, cmd.ProcessState.ExitCode())
			assert.Equal(t, "servesim: interrupted by "+tc.name+"\n", stderr.String())
			entries, err = os.ReadDir(dir)
			require.NoError(t, err)
			if tc.old == "" {
				assert.Empty(t, entries, "neither a temporary file nor a partial output is left")
				return
			}
			require.Len(t, entries, 1, "no temporary file is left")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.old, string(data), "the old file is kept")
		})
	}
}

// TestSignalDuringADirectWrite stops the real servesim while it writes a
// FIFO whose reader has stopped reading: exit 143, one line, and the FIFO
// is still a FIFO.
func TestSignalDuringADirectWrite(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("servesim")
	require.NoError(t, err)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer reader.Close()

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "simulate", "--stride", "1", "-o", fifo) // megabytes: more than the pipe holds
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The first bytes show servesim is writing, long after it set up its
	// signal handling; then nobody reads and the write waits.
	first := make([]byte, 1)
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := reader.Read(first)
		if n == 1 {
			break
		}
		require.ErrorIs(t, err, io.EOF, "before servesim opens the FIFO, a read finds it empty")
		if !time.Now().Before(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // stderr is complete, and no longer written, after Wait
			t.Fatalf("servesim wrote nothing to the FIFO; stderr: %s", stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, "{", string(first))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Error(t, cmd.Wait())
	assert.Equal(t, 143, cmd.ProcessState.ExitCode())
	assert.Equal(t, "servesim: interrupted by SIGTERM\n", stderr.String())
	info, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeNamedPipe, info.Mode()&fs.ModeType)
}

// TestUnwritableFolder runs servesim as a user who may not write the
// target's folder (root drops to nobody for it): one line naming the flag,
// the path and the folder, exit 1.
func TestUnwritableFolder(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("servesim")
	require.NoError(t, err)
	// A folder every user may enter, holding a copy of the binary that
	// every user may run and a folder nobody but root may write.
	dir, err := os.MkdirTemp("", "servesim-unwritable")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "servesim"), data, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ro"), 0o555))

	for _, tc := range []struct{ args, want string }{
		{"simulate --summary -o ro/run.json", "servesim: -o ro/run.json: folder ro is not writable\n"},
		{"scenarios --plot ro/fig.png", "servesim: --plot ro/fig.png: folder ro is not writable\n"},
	} {
		var cmd *exec.Cmd
		var stdout, stderr bytes.Buffer
		// The copy was just written: while another test's fork still holds
		// its descriptor (until that child execs), running it fails with
		// "text file busy". Try again a little later.
		for attempt := 0; ; attempt++ {
			cmd = exec.Command(filepath.Join(dir, "servesim"), strings.Fields(tc.args)...)
			cmd.Dir = dir
			if os.Geteuid() == 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			stdout.Reset()
			stderr.Reset()
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if errors.Is(err, syscall.ETXTBSY) && attempt < 100 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			require.Error(t, err, tc.args)
			break
		}
		assert.Equal(t, exitInput, cmd.ProcessState.ExitCode(), tc.args)
		assert.Equal(t, tc.want, stderr.String(), tc.args)
		assert.Empty(t, stdout.String(), tc.args)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "ro"))
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestOutputsThatAliasAreRefused gives two outputs of one command names of
// one file (not the same string): a usage error naming both flags, and
// nothing written.
func TestOutputsThatAliasAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := func(name string) string { return dir + "/" + name } // not filepath.Join: it would clean "./"
	require.NoError(t, os.Mkdir(in("rl"), 0o755))
	require.NoError(t, os.WriteFile(in("x.svg"), []byte("old"), 0o644))
	require.NoError(t, os.Symlink("x.svg", in("link.svg")))
	require.NoError(t, os.Symlink("new.svg", in("dangling.svg")))
	require.NoError(t, os.Link(in("x.svg"), in("hard.svg")))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"dot in the path", []string{"simulate", "--summary", "-o", in("rl/./p.jsonl"), "--request-log", in("rl/p.jsonl")},
			"--request-log " + in("rl/p.jsonl") + ": -o writes that file already (as " + in("rl/./p.jsonl") + ")"},
		{"dot-dot in the path", []string{"simulate", "--summary", "-o", in("rl/p.csv"), "--request-log", in("rl/../rl/p.csv")},
			"--request-log " + in("rl/../rl/p.csv") + ": -o writes that file already (as " + in("rl/p.csv") + ")"},
		{"symlink to an existing file", []string{"simulate", "--summary", "-o", in("x.svg"), "--plot", in("link.svg")},
			"--plot " + in("link.svg") + ": -o writes that file already (as " + in("x.svg") + ")"},
		{"hard link", []string{"simulate", "--summary", "--plot", in("x.svg"), "-o", in("hard.svg")},
			"--plot " + in("x.svg") + ": -o writes that file already (as " + in("hard.svg") + ")"},
		{"symlink to a file not there yet", []string{"simulate", "--summary", "-o", in("new.svg"), "--plot", in("dangling.svg")},
			"--plot " + in("dangling.svg") + ": -o writes that file already (as " + in("new.svg") + ")"},
		{"scenarios -o and --plot", []string{"scenarios", "-o", in("f.svg"), "--plot", in("f.svg")},
			"--plot " + in("f.svg") + ": -o writes that file already"},
		{"scenarios through a symlink", []string{"scenarios", "-o", in("link.svg"), "--plot", in("x.svg")},
			"--plot " + in("x.svg") + ": -o writes that file already (as " + in("link.svg") + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Equal(t, "servesim: "+tc.want+"\n", stderr)
			assert.Empty(t, stdout)
		})
	}
	assert.ElementsMatch(t, []string{"rl", "x.svg", "link.svg", "dangling.svg", "hard.svg"}, dirNames(t, dir), "nothing was written")
	assert.Empty(t, dirNames(t, in("rl")))
	data, err := os.ReadFile(in("x.svg"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(data))
}

// TestSimulateCommitsItsOutputsTogether makes the last output of a run
// fail after the others were written (staged): none of them appears, and
// no temporary file is left; a run that succeeds commits them all.
func TestSimulateCommitsItsOutputsTogether(t *testing.T) {
	t.Parallel()
	outputs := func(log, fig string, more ...string) func(dir string) []string {
		return func(dir string) []string {
			args := []string{"simulate", "--summary", "--request-log", filepath.Join(dir, log), "--plot", filepath.Join(dir, fig)}
			for _, m := range more {
				if m != "-o" {
					m = filepath.Join(dir, m)
				}
				args = append(args, m)
			}
			return args
		}
	}
	runCommitCases(t, []commitCase{
		{name: "-o under a file", args: outputs("left.csv", "fig.svg", "-o", "file/run.json"), wantErr: notAFolder("-o", "run.json")},
		{name: "stdout fails", args: outputs("left.jsonl", "fig.png"), stdout: fullDevice(),
			wantErr: func(string) string { return "stdout: no space left on device" }},
		{name: "every output written", args: outputs("log.csv", "fig.svg", "-o", "run.json"), want: []string{"log.csv", "fig.svg", "run.json"}},
	})
}

// fullDevice is a writer that fails every write as a full device does.
func fullDevice() io.Writer { return &testsupport.FailingWriter{Err: syscall.ENOSPC} }

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
