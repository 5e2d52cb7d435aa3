package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/sweep"
	"servesim/internal/texttable"
)

// sweepRecord is one run's line of output.
type sweepRecord struct {
	cell    sweep.Cell
	axes    orderedObject // axis values, typed, keyed by axis name
	summary *plant.Summary
	prof    *profile.Profile
	err     error
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

// axisValue is the typed output value of an axis value: a number for plant
// values, a number or null for normalize, the string otherwise.
func axisValue(axis, v string) any {
	switch axis {
	case "profile", "trace", "scheduler", "controller":
		return v
	case "normalize":
		u, _ := parseNormalize(v)
		if u == 0 {
			return nil
		}
		return u
	}
	x, _ := paramByFlag(axis).parseValue(v)
	return x
}

func newSweepRecord(axes []sweep.Axis, c sweep.Cell, r sweepRun) sweepRecord {
	rec := sweepRecord{cell: c, prof: r.prof, err: r.err}
	for i, a := range axes {
		rec.axes = append(rec.axes, keyedValue{axisKey(a.Name), axisValue(a.Name, c.Values[i])})
	}
	if r.report != nil {
		summary := r.report.Summary
		rec.summary = &summary
	}
	return rec
}

// json is the record as a JSON Lines object.
func (r sweepRecord) json() orderedObject {
	obj := orderedObject{{"kind", "run"}, {"cell", r.cell.Index}}
	obj = append(obj, r.axes...)
	var errMsg any
	if r.err != nil {
		errMsg = oneLine(r.err.Error())
	}
	obj = append(obj, keyedValue{"error", errMsg})
	if r.summary != nil {
		obj = append(obj, keyedValue{"metrics", r.summary.Metrics}, keyedValue{"summary", r.summary})
	} else {
		obj = append(obj, keyedValue{"metrics", nil}, keyedValue{"summary", nil})
	}
	return obj
}

// paretoGroup is the Pareto front and the best run of one trace and profile.
type paretoGroup struct {
	profile, trace string
	ttftSLOS       float64
	tpotSLOS       float64
	front          []sweepRecord
	best           *sweepRecord
}

// paretoGroups groups the successful runs by trace and profile (in grid
// order) and finds each group's front and best configuration.
func paretoGroups(o *sweepOptions, records []sweepRecord) []paretoGroup {
	var groups []paretoGroup
	index := map[[2]string]int{}
	members := [][]sweepRecord{}
	for _, r := range records {
		key := [2]string{r.cell.Values[0], r.cell.Values[1]}
		g, ok := index[key]
		if !ok {
			g = len(groups)
			index[key] = g
			groups = append(groups, paretoGroup{profile: key[0], trace: key[1]})
			members = append(members, nil)
		}
		if r.summary != nil {
			members[g] = append(members[g], r)
		}
	}
	for g := range groups {
		group := &groups[g]
		runs := members[g]
		group.ttftSLOS, group.tpotSLOS = o.TTFTSLOS, o.TPOTSLOS
		if len(runs) > 0 {
			if group.ttftSLOS == 0 {
				group.ttftSLOS = runs[0].prof.TTFTSLOSeconds()
			}
			if group.tpotSLOS == 0 {
				group.tpotSLOS = runs[0].prof.TPOTSLOSeconds()
			}
		}
		points := make([]sweep.Point, len(runs))
		for i, r := range runs {
			points[i] = sweep.Point{Index: i, X: r.summary.EnergyPerOutputTokenJ, Y: r.summary.P95TTFTS}
		}
		for _, p := range sweep.ParetoFront(points) {
			group.front = append(group.front, runs[p.Index])
		}
		for i := range runs {
			m := runs[i].summary.Metrics
			feasible := m.UnfinishedRequestsAtEnd == 0 && m.P95TTFTS <= group.ttftSLOS && m.P95TPOTS <= group.tpotSLOS
			if feasible && (group.best == nil || m.EnergyPerOutputTokenJ < group.best.summary.EnergyPerOutputTokenJ) {
				group.best = &runs[i]
			}
		}
	}
	return groups
}

// brief is the short form of a run in the Pareto record.
func (r sweepRecord) brief() orderedObject {
	obj := orderedObject{{"cell", r.cell.Index}}
	obj = append(obj, r.axes[2:]...)
	m := r.summary.Metrics
	return append(obj,
		keyedValue{"energy_per_output_token_j", m.EnergyPerOutputTokenJ},
		keyedValue{"p95_ttft_s", m.P95TTFTS},
		keyedValue{"p95_tpot_s", m.P95TPOTS},
		keyedValue{"completed_fraction", m.CompletedFraction})
}

// paretoJSON is the final JSON Lines record.
func paretoJSON(groups []paretoGroup) orderedObject {
	out := make([]orderedObject, len(groups))
	for i, g := range groups {
		front := make([]orderedObject, len(g.front))
		for j, r := range g.front {
			front[j] = r.brief()
		}
		var best any
		if g.best != nil {
			best = g.best.brief()
		}
		out[i] = orderedObject{
			{"profile", g.profile}, {"trace", g.trace},
			{"ttft_slo_s", nullIfZero(g.ttftSLOS)}, {"tpot_slo_s", nullIfZero(g.tpotSLOS)},
			{"pareto_front", front}, {"best_under_slo", best},
		}
	}
	return orderedObject{{"kind", "pareto"}, {"x", "energy_per_output_token_j"}, {"y", "p95_ttft_s"}, {"groups", out}}
}

func nullIfZero(x float64) any {
	if x == 0 {
		return nil
	}
	return x
}

// summaryColumns lists the JSON names of plant.Summary's fields in order,
// flattening the embedded metrics.
func summaryColumns() []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	walk(reflect.TypeFor[plant.Summary]())
	return names
}

