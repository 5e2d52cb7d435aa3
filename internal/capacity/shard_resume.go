package capacity

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"servesim/internal/runparams"
)

// ResumeAuto is the value of --resume that has a shard take up what an
// earlier run of it left behind its -o FILE: the records of FILE (a shard
// that completed) or else of FILE.partial (one stopped by a signal) are
// copied, in their places, and only the sizes they lack are simulated. A
// file that holds a record of another study, or of a size not in this
// shard, or that does not read, is passed over with one line on stderr:
// the shard simulates its share and replaces it. Once the shard completes,
// FILE.partial is removed, so that the final run's --evaluations pattern
// finds no leftover of an earlier study.
const ResumeAuto = "auto"

// resumeSetting is the setting whose value ResumeAuto is.
const resumeSetting = runparams.Setting("resume")

// maxResumedLine bounds a line read back by --resume auto: a record takes
// about 500 bytes.
const maxResumedLine = 64 << 10

// shardResume reads the records an earlier run of shard cells (of grid)
// left at path or path.partial, by cell, saying on stderr what it takes
// and what it passes over.
func shardResume(grid Grid, cells []int, path string, stderr runparams.Warner) map[int][]byte {
	for _, candidate := range []string{path, path + ".partial"} {
		if info, err := os.Stat(candidate); errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
			continue
		}
		known, err := readShardRecords(grid, cells, candidate)
		if err != nil {
			stderr.Warnf("servesim: capacity shard: %s %s: not resumed, this shard simulates its sizes again and replaces it: %v\n", resumeSetting, ResumeAuto, err)
			continue
		}
		if len(known) == 0 {
			continue
		}
		stderr.Warnf("servesim: capacity shard: %s %s: %d of the shard's %d sizes taken from %s\n", resumeSetting, ResumeAuto, len(known), len(cells), candidate)
		return known
	}
	return nil
}

// readShardRecords reads the records of name, each of which must be of
// grid and of one of cells; a last line without its newline (a process
// killed while it wrote it) is left out.
func readShardRecords(grid Grid, cells []int, name string) (map[int][]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	known := map[int][]byte{}
	r := bufio.NewReaderSize(f, maxResumedLine)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		switch {
		case err == io.EOF:
			return known, nil // a last line cut short is left out
		case errors.Is(err, bufio.ErrBufferFull):
			return nil, fmt.Errorf("%s line %d: a line of more than %d bytes: not a capacity evaluation record", name, n, maxResumedLine)
		case err != nil:
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		rec, err := ParseEvaluationRecord(bytes.TrimSuffix(line, []byte("\n")))
		switch {
		case err != nil:
		case rec.GridSHA256 != grid.Digest || rec.GridCells != len(grid.Sizes):
			err = fmt.Errorf("the record is of another capacity study (grid_sha256 %.12s..., this study's %.12s...)", rec.GridSHA256, grid.Digest)
		case !slices.Contains(cells, rec.Cell) || rec.Replicas != grid.Sizes[rec.Cell]:
			err = fmt.Errorf("cell %d (%d replicas) is not one of this shard's sizes", rec.Cell, rec.Replicas)
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		if _, ok := known[rec.Cell]; !ok {
			known[rec.Cell] = slices.Clone(line)
		}
	}
}

// removePartial removes, once a shard with --resume auto completed, the
// path.partial an earlier run left: its records are in path now (or they
// were of another study, which was said).
func removePartial(path string, stderr runparams.Warner) {
	partial := path + ".partial"
	if info, err := os.Lstat(partial); err == nil && info.Mode().IsRegular() {
		if err := os.Remove(partial); err != nil {
			stderr.Warnf("servesim: warning: capacity shard: %s %s: %v\n", resumeSetting, ResumeAuto, err)
		}
	}
}
