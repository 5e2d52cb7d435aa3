package capacity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"servesim/internal/runparams"
)

// EvaluationRecordKind is the kind of a capacity shard's records.
const EvaluationRecordKind = "capacity_evaluation"

// EvaluationRecord is one line of a capacity shard's JSON Lines output: the
// evaluation of one cell of a grid. Its numbers are the Evaluation's, as
// the capacity document writes them (NaN as null); meets_target is left
// out, since it depends on the target and the grid does not.
type EvaluationRecord struct {
	Kind       string `json:"kind"`        // kind: "capacity_evaluation"
	Cell       int    `json:"cell"`        // cell: the size's index in the grid's sizes
	GridSHA256 string `json:"grid_sha256"` // grid_sha256: Grid.Digest
	GridCells  int    `json:"grid_cells"`  // grid_cells: the grid's sizes
	Replicas   int    `json:"replicas"`    // replicas: the size, Sizes[cell]
	// The Evaluation's numbers.
	Attainment            float64 `json:"attainment"`
	CompletedFraction     float64 `json:"completed_fraction"`
	P95TTFTS              float64 `json:"p95_ttft_s"`
	P99TTFTS              float64 `json:"p99_ttft_s"`
	EnergyPerOutputTokenJ float64 `json:"energy_per_output_token_j"`
	PeakPowerW            float64 `json:"peak_power_w"`
	EnergyPerRequestJ     float64 `json:"energy_per_request_j"`
	EnergyPer1kRequestsKJ float64 `json:"energy_per_1k_requests_kj"`
	EnergyKWh             float64 `json:"energy_kwh"`
	MeanPowerW            float64 `json:"mean_power_w"`
}

// Record returns the record of the evaluation e of the grid's cell.
func (g Grid) Record(cell int, e Evaluation) EvaluationRecord {
	return EvaluationRecord{
		Kind: EvaluationRecordKind, Cell: cell, GridSHA256: g.Digest, GridCells: len(g.Sizes), Replicas: e.Replicas,
		Attainment: e.Attainment, CompletedFraction: e.CompletedFraction, P95TTFTS: e.P95TTFTS, P99TTFTS: e.P99TTFTS,
		EnergyPerOutputTokenJ: e.EnergyPerOutputTokenJ, PeakPowerW: e.PeakPowerW,
		EnergyPerRequestJ: e.EnergyPerRequestJ, EnergyPer1kRequestsKJ: e.EnergyPer1kRequestsKJ, EnergyKWh: e.EnergyKWh, MeanPowerW: e.MeanPowerW,
	}
}

// Evaluation returns the evaluation the record holds (MeetsTarget false).
func (r EvaluationRecord) Evaluation() Evaluation {
	return Evaluation{
		Replicas: r.Replicas, Attainment: r.Attainment, CompletedFraction: r.CompletedFraction,
		P95TTFTS: r.P95TTFTS, P99TTFTS: r.P99TTFTS, EnergyPerOutputTokenJ: r.EnergyPerOutputTokenJ, PeakPowerW: r.PeakPowerW,
		EnergyPerRequestJ: r.EnergyPerRequestJ, EnergyPer1kRequestsKJ: r.EnergyPer1kRequestsKJ, EnergyKWh: r.EnergyKWh, MeanPowerW: r.MeanPowerW,
	}
}

// same reports whether two records hold the same cell and numbers (NaN
// equal to NaN).
func (r EvaluationRecord) same(o EvaluationRecord) bool {
	bits := func(r EvaluationRecord) [10]uint64 {
		return [10]uint64{math.Float64bits(r.Attainment), math.Float64bits(r.CompletedFraction), math.Float64bits(r.P95TTFTS),
			math.Float64bits(r.P99TTFTS), math.Float64bits(r.EnergyPerOutputTokenJ), math.Float64bits(r.PeakPowerW),
			math.Float64bits(r.EnergyPerRequestJ), math.Float64bits(r.EnergyPer1kRequestsKJ), math.Float64bits(r.EnergyKWh),
			math.Float64bits(r.MeanPowerW)}
	}
	return r.Cell == o.Cell && r.Replicas == o.Replicas && bits(r) == bits(o)
}

