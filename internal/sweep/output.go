package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"servesim/internal/jsonout"
	"servesim/internal/limits"
	"servesim/internal/plant"
	"servesim/internal/texttable"
)

// Record is one run of a sweep as its outputs write it: a JSON Lines
// record (JSON), a CSV row (CSVRow) or a table row (Table), and a run of
// the Pareto record (ParetoRun).
type Record struct {
	Cell    Cell
	Axes    jsonout.Object // axis values, typed, keyed by their output names (CellAxes)
	Summary *plant.Summary // nil when the run failed
	// SLO is the run's slo block (nil when it failed); MPCDiagnostics its
	// mpc_diagnostics (nil but for an mpc controller's run), both as
	// simulate's document has them.
	SLO            *plant.SLOReport
	MPCDiagnostics *plant.MPCDiagnostics
	Err            error // why the run failed
	// The identity of the run's inputs (nil: the input did not load) and
	// the SLOs it is judged by (0: none), as the record writes them.
	TraceSHA, ProfileCSVSHA, ManifestSHA any
	TTFTSLOSeconds, TPOTSLOSeconds       float64
}

// CellAxes is a cell's axis values as a record writes them, keyed by
// key(axis), typed as parsed: a number or null for normalize (null: none).
func CellAxes(g *Grid, c Cell, key func(axis string) string) jsonout.Object {
	obj := make(jsonout.Object, len(g.Axes))
	for i, a := range g.Axes {
		v := g.Parsed(c, a.Name)
		if a.Name == AxisNormalize && v == 0.0 {
			v = nil
		}
		obj[i] = jsonout.Member{Key: key(a.Name), Value: v}
	}
	return obj
}

// JSON is the record as a JSON Lines object, in the order of
// RunRecordKeys with the axis values after the first four; gridSHA256 and
// gridCells identify the grid.
func (r Record) JSON(gridSHA256 string, gridCells int) jsonout.Object {
	obj := make(jsonout.Object, 0, len(RunRecordKeys)+len(r.Axes))
	obj = append(obj, jsonout.Member{Key: "kind", Value: "run"}, jsonout.Member{Key: "cell", Value: r.Cell.Index},
		jsonout.Member{Key: "grid_sha256", Value: gridSHA256}, jsonout.Member{Key: "grid_cells", Value: gridCells})
	obj = append(obj, r.Axes...)
	var errMsg any
	if r.Err != nil {
		errMsg = limits.OneLine(r.Err.Error())
	}
	obj = append(obj, jsonout.Member{Key: "trace_sha256", Value: r.TraceSHA}, jsonout.Member{Key: "profile_csv_sha256", Value: r.ProfileCSVSHA},
		jsonout.Member{Key: "manifest_sha256", Value: r.ManifestSHA},
		jsonout.Member{Key: "ttft_slo_s", Value: nullIfZero(r.TTFTSLOSeconds)}, jsonout.Member{Key: "tpot_slo_s", Value: nullIfZero(r.TPOTSLOSeconds)},
		jsonout.Member{Key: "error", Value: errMsg})
	var metrics, summary, slo, mpc any // null when the run failed (mpc: or its controller is not mpc)
	if r.Summary != nil {
		metrics, summary = r.Summary.Metrics, r.Summary
	}
	if r.SLO != nil {
		slo = r.SLO
	}
	if r.MPCDiagnostics != nil {
		mpc = r.MPCDiagnostics
	}
	return append(obj, jsonout.Member{Key: "metrics", Value: metrics}, jsonout.Member{Key: "summary", Value: summary},
		jsonout.Member{Key: "slo", Value: slo}, jsonout.Member{Key: "mpc_diagnostics", Value: mpc})
}