// summaryValues formats a summary's fields in summaryColumns order; an
// undefined number is an empty cell.
func summaryValues(s *plant.Summary) []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Anonymous {
				walk(f)
				continue
			}
			switch f.Kind() {
			case reflect.Float64:
				x := f.Float()
				if math.IsNaN(x) || math.IsInf(x, 0) {
					out = append(out, "")
				} else {
					out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
				}
			default:
				out = append(out, fmt.Sprint(f.Interface()))
			}
		}
	}
	walk(reflect.ValueOf(s).Elem())
	return out
}

// csvSummaryRenames gives the summary fields that share a name with an
// axis of every sweep their simulate document's names (controller_name,
// scheduler_name), so that every CSV column has its own name: the axis
// holds the flag value ("chunked"), the summary field the scheduler's name
// ("chunked_prefill_scheduler"). Another summary field named like an axis
// (reporting_horizon_s, with a --horizon axis) is written as summary_NAME.
var csvSummaryRenames = map[string]string{"controller": "controller_name", "scheduler": "scheduler_name"}

// sweepCSV writes one CSV row per run: cell, axis values, error, summary.
func sweepCSV(axes []sweep.Axis, records []sweepRecord) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"cell"}
	for _, a := range axes {
		header = append(header, axisKey(a.Name))
	}
	columns := summaryColumns()
	header = append(header, "error")
	axisColumns := map[string]bool{}
	for _, name := range header {
		axisColumns[name] = true
	}
	for _, c := range columns {
		if renamed, ok := csvSummaryRenames[c]; ok {
			c = renamed
		} else if axisColumns[c] {
			c = "summary_" + c
		}
		header = append(header, c)
	}
	if err := w.Write(header); err != nil {
		return nil, err
	}
	for _, r := range records {
		row := append([]string{strconv.Itoa(r.cell.Index)}, r.cell.Values...)
		errMsg := ""
		if r.err != nil {
			errMsg = oneLine(r.err.Error())
		}
		row = append(row, errMsg)
		if r.summary != nil {
			row = append(row, summaryValues(r.summary)...)
		} else {
			row = append(row, make([]string, len(columns))...)
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// sweepTable renders the runs and the Pareto section for terminals.
func sweepTable(axes []sweep.Axis, records []sweepRecord, groups []paretoGroup) string {
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
	for _, g := range groups {
		fmt.Fprintf(&b, "\nPareto front (energy per output token vs p95 TTFT), profile %s, trace %s:\n", g.profile, g.trace)
		if len(g.front) == 0 {
			b.WriteString("  no successful run\n")
		}
		for _, r := range g.front {
			fmt.Fprintf(&b, "  cell %d: %s  %.3f J/token, p95 TTFT %.3f s\n", r.cell.Index,
				strings.Join(r.cell.Values[2:], " "), r.summary.EnergyPerOutputTokenJ, r.summary.P95TTFTS)
		}
		if g.best != nil {
			fmt.Fprintf(&b, "best under SLO (p95 TTFT <= %g s, p95 TPOT <= %g s, all completed): cell %d (%s), %.3f J/token\n",
				g.ttftSLOS, g.tpotSLOS, g.best.cell.Index, strings.Join(g.best.cell.Values[2:], " "), g.best.summary.EnergyPerOutputTokenJ)
		} else {
			fmt.Fprintf(&b, "best under SLO (p95 TTFT <= %g s, p95 TPOT <= %g s, all completed): none meets it\n", g.ttftSLOS, g.tpotSLOS)
		}
	}
	return b.String()
}

// loadTraceFile reads an Azure-format trace from path ("-" is stdin).
func loadTraceFile(s *streams, path string, maxElapsedS float64) (plant.Workload, error) {
	in, name, err := openInput(path, s)
	if err != nil {
		return plant.Workload{}, fmt.Errorf("trace %s: %w", name, err)
	}
	defer in.Close()
	return plant.LoadWorkload(in, name, maxElapsedS)
}
