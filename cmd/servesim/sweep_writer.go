package main

import (
	"crypto/sha256"
	"encoding/hex"

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
	if e := o.Engine.Options(); e.Enabled() {
		identity = append(identity, jsonout.Member{Key: "engine", Value: jsonout.Object{
			{Key: "prefix_cache", Value: e.PrefixCache}, {Key: "kv_block_tokens", Value: e.BlockTokens()},
			{Key: "shared_prefix_tokens", Value: e.SharedPrefixTokens}, {Key: "preemption", Value: string(e.Preemption)},
		}})
	}
	line, _ := jsonout.AppendLine(nil, identity) // strings and numbers always encode
	sum := sha256.Sum256(line)
	return &sweepGrid{digest: hex.EncodeToString(sum[:]), cells: o.shard.Cells}
}