// ParetoRun is the record as the Pareto record sees it.
func (r Record) ParetoRun(g *Grid) ParetoRun[Brief] {
	p := ParetoRun[Brief]{Cell: r.Cell.Index, Profile: g.Text(r.Cell, AxisProfile), Trace: g.Text(r.Cell, AxisTrace),
		OK: r.Summary != nil, TTFTSLOSeconds: r.TTFTSLOSeconds, TPOTSLOSeconds: r.TPOTSLOSeconds}
	if !p.OK {
		return p
	}
	m := r.Summary.Metrics
	p.EnergyPerOutputTokenJ, p.P95TTFTS, p.P95TPOTS, p.UnfinishedRequests = m.EnergyPerOutputTokenJ, m.P95TTFTS, m.P95TPOTS, m.UnfinishedRequestsAtEnd
	brief := jsonout.Object{{Key: "cell", Value: r.Cell.Index}}
	var label []string
	for i, a := range g.Axes {
		if !slices.Contains(GroupAxes, a.Name) {
			brief = append(brief, r.Axes[i])
			label = append(label, r.Cell.Values[i])
		}
	}
	brief = append(brief,
		jsonout.Member{Key: "energy_per_output_token_j", Value: m.EnergyPerOutputTokenJ},
		jsonout.Member{Key: "p95_ttft_s", Value: m.P95TTFTS},
		jsonout.Member{Key: "p95_tpot_s", Value: m.P95TPOTS},
		jsonout.Member{Key: "completed_fraction", Value: m.CompletedFraction})
	p.Data = Brief{Record: brief, Label: strings.Join(label, " ")}
	return p
}

// csvSummaryRenames gives the summary fields that share a name with an
// axis of every sweep their simulate document's names (controller_name,
// scheduler_name), so that every CSV column has its own name: the axis
// holds the flag value ("chunked"), the summary field the scheduler's name
// ("chunked_prefill_scheduler"). Another summary field named like an axis
// (reporting_horizon_s, with a --horizon axis) is written as summary_NAME.
var csvSummaryRenames = map[string]string{"controller": "controller_name", "scheduler": "scheduler_name"}

// sloColumns are the CSV columns of a run's slo block and mpc_diagnostics,
// after the summary's (scripts read the CSV by position: columns are only
// ever added at the end): the objectives, attainment, goodput, the
// percentiles as p50_ttft_s ... p99_e2e_s, and an mpc run's solves and
// fallbacks. value gives a column's cell of a run that has an slo block;
// NaN (undefined, or not an mpc run) writes an empty cell.
var sloColumns = []struct {
	name  string
	value func(*Record) float64
}{
	{"ttft_slo_s", func(r *Record) float64 { return r.SLO.TTFTSLOSeconds }},
	{"tpot_slo_s", func(r *Record) float64 { return r.SLO.TPOTSLOSeconds }},
	{"e2e_slo_s", func(r *Record) float64 {
		if r.SLO.E2ESLOSeconds == nil {
			return math.NaN()
		}
		return *r.SLO.E2ESLOSeconds
	}},
	{"requests_meeting_slo", func(r *Record) float64 { return float64(r.SLO.RequestsMeetingSLO) }},
	{"attainment", func(r *Record) float64 { return r.SLO.Attainment }},
	{"goodput_requests_per_s", func(r *Record) float64 { return r.SLO.GoodputRequestsPerS }},
	{"p50_ttft_s", func(r *Record) float64 { return r.SLO.TTFTS.P50 }},
	{"p90_ttft_s", func(r *Record) float64 { return r.SLO.TTFTS.P90 }},
	{"p99_ttft_s", func(r *Record) float64 { return r.SLO.TTFTS.P99 }},
	{"p50_tpot_s", func(r *Record) float64 { return r.SLO.TPOTS.P50 }},
	{"p90_tpot_s", func(r *Record) float64 { return r.SLO.TPOTS.P90 }},
	{"p99_tpot_s", func(r *Record) float64 { return r.SLO.TPOTS.P99 }},
	{"p50_e2e_s", func(r *Record) float64 { return r.SLO.E2ES.P50 }},
	{"p90_e2e_s", func(r *Record) float64 { return r.SLO.E2ES.P90 }},
	{"p99_e2e_s", func(r *Record) float64 { return r.SLO.E2ES.P99 }},
	{"mpc_successful_solves", func(r *Record) float64 {
		if r.MPCDiagnostics == nil {
			return math.NaN()
		}
		return float64(r.MPCDiagnostics.SuccessfulSolves)
	}},
	{"mpc_fallback_count", func(r *Record) float64 {
		if r.MPCDiagnostics == nil {
			return math.NaN()
		}
		return float64(r.MPCDiagnostics.FallbackCount)
	}},
}

