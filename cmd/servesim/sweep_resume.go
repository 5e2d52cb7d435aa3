package main

import (
	"bytes"
	"fmt"
	"io"

	"servesim/internal/plantflag"
	"servesim/internal/sweep"

	"servesim/internal/jsonout"
)

// readResume indexes the records of --resume: each must be a run of a cell
// of this shard, with the same axis values, run on the same trace and
// profile (by SHA-256) by the same grid (grid_sha256), and no cell may
// come twice. The sweep then skips those cells and copies their records.
func (o *sweepOptions) readResume(warn io.Writer, grid *sweepGrid, in *sweepInputs) (*sweep.RecordIndex, error) {
	x, err := sweep.IndexRecords([]string{o.Resume}, warn, func(r *sweep.RunLine) error { return o.checkResumed(r, grid, in) })
	if err != nil {
		return nil, fmt.Errorf("--resume %w", err)
	}
	for k := 1; k < len(x.Refs); k++ {
		if x.Refs[k].Cell == x.Refs[k-1].Cell {
			x.Close()
			return nil, fmt.Errorf("--resume %s: cell %d is there twice, lines %d and %d", o.Resume, x.Refs[k].Cell, x.Refs[k-1].Line, x.Refs[k].Line)
		}
	}
	return x, nil
}

// checkResumed checks a record read back against the cell of this grid it
// names.
func (o *sweepOptions) checkResumed(r *sweep.RunLine, grid *sweepGrid, in *sweepInputs) error {
	if r.GridCells != grid.cells {
		return fmt.Errorf("cell %d is of a grid of %d cells, this one has %d", r.Cell, r.GridCells, grid.cells)
	}
	if r.Cell < o.shard.Lo || r.Cell >= o.shard.Hi {
		return fmt.Errorf("cell %d is not in this shard (cells %d to %d)", r.Cell, o.shard.Lo, o.shard.Hi-1)
	}
	c := o.shard.Cell(r.Cell)
	want := sweep.CellAxes(o.grid, c, plantflag.AxisKey)
	if len(want) != len(r.Axes) {
		return fmt.Errorf("cell %d has %d axis values, this grid's cells have %d", r.Cell, len(r.Axes), len(want))
	}
	for i, kv := range want {
		if r.Axes[i].Key != kv.Key || !bytes.Equal(r.Axes[i].Value, compactJSON(kv.Value)) {
			return fmt.Errorf("cell %d has %s %s, this grid's cell %d has %s %s", r.Cell, r.Axes[i].Key, r.Axes[i].Value, r.Cell, kv.Key, compactJSON(kv.Value))
		}
	}
	var traceSHA, profileSHA any
	tracePath, profilePath := o.grid.Text(c, sweep.AxisTrace), o.grid.Text(c, sweep.AxisProfile)
	if w, ok := in.workloads[tracePath]; ok {
		traceSHA = w.SHA256
	}
	if p, ok := in.profiles[profilePath]; ok {
		profileSHA = p.ProfileCSVSHA256
	}
	for _, input := range []struct {
		what, member, path string
		now                any
	}{
		{"trace", "trace_sha256", tracePath, traceSHA},
		{"profile", "profile_csv_sha256", profilePath, profileSHA},
	} {
		if was := r.Member(input.member); !bytes.Equal(was, compactJSON(input.now)) {
			return fmt.Errorf("cell %d ran on %s %s with %s %s; it now has %s", r.Cell, input.what, input.path, input.member, was, compactJSON(input.now))
		}
	}
	if r.Grid != grid.digest {
		return fmt.Errorf("the record is of another grid (grid_sha256 %.12s..., this grid's %.12s...): other axis values, "+
			"another servesim version, or another --max-elapsed, --max-steps, --exec-timeout, --ttft-slo, --tpot-slo, engine flag or profile manifest", r.Grid, grid.digest)
	}
	return nil
}

// compactJSON is v as a record writes it.
func compactJSON(v any) []byte {
	line, _ := jsonout.AppendLine(nil, v) // the values compared are strings, numbers and null
	return line[:len(line)-1]
}
