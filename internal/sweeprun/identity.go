package sweeprun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"

	"servesim/internal/jsonout"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// identity identifies the grid of a sweep: every record carries it, so
// that shards, partial files and resumed runs can be checked against each
// other.
type identity struct {
	digest string // grid_sha256
	cells  int    // grid_cells: the cells of the whole grid
}

// identify identifies the grid of s run on the inputs in: its digest is
// the SHA-256 of its axes, the SHA-256 of every profile and trace (null
// for one that did not load; a profile or trace is named by its content,
// not by its path: see inputs.key), the options that change a run or the Pareto
// record (--max-elapsed, --max-steps, --exec-timeout, --ttft-slo,
// --tpot-slo, --e2e-slo when given, and the engine flags when a feature is
// on), the batched service model's cards, limits and preemption when the
// service-model axis holds it (the axis itself is among the axes) and the
// servesim version; not the shard, so every shard of a grid has the same.
// An option added later enters only when given, so a grid without it
// keeps the digest it had.
func (s *Sweep) identify(in *inputs) identity {
	axes := make([]jsonout.Object, len(s.axes))
	for i, a := range s.axes {
		values := a.Values
		if a.Name == sweep.AxisProfile || a.Name == sweep.AxisTrace {
			values = make([]string, len(a.Values))
			for k, path := range a.Values {
				values[k] = in.key(a.Name, path)
			}
		}
		axes[i] = jsonout.Object{{Key: "name", Value: a.Name}, {Key: "values", Value: values}}
	}
	profiles := make([]jsonout.Object, len(s.cfg.Profiles))
	for i, path := range s.cfg.Profiles {
		var csvSHA, manifestSHA any
		if p, ok := in.profiles[path]; ok {
			csvSHA, manifestSHA = p.ProfileCSVSHA256, p.ManifestSHA256
		}
		profiles[i] = jsonout.Object{{Key: "path", Value: in.key(sweep.AxisProfile, path)}, {Key: "profile_csv_sha256", Value: csvSHA}, {Key: "manifest_sha256", Value: manifestSHA}}
	}
	traces := make([]jsonout.Object, len(s.cfg.Traces))
	for i, path := range s.cfg.Traces {
		var sha any
		if w, ok := in.workloads[path]; ok {
			sha = w.SHA256
		}
		traces[i] = jsonout.Object{{Key: "path", Value: in.key(sweep.AxisTrace, path)}, {Key: "trace_sha256", Value: sha}}
	}
	c := s.cfg
	doc := jsonout.Object{
		{Key: "servesim_version", Value: c.Version}, {Key: "axes", Value: axes}, {Key: "profiles", Value: profiles}, {Key: "traces", Value: traces},
		{Key: "max_elapsed_s", Value: c.MaxElapsedS}, {Key: "max_steps", Value: c.MaxSteps}, {Key: "exec_timeout_s", Value: c.ExecTimeoutS},
		{Key: "ttft_slo_s", Value: c.SLO.TTFTSeconds}, {Key: "tpot_slo_s", Value: c.SLO.TPOTSeconds},
	}
	if c.SLO.E2ESeconds != 0 {
		doc = append(doc, jsonout.Member{Key: "e2e_slo_s", Value: c.SLO.E2ESeconds})
	}
	if e := c.Engine.Options(); e.Enabled() {
		doc = append(doc, jsonout.Member{Key: "engine", Value: jsonout.Object{
			{Key: "prefix_cache", Value: e.PrefixCache}, {Key: "kv_block_tokens", Value: e.BlockTokens()},
			{Key: "shared_prefix_tokens", Value: e.SharedPrefixTokens}, {Key: "preemption", Value: string(e.Preemption)},
		}})
	}
	if in.service != nil {
		doc = append(doc, jsonout.Member{Key: "service", Value: in.service.identity(c)})
	}
	line, _ := jsonout.AppendLine(nil, doc) // strings and numbers always encode
	sum := sha256.Sum256(line)
	return identity{digest: hex.EncodeToString(sum[:]), cells: s.shard.Cells}
}

// readResume indexes the records of the file path (--resume): each must be
// a run of a cell of this shard, with the same axis values, run on the
// same trace and profile (by SHA-256) by the same grid (grid_sha256), and
// no cell may come twice. The sweep then skips those cells and copies
// their records.
func (s *Sweep) readResume(path string, warn io.Writer, id identity, in *inputs) (*sweep.RecordIndex, error) {
	x, err := sweep.IndexRecords([]string{path}, warn, func(r *sweep.RunLine) error { return s.checkResumed(r, id, in) })
	if err != nil {
		return nil, runparams.Errorf("%s %w", runparams.Setting("resume"), err)
	}
	for k := 1; k < len(x.Refs); k++ {
		if x.Refs[k].Cell == x.Refs[k-1].Cell {
			x.Close()
			return nil, runparams.Errorf("%s %s: cell %d is there twice, lines %d and %d", runparams.Setting("resume"), path, x.Refs[k].Cell, x.Refs[k-1].Line, x.Refs[k].Line)
		}
	}
	return x, nil
}

