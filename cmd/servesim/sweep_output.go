package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/sweep"
	"servesim/internal/texttable"

	"servesim/internal/jsonout"
)

// sweepRecord is one run's line of output.
type sweepRecord struct {
	cell    sweep.Cell
	axes    jsonout.Object // axis values, typed, keyed by axis name
	summary *plant.Summary
	err     error
	// The identity of the run's inputs (nil: the input did not load) and
	// the SLOs it is judged by (0: none), as the record writes them.
	traceSHA, profileCSVSHA, manifestSHA any
	ttftSLOSeconds, tpotSLOSeconds       float64
}

// axisKey is the output name of an axis: the plant field's JSON name for a
// plant flag, else the flag name.
func axisKey(axis string) string {
	for _, pp := range plantParams {
		if pp.flag == axis {
			return pp.field
		}
	}
	return axis
}

// cellAxes is a cell's axis values as a record writes them, typed: a
// number for plant values, a number or null for normalize, the string
// otherwise.
func cellAxes(g *sweep.Grid, c sweep.Cell) jsonout.Object {
	obj := make(jsonout.Object, len(g.Axes))
	for i, a := range g.Axes {
		v := g.Parsed(c, a.Name)
		if a.Name == sweep.AxisNormalize && v == 0.0 {
			v = nil
		}
		obj[i] = jsonout.Member{Key: axisKey(a.Name), Value: v}
	}
	return obj
}

// newSweepRecord is the record of cell c's run r. The SLOs it is judged by
// are the flags', else its profile's when it ran, else none.
func newSweepRecord(o *sweepOptions, in *sweepInputs, c sweep.Cell, r sweepRun) sweepRecord {
	rec := sweepRecord{cell: c, axes: cellAxes(o.grid, c), err: r.err, ttftSLOSeconds: o.TTFTSLOSeconds, tpotSLOSeconds: o.TPOTSLOSeconds}
	if w, ok := in.workloads[o.grid.Text(c, sweep.AxisTrace)]; ok {
		rec.traceSHA = w.SHA256
	}
	if p, ok := in.profiles[o.grid.Text(c, sweep.AxisProfile)]; ok {
		rec.profileCSVSHA, rec.manifestSHA = p.ProfileCSVSHA256, p.ManifestSHA256
	}
	if r.report != nil {
		summary := r.report.Summary
		rec.summary = &summary
		if rec.ttftSLOSeconds == 0 {
			rec.ttftSLOSeconds = r.prof.TTFTSLOSeconds()
		}
		if rec.tpotSLOSeconds == 0 {
			rec.tpotSLOSeconds = r.prof.TPOTSLOSeconds()
		}
	}
	return rec
}

// json is the record as a JSON Lines object, in the order of
// sweep.RunRecordKeys with the axis values after the first four.
func (r sweepRecord) json(g *sweepGrid) jsonout.Object {
	obj := make(jsonout.Object, 0, len(sweep.RunRecordKeys)+len(r.axes))
	obj = append(obj, jsonout.Member{Key: "kind", Value: "run"}, jsonout.Member{Key: "cell", Value: r.cell.Index},
		jsonout.Member{Key: "grid_sha256", Value: g.digest}, jsonout.Member{Key: "grid_cells", Value: g.cells})
	obj = append(obj, r.axes...)
	var errMsg any
	if r.err != nil {
		errMsg = oneLine(r.err.Error())
	}
	obj = append(obj, jsonout.Member{Key: "trace_sha256", Value: r.traceSHA}, jsonout.Member{Key: "profile_csv_sha256", Value: r.profileCSVSHA},
		jsonout.Member{Key: "manifest_sha256", Value: r.manifestSHA},
		jsonout.Member{Key: "ttft_slo_s", Value: sweep.NullIfZero(r.ttftSLOSeconds)}, jsonout.Member{Key: "tpot_slo_s", Value: sweep.NullIfZero(r.tpotSLOSeconds)},
		jsonout.Member{Key: "error", Value: errMsg})
	if r.summary != nil {
		return append(obj, jsonout.Member{Key: "metrics", Value: r.summary.Metrics}, jsonout.Member{Key: "summary", Value: r.summary})
	}
	return append(obj, jsonout.Member{Key: "metrics", Value: nil}, jsonout.Member{Key: "summary", Value: nil})
}

// paretoRun is a run as the Pareto record sees it (sweep.Pareto), with
// what the record and the table write of it.
type paretoRun = sweep.ParetoRun[sweep.Brief]

// paretoTracker keeps the Pareto fronts and best runs of a sweep.
type paretoTracker = sweep.Pareto[sweep.Brief]

// paretoRun is the record as the Pareto record sees it.
func (r sweepRecord) paretoRun(g *sweep.Grid) paretoRun {
	p := paretoRun{Cell: r.cell.Index, Profile: g.Text(r.cell, sweep.AxisProfile), Trace: g.Text(r.cell, sweep.AxisTrace),
		OK: r.summary != nil, TTFTSLOSeconds: r.ttftSLOSeconds, TPOTSLOSeconds: r.tpotSLOSeconds}
	if !p.OK {
		return p
	}
	m := r.summary.Metrics
	p.EnergyPerOutputTokenJ, p.P95TTFTS, p.P95TPOTS, p.UnfinishedRequests = m.EnergyPerOutputTokenJ, m.P95TTFTS, m.P95TPOTS, m.UnfinishedRequestsAtEnd
	brief := jsonout.Object{{Key: "cell", Value: r.cell.Index}}
	var label []string
	for i, a := range g.Axes {
		if !slices.Contains(sweep.GroupAxes, a.Name) {
			brief = append(brief, r.axes[i])
			label = append(label, r.cell.Values[i])
		}
	}
	brief = append(brief,
		jsonout.Member{Key: "energy_per_output_token_j", Value: m.EnergyPerOutputTokenJ},
		jsonout.Member{Key: "p95_ttft_s", Value: m.P95TTFTS},
		jsonout.Member{Key: "p95_tpot_s", Value: m.P95TPOTS},
		jsonout.Member{Key: "completed_fraction", Value: m.CompletedFraction})
	p.Data = sweep.Brief{Record: brief, Label: strings.Join(label, " ")}
	return p
}

