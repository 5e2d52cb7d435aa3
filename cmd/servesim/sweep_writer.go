package main

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"iter"

	"servesim/internal/sweep"

	"servesim/internal/jsonout"
)

// sweepGrid identifies the grid of a sweep: every record carries it, so
// that shards, partial files and resumed runs can be checked against each
// other.
type sweepGrid struct {
	digest string // grid_sha256
	cells  int    // grid_cells: the cells of the whole grid
}

// newSweepGrid identifies the grid of o run on the inputs in: its digest
// is the SHA-256 of its axes, the SHA-256 of every profile and trace (null
// for one that did not load), the options that change a run or the Pareto
// record (--max-elapsed, --max-steps, --exec-timeout, --ttft-slo,
// --tpot-slo, and the engine flags when a feature is on) and the servesim
// version; not the shard, so every shard of a grid has the same.
func newSweepGrid(o *sweepOptions, in *sweepInputs) *sweepGrid {
	axes := make([]jsonout.Object, len(o.axes))
	for i, a := range o.axes {
		axes[i] = jsonout.Object{{Key: "name", Value: a.Name}, {Key: "values", Value: a.Values}}
	}
	profiles := make([]jsonout.Object, len(o.Profiles))
	for i, path := range o.Profiles {
		var csvSHA, manifestSHA any
		if p, ok := in.profiles[path]; ok {
			csvSHA, manifestSHA = p.ProfileCSVSHA256, p.ManifestSHA256
		}
		profiles[i] = jsonout.Object{{Key: "path", Value: path}, {Key: "profile_csv_sha256", Value: csvSHA}, {Key: "manifest_sha256", Value: manifestSHA}}
	}
	traces := make([]jsonout.Object, len(o.Traces))
	for i, path := range o.Traces {
		var sha any
		if w, ok := in.workloads[path]; ok {
			sha = w.SHA256
		}
		traces[i] = jsonout.Object{{Key: "path", Value: path}, {Key: "trace_sha256", Value: sha}}
	}
	identity := jsonout.Object{
		{Key: "servesim_version", Value: resolvedVersion()}, {Key: "axes", Value: axes}, {Key: "profiles", Value: profiles}, {Key: "traces", Value: traces},
		{Key: "max_elapsed_s", Value: o.MaxElapsedS}, {Key: "max_steps", Value: o.MaxSteps}, {Key: "exec_timeout_s", Value: o.ExecTimeoutS},
		{Key: "ttft_slo_s", Value: o.TTFTSLOSeconds}, {Key: "tpot_slo_s", Value: o.TPOTSLOSeconds},
	}
	if e := o.Engine.options(); e.Enabled() {
		identity = append(identity, jsonout.Member{Key: "engine", Value: jsonout.Object{
			{Key: "prefix_cache", Value: e.PrefixCache}, {Key: "kv_block_tokens", Value: e.BlockTokens()},
			{Key: "shared_prefix_tokens", Value: e.SharedPrefixTokens}, {Key: "preemption", Value: string(e.Preemption)},
		}})
	}
	line, _ := jsonout.AppendLine(nil, identity) // strings and numbers always encode
	sum := sha256.Sum256(line)
	return &sweepGrid{digest: hex.EncodeToString(sum[:]), cells: o.shard.Cells}
}

// sweepWriter writes a sweep's records in o.Format as they come, with the
// records resumed from a file (--resume) in their places, and keeps what
// the end of the output needs: the Pareto fronts and best runs, and for
// --format table the records themselves (a table's columns are as wide as
// their widest cell, so nothing is written before the last run).
type sweepWriter struct {
	o       *sweepOptions
	grid    *sweepGrid
	out     io.Writer // each record is one Write
	csv     *csv.Writer
	table   []sweep.Record
	pareto  sweep.Pareto[sweep.Brief]
	resumed *sweep.RecordIndex // nil without --resume
	next    int                // the next of resumed.Refs to write
	written int                // records written (or kept, for a table)
	failed  int                // of which runs that failed
	line    []byte
}