// evaluationRecordKeys are the members of a record, in the order written.
var evaluationRecordKeys = append([]string{"kind", "cell", "grid_sha256", "grid_cells", "replicas", "attainment",
	"completed_fraction", "p95_ttft_s", "p99_ttft_s", "energy_per_output_token_j", "peak_power_w"}, energyTotalKeys...)

// energyTotalKeys are the members records have carried since the energy
// totals were added: a record without them was written by an older
// servesim, and is refused (its numbers cannot be recomputed without
// simulating the size again).
var energyTotalKeys = []string{"energy_per_request_j", "energy_per_1k_requests_kj", "energy_kwh", "mean_power_w"}

// ParseEvaluationRecord reads one record: a JSON object with exactly the
// members of EvaluationRecord (in any order; a record of an older servesim,
// without the energy totals, is refused as such), kind "capacity_evaluation",
// a SHA-256 in hex, whole numbers for the cell (below grid_cells) and the
// replicas (at least 1), an attainment from 0 to 1, and a number or null
// (NaN) for each other number.
func ParseEvaluationRecord(line []byte) (EvaluationRecord, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil || members == nil {
		return EvaluationRecord{}, fmt.Errorf("expected a capacity evaluation record, a JSON object with the members %s",
			strings.Join(evaluationRecordKeys, ", "))
	}
	var r EvaluationRecord
	if err := json.Unmarshal(members["kind"], &r.Kind); err != nil || r.Kind != EvaluationRecordKind {
		return r, runparams.Errorf("kind %s: expected %q (a record of servesim capacity %s)", orNothing(members["kind"]), EvaluationRecordKind, runparams.Setting("shard"))
	}
	for key := range members {
		if !slices.Contains(evaluationRecordKeys, key) {
			return r, fmt.Errorf("unknown member %q: expected only %s", key, strings.Join(evaluationRecordKeys, ", "))
		}
	}
	if !slices.ContainsFunc(energyTotalKeys, func(key string) bool { return members[key] != nil }) {
		return r, runparams.Errorf("no %s: a record of an older servesim capacity %s, without the energy totals; "+
			"run that shard again with this servesim", strings.Join(energyTotalKeys, ", "), runparams.Setting("shard"))
	}
	var err error
	whole := func(key string, least int, to *int) {
		if err == nil {
			if uerr := json.Unmarshal(members[key], to); uerr != nil || *to < least {
				err = fmt.Errorf("%s %s: expected a whole number of at least %d", key, orNothing(members[key]), least)
			}
		}
	}
	number := func(key string, to *float64) {
		raw := members[key]
		if err != nil {
			return
		}
		if string(raw) == "null" {
			*to = math.NaN() // undefined: no request completed
			return
		}
		if uerr := json.Unmarshal(raw, to); uerr != nil {
			err = fmt.Errorf("%s %s: expected a number or null", key, orNothing(raw))
		}
	}
	whole("cell", 0, &r.Cell)
	whole("grid_cells", 1, &r.GridCells)
	whole("replicas", 1, &r.Replicas)
	if err == nil {
		if uerr := json.Unmarshal(members["grid_sha256"], &r.GridSHA256); uerr != nil || !isHexSHA256(r.GridSHA256) {
			err = fmt.Errorf("grid_sha256 %s: expected a SHA-256 in hex", orNothing(members["grid_sha256"]))
		}
	}
	if err == nil && r.Cell >= r.GridCells {
		err = fmt.Errorf("cell %d: expected a cell below grid_cells %d", r.Cell, r.GridCells)
	}
	number("attainment", &r.Attainment)
	if err == nil && !(r.Attainment >= 0 && r.Attainment <= 1) {
		err = fmt.Errorf("attainment %s: expected a share from 0 to 1", members["attainment"])
	}
	number("completed_fraction", &r.CompletedFraction)
	number("p95_ttft_s", &r.P95TTFTS)
	number("p99_ttft_s", &r.P99TTFTS)
	number("energy_per_output_token_j", &r.EnergyPerOutputTokenJ)
	number("peak_power_w", &r.PeakPowerW)
	number("energy_per_request_j", &r.EnergyPerRequestJ)
	number("energy_per_1k_requests_kj", &r.EnergyPer1kRequestsKJ)
	number("energy_kwh", &r.EnergyKWh)
	number("mean_power_w", &r.MeanPowerW)
	return r, err
}

