package main

import (
	"servesim/internal/plantflag"
	"servesim/internal/sweep"
)

// newSweepRecord is the record of cell c's run r. The SLOs it is judged by
// are the flags', else its profile's when it ran, else none.
func newSweepRecord(o *sweepOptions, in *sweepInputs, c sweep.Cell, r sweepRun) sweep.Record {
	rec := sweep.Record{Cell: c, Axes: sweep.CellAxes(o.grid, c, plantflag.AxisKey), Err: r.err, TTFTSLOSeconds: o.TTFTSLOSeconds, TPOTSLOSeconds: o.TPOTSLOSeconds}
	if w, ok := in.workloads[o.grid.Text(c, sweep.AxisTrace)]; ok {
		rec.TraceSHA = w.SHA256
	}
	if p, ok := in.profiles[o.grid.Text(c, sweep.AxisProfile)]; ok {
		rec.ProfileCSVSHA, rec.ManifestSHA = p.ProfileCSVSHA256, p.ManifestSHA256
	}
	if r.report != nil {
		summary := r.report.Summary
		rec.Summary = &summary
		if rec.TTFTSLOSeconds == 0 {
			rec.TTFTSLOSeconds = r.prof.TTFTSLOSeconds()
		}
		if rec.TPOTSLOSeconds == 0 {
			rec.TPOTSLOSeconds = r.prof.TPOTSLOSeconds()
		}
	}
	return rec
}