// newSweepWriter starts the output on out: the CSV header, for CSV.
func newSweepWriter(o *sweepOptions, grid *sweepGrid, out io.Writer, resumed *sweep.RecordIndex) (*sweepWriter, error) {
	w := &sweepWriter{o: o, grid: grid, out: out, resumed: resumed}
	if o.Format == "csv" {
		w.csv = csv.NewWriter(out)
		if err := w.writeCSV(sweep.CSVHeader(o.axes, axisKey)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// add writes the record of a run, after the resumed records that come
// before it in grid order.
func (w *sweepWriter) add(r sweep.Record) error {
	if err := w.resumedBefore(r.Cell.Index); err != nil {
		return err
	}
	var err error
	switch w.o.Format {
	case "csv":
		err = w.writeCSV(r.CSVRow())
	case "table":
		w.table = append(w.table, r)
	default:
		if w.line, err = jsonout.AppendLine(w.line[:0], r.JSON(w.grid.digest, w.grid.cells)); err != nil {
			return internalError{fmt.Errorf("encoding a record: %w", err)}
		}
		_, err = w.out.Write(w.line)
	}
	if err != nil {
		return err
	}
	w.count(r.Err != nil)
	w.pareto.Add(r.ParetoRun(w.o.grid))
	return nil
}

// writeCSV writes one CSV row at once.
func (w *sweepWriter) writeCSV(row []string) error {
	if err := w.csv.Write(row); err != nil {
		return err
	}
	w.csv.Flush()
	return w.csv.Error()
}

func (w *sweepWriter) count(failed bool) {
	w.written++
	if failed {
		w.failed++
	}
}

// resumedBefore copies the resumed records of the cells before cell, as
// they were written.
func (w *sweepWriter) resumedBefore(cell int) error {
	if w.resumed == nil {
		return nil
	}
	for ; w.next < len(w.resumed.Refs) && w.resumed.Refs[w.next].Cell < cell; w.next++ {
		var rec *sweep.RunLine
		var err error
		if w.line, rec, err = w.resumed.Read(w.resumed.Refs[w.next], w.line[:0]); err != nil {
			return inputError{err}
		}
		p, err := rec.ParetoRun()
		if err != nil {
			return inputError{fmt.Errorf("%s: %w", w.resumed.Where(w.resumed.Refs[w.next]), err)}
		}
		if _, err := w.out.Write(w.line); err != nil {
			return err
		}
		w.count(rec.Failed)
		w.pareto.Add(p)
	}
	return nil
}

// finish writes what follows the last run: the resumed records after it
// and, when the sweep is complete, the Pareto record (JSON Lines) or the
// table with its Pareto section; the table of an interrupted sweep has
// its rows only.
func (w *sweepWriter) finish(complete bool) error {
	if err := w.resumedBefore(w.grid.cells); err != nil {
		return err
	}
	switch {
	case w.o.Format == "table":
		pareto := &w.pareto
		if !complete {
			pareto = nil
		}
		_, err := w.out.Write([]byte(sweep.Table(w.o.axes, w.table, pareto)))
		return err
	case w.o.Format == "jsonl" && complete:
		line, err := jsonout.AppendLine(w.line[:0], sweep.ParetoRecord(&w.pareto))
		if err != nil {
			return internalError{fmt.Errorf("encoding the Pareto record: %w", err)}
		}
		_, err = w.out.Write(line)
		return err
	}
	return nil
}

// cellsToRun yields the cells of the shard in grid order, less those
// resumed.
func (o *sweepOptions) cellsToRun(resumed *sweep.RecordIndex) iter.Seq[sweep.Cell] {
	return func(yield func(sweep.Cell) bool) {
		k := 0
		for index := o.shard.Lo; index < o.shard.Hi; index++ {
			if resumed != nil {
				for k < len(resumed.Refs) && resumed.Refs[k].Cell < index {
					k++
				}
				if k < len(resumed.Refs) && resumed.Refs[k].Cell == index {
					continue
				}
			}
			if !yield(o.shard.Cell(index)) {
				return
			}
		}
	}
}
