package main

import (
	"bytes"
	"context"
	"testing"

	"servesim/internal/sweep"
)

// FuzzParseRunLine feeds sweep.ParseRunLine any line, seeded with real records:
// it never panics, a record it accepts has a cell inside its grid, and the
// members the Pareto record reads either parse or fail with an error.
func FuzzParseRunLine(f *testing.F) {
	s, out, _ := testStreams("")
	if code := run(context.Background(), []string{"sweep", "--quiet", "--max-elapsed", "20", "--profile", "embedded,nosuch.csv", "--controller", "max,min"}, s); code != exitInput {
		f.Fatalf("seed sweep: exit %d", code)
	}
	for _, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"kind":"run","cell":3,"grid_sha256":"` + string(bytes.Repeat([]byte("a"), 64)) + `","grid_cells":2}`))
	f.Add([]byte(`{"kind":"run"}{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := sweep.ParseRunLine(line)
		if err != nil {
			return
		}
		if r.Cell < 0 || r.Cell >= r.GridCells || len(r.Grid) != 64 {
			t.Fatalf("accepted cell %d of %d cells, grid %q", r.Cell, r.GridCells, r.Grid)
		}
		if p, err := r.ParetoRun(); err == nil && p.Cell != r.Cell {
			t.Fatalf("the Pareto run of cell %d is cell %d", r.Cell, p.Cell)
		}
	})
}