// orNothing is a member's value as written, or "(missing)".
func orNothing(raw json.RawMessage) string {
	if raw == nil {
		return "(missing)"
	}
	return string(raw)
}

// isHexSHA256 reports whether s is 64 lowercase hexadecimal digits.
func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// check checks a record against the grid: the same digest, cells and size
// for its cell.
func (g Grid) check(r EvaluationRecord) error {
	if r.GridSHA256 != g.Digest {
		return runparams.Errorf("the record is of another capacity study (grid_sha256 %.12s..., this study's %.12s...): "+
			"another trace, %s or trace option, profile, fleet file, plant, engine or service flag (%s and its cards), SLO, router or %s, "+
			"search controller (the first %s), %s, %s or servesim version", r.GridSHA256, g.Digest,
			runparams.Setting("max-elapsed"), runparams.Setting("service-model"), runparams.Setting("router-seed"),
			runparams.Setting("controller"), runparams.Setting("scheduler"), runparams.Setting("max-replicas"))
	}
	if r.GridCells != len(g.Sizes) {
		return fmt.Errorf("grid_cells %d: this study's grid has %d cells", r.GridCells, len(g.Sizes))
	}
	if want := g.Sizes[r.Cell]; r.Replicas != want {
		return fmt.Errorf("cell %d has %d replicas: this study's cell %d is %d replicas", r.Cell, r.Replicas, r.Cell, want)
	}
	return nil
}

// maxRecordLine bounds a line of a capacity shard's output read back: a
// record takes about 500 bytes.
const maxRecordLine = 4 << 10

// KnownEvaluations are the evaluations read back from capacity shards'
// outputs.
type KnownEvaluations struct {
	Evaluations []Evaluation // one per size, by size: for SearchSettings.Known
	Records     int          // the records read, repeats included
}

// ReadEvaluations reads the JSON Lines outputs of capacity shards (or
// their FILE.partial files, any mix, in any order) and returns the
// evaluations they hold. Every record must be one of this grid (check);
// a size may come more than once only with the same numbers. A last line
// without its newline (a process killed while it wrote it) is left out
// with a warning on warn. Errors name the file and the line.
func (g Grid) ReadEvaluations(names []string, warn io.Writer) (*KnownEvaluations, error) {
	type seen struct {
		rec   EvaluationRecord
		where string
	}
	byCell := map[int]seen{}
	known := &KnownEvaluations{}
	for _, name := range names {
		err := readRecordLines(name, warn, func(n int, line []byte) error {
			r, err := ParseEvaluationRecord(line)
			if err == nil {
				err = g.check(r)
			}
			where := fmt.Sprintf("%s line %d", name, n)
			if prev, ok := byCell[r.Cell]; err == nil && ok && !prev.rec.same(r) {
				err = fmt.Errorf("cell %d (%d replicas) has other numbers than at %s", r.Cell, r.Replicas, prev.where)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			if _, ok := byCell[r.Cell]; !ok {
				byCell[r.Cell] = seen{r, where}
			}
			known.Records++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for cell := range g.Sizes {
		if s, ok := byCell[cell]; ok {
			known.Evaluations = append(known.Evaluations, s.rec.Evaluation())
		}
	}
	return known, nil
}

// readRecordLines calls each with every complete line of the file name
// (its newline dropped) and its number, from 1.
func readRecordLines(name string, warn io.Writer, each func(n int, line []byte) error) error {
	f, err := os.Open(name)
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err // "x.jsonl: no such file or directory", not "open x.jsonl: ..."
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxRecordLine)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) > 0:
			fmt.Fprintf(warn, "servesim: warning: %s line %d: the last line has no newline (its process was stopped while it wrote it); it is left out\n", name, n)
			return nil
		case err == io.EOF:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("%s line %d: a line of more than %d bytes: not a capacity evaluation record", name, n, maxRecordLine)
		case err != nil:
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
		if err := each(n, bytes.TrimSuffix(line, []byte("\n"))); err != nil {
			return err
		}
	}
}