// checkResumed checks a record read back against the cell of this grid it
// names.
func (s *Sweep) checkResumed(r *sweep.RunLine, id identity, in *inputs) error {
	if r.GridCells != id.cells {
		return fmt.Errorf("cell %d is of a grid of %d cells, this one has %d", r.Cell, r.GridCells, id.cells)
	}
	if r.Cell < s.shard.Lo || r.Cell >= s.shard.Hi {
		return fmt.Errorf("cell %d is not in this shard (cells %d to %d)", r.Cell, s.shard.Lo, s.shard.Hi-1)
	}
	c := s.shard.Cell(r.Cell)
	want := sweep.CellAxes(s.grid, c, axisKey)
	if len(want) != len(r.Axes) {
		return fmt.Errorf("cell %d has %d axis values, this grid's cells have %d", r.Cell, len(r.Axes), len(want))
	}
	for i, kv := range want {
		if r.Axes[i].Key == kv.Key && (kv.Key == sweep.AxisProfile || kv.Key == sweep.AxisTrace) {
			continue // a path: its content is checked below, however it was spelled
		}
		if r.Axes[i].Key != kv.Key || !bytes.Equal(r.Axes[i].Value, compactJSON(kv.Value)) {
			return fmt.Errorf("cell %d has %s %s, this grid's cell %d has %s %s", r.Cell, r.Axes[i].Key, r.Axes[i].Value, r.Cell, kv.Key, compactJSON(kv.Value))
		}
	}
	var traceSHA, profileSHA any
	tracePath, profilePath := s.grid.Text(c, sweep.AxisTrace), s.grid.Text(c, sweep.AxisProfile)
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
	if r.Grid != id.digest {
		return runparams.Errorf("the record is of another grid (grid_sha256 %.12s..., this grid's %.12s...): other axis values, "+
			"another servesim version, or another %s, %s, %s, %s, %s, %s, engine flag, service flag or profile manifest", r.Grid, id.digest,
			runparams.Setting("max-elapsed"), runparams.Setting("max-steps"), runparams.Setting("exec-timeout"), runparams.Setting("ttft-slo"), runparams.Setting("tpot-slo"), runparams.Setting("e2e-slo"))
	}
	return nil
}

// key is what the grid's identity holds of the profile or trace path
// (axis: sweep.AxisProfile or AxisTrace): not the path as spelled, so
// that shards given one file as data/code.csv, /home/me/data/code.csv or
// /traces/code.csv on another mount are of one grid, but the file's
// content: "sha256:" and the SHA-256 of a trace, of a profile's CSV and
// manifest; for one that did not load, its absolute path. The embedded
// profile and trace and stdin ("-") keep their names, so a grid of them
// keeps the digest it had.
func (in *inputs) key(axis, path string) string {
	if path == runparams.Embedded || path == "-" {
		return path
	}
	switch axis {
	case sweep.AxisProfile:
		if p, ok := in.profiles[path]; ok {
			return "sha256:" + p.ProfileCSVSHA256 + "," + p.ManifestSHA256
		}
	case sweep.AxisTrace:
		if w, ok := in.workloads[path]; ok {
			return "sha256:" + w.SHA256
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// compactJSON is v as a record writes it.
func compactJSON(v any) []byte {
	line, _ := jsonout.AppendLine(nil, v) // the values compared are strings, numbers and null
	return line[:len(line)-1]
}

// identity is what identifies the batched service model of a sweep: the
// cards as given and as read (null for cards that did not read), the
// limits and the preemption of its runs.
func (b *batchedService) identity(c Config) jsonout.Object {
	var model any
	if b.err == nil {
		model = b.flags.Model()
	}
	return jsonout.Object{
		{Key: "gpu", Value: c.Service.GPU}, {Key: "model", Value: c.Service.ModelCard}, {Key: "resolved", Value: model},
		{Key: "max_num_seqs", Value: c.Service.MaxNumSeqs}, {Key: "max_num_batched_tokens", Value: c.Service.MaxNumBatchedTokens},
		{Key: "gpu_memory_utilization", Value: c.Service.GPUMemoryUtilization},
		{Key: "preemption", Value: string(b.flags.EngineOptions(c.Engine.Options()).Preemption)},
	}
}
