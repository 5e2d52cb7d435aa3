// Package testsupport holds what the tests of several packages share: the
// golden-file check with its -update flag, and the fake readers, writers
// and files that tests of input caps and write errors feed to the code.
// It imports testing and is for tests only.
package testsupport

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag of every test binary that imports this
// package: `go test -run TestX -update` rewrites the golden files TestX
// checks instead of comparing them.
var update = flag.Bool("update", false, "rewrite golden files")

// Updating reports whether the tests run with -update, for golden outputs
// that CheckGolden does not cover (a folder, a file made by another tool).
func Updating() bool { return *update }

// diffLines is how many lines of each side a mismatch shows at the most,
// and diffWidth how many bytes of each line.
const (
	diffLines = 12
	diffWidth = 160
)

// CheckGolden compares got with the golden file path. With -update it
// rewrites the file instead (creating its folder), atomically: a rename of
// a finished temporary file, so an interrupted run leaves the old file.
// A mismatch fails the test with the lines that differ and the command
// that rewrites the file.
func CheckGolden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := writeAtomic(path, got); err != nil {
			t.Fatalf("golden %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (go test -run '%s' -update writes it)", path, err, rootName(t))
	}
	if !bytes.Equal(want, got) {
		t.Errorf("golden %s differs from the output (go test -run '%s' -update rewrites it):\n%s", path, rootName(t), Diff(string(want), string(got)))
	}
}

// rootName is the name of the top-level test, what -run selects.
func rootName(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return "^" + name + "$"
}

// writeAtomic writes data to path through a temporary file in the same
// folder.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// Diff describes how got differs from want, line by line: where the first
// difference is, then the differing block of each side (the lines between
// the common start and the common end) cut to diffLines lines, each line
// quoted and cut to diffWidth bytes around the first differing column.
func Diff(want, got string) string {
	w, g := lines(want), lines(got)
	start := 0
	for start < len(w) && start < len(g) && w[start] == g[start] {
		start++
	}
	endW, endG := len(w), len(g)
	for endW > start && endG > start && w[endW-1] == g[endG-1] {
		endW--
		endG--
	}
	col := 0
	if start < len(w) && start < len(g) {
		for col < len(w[start]) && col < len(g[start]) && w[start][col] == g[start][col] {
			col++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d, byte %d (want %d lines, got %d)\n", start+1, col+1, len(w), len(g))
	from := max(0, col-diffWidth/2)
	block := func(sign string, lines []string) {
		for i, line := range lines {
			if i == diffLines {
				fmt.Fprintf(&b, "%s ... %d more lines\n", sign, len(lines)-i)
				break
			}
			if len(line) > diffWidth {
				line = line[min(from, len(line)):min(from+diffWidth, len(line))]
			}
			fmt.Fprintf(&b, "%s %q\n", sign, line)
		}
	}
	block("-", w[start:endW])
	block("+", g[start:endG])
	return b.String()
}

// lines splits s after each newline; a last line without one is a line.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
