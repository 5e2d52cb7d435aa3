package sweeprun

import (
	"bytes"
	"context"
	"io"
	"testing"

	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// FuzzParseRunLine feeds sweep.ParseRunLine any line, seeded with the
// records of a real sweep (one of whose profiles does not load): it never
// panics, a record it accepts has a cell inside its grid, and the members
// the Pareto record reads either parse or fail with an error.
func FuzzParseRunLine(f *testing.F) {
	cfg := config()
	cfg.MaxElapsedS = 20
	cfg.Profiles = []string{runparams.Embedded, "nosuch.csv"}
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Plan(1, 1, sweep.DefaultMaxCells); err != nil {
		f.Fatal(err)
	}
	var out bytes.Buffer
	err = s.Run(context.Background(), Output{Format: sweep.FormatJSONL, Jobs: 2, Stderr: flaggedStderr(io.Discard)},
		func(write func(io.Writer) error) error { return write(&out) })
	if err == nil {
		f.Fatal("the seed sweep's runs of nosuch.csv did not fail")
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