// CSVHeader is the header of the CSV output: cell, axis values (keyed by
// key(axis)), error, summary fields, then the slo block's and mpc's
// (sloColumns).
func CSVHeader(axes []Axis, key func(axis string) string) []string {
	header := []string{"cell"}
	for _, a := range axes {
		header = append(header, key(a.Name))
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
	for _, c := range sloColumns {
		header = append(header, c.name)
	}
	return header
}

// CSVRow is the run's CSV row, in the columns of CSVHeader.
func (r Record) CSVRow() []string {
	row := append([]string{strconv.Itoa(r.Cell.Index)}, r.Cell.Values...)
	errMsg := ""
	if r.Err != nil {
		errMsg = limits.OneLine(r.Err.Error())
	}
	row = append(row, errMsg)
	if r.Summary == nil {
		row = append(row, make([]string, len(plant.SummaryColumns()))...)
	} else {
		row = append(row, r.Summary.CSVValues()...)
	}
	for _, c := range sloColumns {
		cell := ""
		if r.SLO != nil {
			if x := c.value(&r); !math.IsNaN(x) {
				cell = strconv.FormatFloat(x, 'g', -1, 64)
			}
		}
		row = append(row, cell)
	}
	return row
}

// fileAxes are the axes whose values are files (paths as given): a table
// row shows each by its file name, and the paths are listed once, above
// the rows (fileNames).
var fileAxes = []string{AxisProfile, AxisTrace}

// fileNames gives the name a table shows for each value of the file axes,
// by axis position: its file name (filepath.Base), or, when values of the
// axis share a file name, the file name and the value's position on the
// axis ("conv.csv#2"). legend lists the values so shortened with their
// paths, one line each ("trace conv.csv: ../data/conv.csv"); a value shown
// as given ("embedded", "eight.csv") has no line.
func fileNames(axes []Axis) (names []map[string]string, legend string) {
	names = make([]map[string]string, len(axes))
	var lines [][2]string
	for i, a := range axes {
		if !slices.Contains(fileAxes, a.Name) {
			continue
		}
		shared := map[string]map[string]bool{} // file name -> the values that have it
		for _, v := range a.Values {
			base := filepath.Base(v)
			if shared[base] == nil {
				shared[base] = map[string]bool{}
			}
			shared[base][v] = true
		}
		names[i] = make(map[string]string, len(a.Values))
		for k, v := range a.Values {
			if _, done := names[i][v]; done {
				continue
			}
			name := filepath.Base(v)
			if len(shared[name]) > 1 {
				name += "#" + strconv.Itoa(k+1)
			}
			names[i][v] = name
			if name != v {
				lines = append(lines, [2]string{a.Name + " " + name, v})
			}
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l[0]))
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s:%s %s\n", l[0], strings.Repeat(" ", width-utf8.RuneCountInString(l[0])), l[1])
	}
	return names, b.String()
}