// csvSummaryRenames gives the summary fields that share a name with an
// axis of every sweep their simulate document's names (controller_name,
// scheduler_name), so that every CSV column has its own name: the axis
// holds the flag value ("chunked"), the summary field the scheduler's name
// ("chunked_prefill_scheduler"). Another summary field named like an axis
// (reporting_horizon_s, with a --horizon axis) is written as summary_NAME.
var csvSummaryRenames = map[string]string{"controller": "controller_name", "scheduler": "scheduler_name"}

// csvHeader is the header of the CSV output: cell, axis values, error,
// summary fields.
func csvHeader(axes []sweep.Axis) []string {
	header := []string{"cell"}
	for _, a := range axes {
		header = append(header, axisKey(a.Name))
	}
	header = append(header, "error")
	axisColumns := map[string]bool{}
	for _, name := range header {
		axisColumns[name] = true
	}
	for _, c := range plant.SummaryColumns() {
		if renamed, ok := csvSummaryRenames[c]; ok {
			c = renamed
		} else if axisColumns[c] {
			c = "summary_" + c
		}
		header = append(header, c)
	}
	return header
}

// csvRow is a run's CSV row, in the columns of csvHeader.
func (r sweepRecord) csvRow() []string {
	row := append([]string{strconv.Itoa(r.cell.Index)}, r.cell.Values...)
	errMsg := ""
	if r.err != nil {
		errMsg = oneLine(r.err.Error())
	}
	row = append(row, errMsg)
	if r.summary != nil {
		return append(row, r.summary.CSVValues()...)
	}
	return append(row, make([]string, len(plant.SummaryColumns()))...)
}

// sweepTable renders the runs and, for a complete sweep (pareto not nil),
// the Pareto section, for terminals.
func sweepTable(axes []sweep.Axis, records []sweepRecord, pareto *paretoTracker) string {
	t := texttable.Table{Columns: []texttable.Column{{Header: "cell"}}}
	for _, a := range axes {
		t.Columns = append(t.Columns, texttable.Column{Header: a.Name, Text: true})
	}
	t.Columns = append(t.Columns,
		texttable.Column{Header: "done (%)"}, texttable.Column{Header: "p95 TTFT (s)"},
		texttable.Column{Header: "p95 TPOT (ms)"}, texttable.Column{Header: "output (tok/s)"},
		texttable.Column{Header: "energy/token (J)"}, texttable.Column{Header: "peak power (W)"},
		texttable.Column{Header: "peak temp (C)"}, texttable.Column{Header: "error", Text: true})
	for _, r := range records {
		row := append([]string{strconv.Itoa(r.cell.Index)}, r.cell.Values...)
		if r.summary != nil {
			m := r.summary.Metrics
			row = append(row, texttable.Fixed(100*m.CompletedFraction, 1), texttable.Fixed(m.P95TTFTS, 3),
				texttable.Fixed(1000*m.P95TPOTS, 2), texttable.Fixed(m.OutputThroughputTokensPerS, 1),
				texttable.Fixed(m.EnergyPerOutputTokenJ, 3), texttable.Fixed(m.PeakPowerW, 1),
				texttable.Fixed(m.PeakTemperatureC, 1), "")
		} else {
			row = append(row, "", "", "", "", "", "", "", oneLine(r.err.Error()))
		}
		t.AddRow(row...)
	}
	var b strings.Builder
	b.WriteString(t.String())
	if pareto == nil {
		return b.String()
	}
	for _, g := range pareto.Groups() {
		fmt.Fprintf(&b, "\nPareto front (energy per output token vs p95 TTFT), profile %s, trace %s:\n", g.Profile, g.Trace)
		front := g.Front()
		if len(front) == 0 {
			b.WriteString("  no successful run\n")
		}
		for _, r := range front {
			fmt.Fprintf(&b, "  cell %d: %s  %.3f J/token, p95 TTFT %.3f s\n", r.Cell, r.Data.Label, r.EnergyPerOutputTokenJ, r.P95TTFTS)
		}
		if g.Best != nil {
			fmt.Fprintf(&b, "best under SLO (p95 TTFT <= %g s, p95 TPOT <= %g s, all completed): cell %d (%s), %.3f J/token\n",
				g.TTFTSLOSeconds, g.TPOTSLOSeconds, g.Best.Cell, g.Best.Data.Label, g.Best.EnergyPerOutputTokenJ)
		} else {
			fmt.Fprintf(&b, "best under SLO (p95 TTFT <= %g s, p95 TPOT <= %g s, all completed): none meets it\n", g.TTFTSLOSeconds, g.TPOTSLOSeconds)
		}
	}
	return b.String()
}