// Table renders the runs and, for a complete sweep (pareto not nil), the
// Pareto section, for terminals. The profile and trace columns show file
// names, their paths listed once above the rows (fileNames); every number
// is rounded for people (fixed decimals per column, the objectives to 4
// significant digits), where the JSON Lines and CSV records keep them
// exact.
func Table(axes []Axis, records []Record, pareto *Pareto[Brief]) string {
	names, legend := fileNames(axes)
	short := func(axis, value string) string {
		i := slices.IndexFunc(axes, func(a Axis) bool { return a.Name == axis })
		if i < 0 || names[i] == nil {
			return value
		}
		if name, ok := names[i][value]; ok {
			return name
		}
		return value
	}
	t := texttable.Table{Columns: []texttable.Column{{Header: "cell"}}}
	for _, a := range axes {
		t.Columns = append(t.Columns, texttable.Column{Header: a.Name, Text: true})
	}
	t.Columns = append(t.Columns,
		texttable.Column{Header: "done (%)"}, texttable.Column{Header: "unfinished"}, texttable.Column{Header: "p95 TTFT (s)"},
		texttable.Column{Header: "p95 TPOT (ms)"}, texttable.Column{Header: "output (tok/s)"},
		texttable.Column{Header: "energy/token (J)"}, texttable.Column{Header: "peak power (W)"},
		texttable.Column{Header: "peak temp (C)"}, texttable.Column{Header: "SLO met (%)"},
		texttable.Column{Header: "goodput (req/s)"}, texttable.Column{Header: "p99 TTFT (s)"},
		texttable.Column{Header: "p99 TPOT (ms)"}, texttable.Column{Header: "error", Text: true})
	for _, r := range records {
		row := []string{strconv.Itoa(r.Cell.Index)}
		for i, v := range r.Cell.Values {
			if i < len(axes) {
				v = short(axes[i].Name, v)
			}
			row = append(row, v)
		}
		if r.Summary != nil {
			m := r.Summary.Metrics
			row = append(row, texttable.Fixed(100*m.CompletedFraction, 1), texttable.Fixed(m.UnfinishedRequestsAtEnd, 0), texttable.Fixed(m.P95TTFTS, 3),
				texttable.Fixed(1000*m.P95TPOTS, 2), texttable.Fixed(m.OutputThroughputTokensPerS, 1),
				texttable.Fixed(m.EnergyPerOutputTokenJ, 3), texttable.Fixed(m.PeakPowerW, 1),
				texttable.Fixed(m.PeakTemperatureC, 1))
			if slo := r.SLO; slo != nil {
				row = append(row, texttable.Fixed(100*slo.Attainment, 2), texttable.Fixed(slo.GoodputRequestsPerS, 3),
					texttable.Fixed(slo.TTFTS.P99, 3), texttable.Fixed(1000*slo.TPOTS.P99, 2), "")
			}
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "", "", "", limits.OneLine(r.Err.Error()))
		}
		t.AddRow(row...)
	}
	var b strings.Builder
	if legend != "" {
		b.WriteString(legend + "\n")
	}
	b.WriteString(t.String())
	if pareto == nil {
		return b.String()
	}
	for _, g := range pareto.Groups() {
		fmt.Fprintf(&b, "\nPareto front (energy per output token vs p95 TTFT), profile %s, trace %s:\n",
			short(AxisProfile, g.Profile), short(AxisTrace, g.Trace))
		front := g.Front()
		if len(front) == 0 {
			b.WriteString("  no successful run\n")
		}
		for _, r := range front {
			fmt.Fprintf(&b, "  cell %d: %s  %.3f J/token, p95 TTFT %.3f s\n", r.Cell, r.Data.Label, r.EnergyPerOutputTokenJ, r.P95TTFTS)
		}
		objectives := "each run's own p95 TTFT and TPOT objectives"
		if g.TTFTSLOSeconds != 0 && g.TPOTSLOSeconds != 0 {
			objectives = fmt.Sprintf("p95 TTFT <= %s s, p95 TPOT <= %s s", texttable.Sig(g.TTFTSLOSeconds, 4), texttable.Sig(g.TPOTSLOSeconds, 4))
		}
		if g.Best != nil {
			fmt.Fprintf(&b, "best under SLO (%s, all completed): cell %d (%s), %.3f J/token\n",
				objectives, g.Best.Cell, g.Best.Data.Label, g.Best.EnergyPerOutputTokenJ)
		} else {
			fmt.Fprintf(&b, "best under SLO (%s, all completed): none meets it\n", objectives)
		}
	}
	return b.String()
}
