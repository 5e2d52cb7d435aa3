package profile

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"servesim/internal/numeric"
	"servesim/internal/pycompat"
)

// matrixKey is one (requested clock, condition) cell of the raw profile.
type matrixKey struct {
	clock float64
	cond  condition
}

// batchKey is one measured batch: a cell and a repeat.
type batchKey struct {
	matrixKey
	repeat pycompat.Integer
}

// batch is what the bundle checks need of one batch's requests.
type batch struct {
	realized []float64
	samples  pycompat.Integer
	fallback bool
}

// rawBatches groups a measured bundle's raw rows by batch.
type rawBatches struct {
	batches map[batchKey]*batch
	order   []batchKey
	repeats map[matrixKey]map[pycompat.Integer]int
}

// collectRawBatches checks every raw row the way the reference's bundle
// validation does and groups the rows by batch. It returns every row's
// first problem.
func collectRawBatches(t *pycompat.Table, sweep []float64) (*rawBatches, []string) {
	rb := &rawBatches{batches: map[batchKey]*batch{}, repeats: map[matrixKey]map[pycompat.Integer]int{}}
	inSweep := make(map[float64]bool, len(sweep))
	for _, c := range sweep {
		inSweep[c] = true
	}
	var problems []string
	for i, row := range t.Rows {
		if err := rb.add(t, row, t.RowLines[i], inSweep); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return rb, problems
}

func (rb *rawBatches) add(t *pycompat.Table, row []string, line int, inSweep map[float64]bool) error {
	requested, err := t.FloatAt(row, line, "requested_clock_mhz")
	if err != nil {
		return err
	}
	realized, err := t.FloatAt(row, line, "realized_clock_mhz")
	if err != nil {
		return err
	}
	repeat, err := t.IntAt(row, line, "repeat")
	if err != nil {
		return err
	}
	if !allFinitePositive([]float64{requested, realized}) {
		return fmt.Errorf("%s line %d: measured requested/realized clocks must be finite and positive (requested %s, realized %s)", t.Name, line, pycompat.FormatG(requested), pycompat.FormatG(realized))
	}
	if !inSweep[requested] {
		return fmt.Errorf("%s line %d: raw profile contains a requested clock absent from the manifest (%s MHz)", t.Name, line, pycompat.FormatG(requested))
	}
	cond := condition{Phase: "None"}
	if s, ok := t.Value(row, "phase"); ok {
		cond.Phase = s
	}
	for _, f := range []struct {
		name string
		dst  *pycompat.Integer
	}{{"prompt_tokens", &cond.Prompt}, {"output_tokens", &cond.Output}, {"concurrency", &cond.Concurrency}} {
		if *f.dst, err = t.IntAt(row, line, f.name); err != nil {
			return err
		}
	}
	if !expectedConditionSet[cond] {
		return fmt.Errorf("%s line %d: raw profile contains a condition outside the fixed matrix (%s)", t.Name, line, cond)
	}
	cell := matrixKey{requested, cond}
	reps := rb.repeats[cell]
	if reps == nil {
		reps = map[pycompat.Integer]int{}
		rb.repeats[cell] = reps
	}
	reps[repeat]++
	key := batchKey{cell, repeat}
	samples, err := t.IntAt(row, line, "telemetry_sample_count")
	if err != nil {
		return err
	}
	text, ok := t.Value(row, "telemetry_fallback_used")
	if !ok {
		return fmt.Errorf("%s line %d: telemetry_fallback_used: missing field", t.Name, line)
	}
	text = pycompat.ASCIILower(pycompat.Strip(text))
	if !samples.Positive() || (text != "false" && text != "true") {
		return fmt.Errorf("%s line %d: raw profile contains invalid telemetry fallback metadata (telemetry_sample_count %s, telemetry_fallback_used %q)", t.Name, line, samples, text)
	}
	b := rb.batches[key]
	if b == nil {
		b = &batch{samples: samples, fallback: text == "true"}
		rb.batches[key] = b
		rb.order = append(rb.order, key)
	}
	b.realized = append(b.realized, realized)
	if b.samples != samples || b.fallback != (text == "true") {
		return fmt.Errorf("%s line %d: raw profile telemetry fallback metadata must be constant within a batch", t.Name, line)
	}
	return nil
}

// matrixProblems checks that every requested clock and condition has
// exactly the repeats 0-4, each with as many requests as the concurrency.
func (rb *rawBatches) matrixProblems(sweep []float64) []string {
	var problems []string
	for _, clock := range sweep {
		for _, cond := range expectedConditions {
			reps := rb.repeats[matrixKey{clock, cond}]
			complete := len(reps) == measuredRepeats
			for r := range int64(measuredRepeats) {
				_, has := reps[pycompat.IntOf(r)]
				complete = complete && has
			}
			where := fmt.Sprintf("%s MHz %s", pycompat.FormatG(clock), cond)
			if !complete {
				problems = append(problems, fmt.Sprintf("raw profile repetition matrix is incomplete (%s: repeats %s)", where, describeRepeats(reps)))
				continue
			}
			for _, count := range reps {
				if pycompat.IntOf(int64(count)) != cond.Concurrency {
					problems = append(problems, fmt.Sprintf("raw profile request multiplicity does not match concurrency (%s: %d requests in a batch)", where, count))
					break
				}
			}
		}
	}
	return problems
}

func describeRepeats(reps map[pycompat.Integer]int) string {
	names := make([]string, 0, len(reps))
	for r := range reps {
		names = append(names, r.String())
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ", ") + "]"
}

// fallbackCount is the number of batches that used the telemetry fallback.
func (rb *rawBatches) fallbackCount() int {
	n := 0
	for _, b := range rb.batches {
		if b.fallback {
			n++
		}
	}
	return n
}

// balancedMedian is the median of the batch medians of realized clocks at
// a requested clock: every condition and repeat weighs the same.
func (rb *rawBatches) balancedMedian(clock float64) float64 {
	medians := make([]float64, 0, len(expectedConditions)*measuredRepeats)
	for _, cond := range expectedConditions {
		for r := range int64(measuredRepeats) {
			b := rb.batches[batchKey{matrixKey{clock, cond}, pycompat.IntOf(r)}]
			medians = append(medians, numeric.Median(b.realized))
		}
	}
	return numeric.Median(medians)
}

// rawRequiredColumns are the raw columns the aggregation reads.
var rawRequiredColumns = []string{
	"concurrency", "energy_j", "mean_power_w", "output_tokens", "peak_power_w",
	"peak_temp_c", "phase", "prompt_tokens", "realized_clock_mhz",
	"repeat", "requested_clock_mhz", "total_s", "tpot_s", "ttft_s",
}

// rawGroupKey is one batch of the raw schema as the aggregation groups it.
type rawGroupKey struct {
	clock                               float64
	phase                               string
	prompt, output, concurrency, repeat pycompat.Integer
}

type clockPhase struct {
	clock float64
	phase string
}

// aggregateRawProfile is the reference's _aggregate_raw_profile: it reduces
// the profiler's per-request rows to per-clock medians, indexed and sorted
// by the median realized clock.
func aggregateRawProfile(t *pycompat.Table, manifest *pycompat.Object, p *Profile) error {
	if err := checkRawColumns(t); err != nil {
		return err
	}
	keys, groups, err := groupRawRows(t)
	if err != nil {
		return err
	}
	clocks := requestedClocks(keys)
	if len(clocks) < 2 {
		return fmt.Errorf("raw profile must contain at least two requested clocks")
	}
	rates, powers, err := groupRatesAndPowers(t, keys, groups)
	if err != nil {
		return err
	}
	for _, clock := range clocks {
		for _, phase := range []string{"prefill", "decode"} {
			if _, ok := rates[clockPhase{clock, phase}]; !ok {
				return fmt.Errorf("raw profile lacks %s measurements at %s MHz", missingPhase(clock, phase, keys), pycompat.FormatG(clock))
			}
		}
	}
	prefillRate, decodeRate := phaseMedians(rates, clocks, "prefill"), phaseMedians(rates, clocks, "decode")
	prefillPower, decodePower := phaseMedians(powers, clocks, "prefill"), phaseMedians(powers, clocks, "decode")
	idlePower, err := idlePowers(manifest, clocks, powers, prefillPower, decodePower)
	if err != nil {
		return err
	}
	realized, err := realizedMedians(t, keys, groups, clocks)
	if err != nil {
		return err
	}
	order := orderNaNLast(realized)
	p.ClockMHz = pick(realized, order)
	p.PrefillTokensPerS, p.DecodeTokensPerS = pick(prefillRate, order), pick(decodeRate, order)
	p.IdlePowerW, p.PrefillPowerW, p.DecodePowerW = pick(idlePower, order), pick(prefillPower, order), pick(decodePower, order)
	return nil
}

// checkRawColumns reports the raw columns t lacks, if any.
func checkRawColumns(t *pycompat.Table) error {
	var missing []string
	for _, name := range rawRequiredColumns {
		if !t.HasColumn(name) {
			missing = append(missing, pycompat.Repr(name))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("profile is neither an aggregate table nor the profiler schema; missing columns: [%s]", strings.Join(missing, ", "))
	}
	return nil
}

// groupRawRows groups the rows of t that the aggregation keeps by batch
// (rawGroup): the batches in order of first appearance, and the indexes of
// each one's rows.
func groupRawRows(t *pycompat.Table) ([]rawGroupKey, [][]int, error) {
	index := map[rawGroupKey]int{}
	var keys []rawGroupKey
	var groups [][]int
	for i, row := range t.Rows {
		key, keep, err := rawGroup(t, row, t.RowLines[i])
		if err != nil {
			return nil, nil, err
		}
		if !keep {
			continue
		}
		g, ok := index[key]
		if !ok {
			g = len(groups)
			index[key] = g // NaN clocks never match: each row its own group, as in Python
			keys = append(keys, key)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return keys, groups, nil
}

// requestedClocks is the set of the batches' requested clocks, sorted with
// NaN last (each NaN its own clock, as in Python).
func requestedClocks(keys []rawGroupKey) []float64 {
	clockSet := map[float64]bool{}
	var clocks []float64
	for _, k := range keys {
		if !clockSet[k.clock] || math.IsNaN(k.clock) {
			clockSet[k.clock] = true
			clocks = append(clocks, k.clock)
		}
	}
	slices.SortFunc(clocks, compareNaNLast)
	return clocks
}

// groupRatesAndPowers is, by requested clock and phase, each batch's token
// rate (its tokens over its longest total_s; none for idle batches) and
// median mean power.
func groupRatesAndPowers(t *pycompat.Table, keys []rawGroupKey, groups [][]int) (map[clockPhase][]float64, map[clockPhase][]float64, error) {
	rates := map[clockPhase][]float64{}
	powers := map[clockPhase][]float64{}
	for g, key := range keys {
		rows := groups[g]
		elapsed, err := groupElapsed(t, rows)
		if err != nil {
			return nil, nil, err
		}
		var tokens pycompat.Integer
		switch key.phase {
		case "prefill":
			tokens = pycompat.Mul(key.prompt, key.concurrency)
		case "decode":
			tokens = pycompat.Mul(key.output, key.concurrency)
		}
		cp := clockPhase{key.clock, key.phase}
		if key.phase != "idle" {
			n, err := tokens.Float()
			if err != nil {
				return nil, nil, fmt.Errorf("%s line %d: %w", t.Name, t.RowLines[rows[0]], err)
			}
			rates[cp] = append(rates[cp], n/elapsed)
		}
		groupPowers := make([]float64, len(rows))
		for j, i := range rows {
			v, err := t.FloatAt(t.Rows[i], t.RowLines[i], "mean_power_w")
			if err != nil {
				return nil, nil, err
			}
			groupPowers[j] = v
		}
		powers[cp] = append(powers[cp], nanMedian(groupPowers))
	}
	return rates, powers, nil
}

// groupElapsed is a batch's elapsed time: the longest total_s of its rows,
// which must be positive.
func groupElapsed(t *pycompat.Table, rows []int) (float64, error) {
	elapsed := 0.0
	for j, i := range rows {
		v, err := t.FloatAt(t.Rows[i], t.RowLines[i], "total_s")
		if err != nil {
			return 0, err
		}
		if j == 0 || v > elapsed { // Python's max(): a NaN first stays
			elapsed = v
		}
	}
	if elapsed <= 0 {
		return 0, fmt.Errorf("%s line %d: raw profile total_s must be positive", t.Name, t.RowLines[rows[0]])
	}
	return elapsed, nil
}

// phaseMedians is, for each clock in order, the median of m's values at
// that clock in phase.
func phaseMedians(m map[clockPhase][]float64, clocks []float64, phase string) []float64 {
	out := make([]float64, len(clocks))
	for i, clock := range clocks {
		out[i] = nanMedian(m[clockPhase{clock, phase}])
	}
	return out
}

// idlePowers is the idle power at each clock: the median of the idle
// batches' when every clock has some, otherwise the same value at every
// clock: the manifest's idle_power_w, or 0.45 times the lowest busy power.
func idlePowers(manifest *pycompat.Object, clocks []float64, powers map[clockPhase][]float64, prefillPower, decodePower []float64) ([]float64, error) {
	idleEverywhere := true
	for _, clock := range clocks {
		_, ok := powers[clockPhase{clock, "idle"}]
		idleEverywhere = idleEverywhere && ok
	}
	if idleEverywhere {
		return phaseMedians(powers, clocks, "idle"), nil
	}
	fill := 0.0
	if v, ok := manifest.Get("idle_power_w"); ok {
		f, err := pycompat.FloatOf(v)
		if err != nil {
			return nil, fmt.Errorf("manifest field idle_power_w %s: %w", pycompat.ReprOf(v), err)
		}
		fill = f
	} else {
		a, b := nanMin(prefillPower), nanMin(decodePower)
		if b < a { // Python's min(a, b)
			a = b
		}
		fill = 0.45 * a
	}
	idlePower := make([]float64, len(clocks))
	for i := range idlePower {
		idlePower[i] = fill
	}
	return idlePower, nil
}

// realizedMedians is, for each requested clock in order, the median
// realized clock of its batches' rows.
func realizedMedians(t *pycompat.Table, keys []rawGroupKey, groups [][]int, clocks []float64) ([]float64, error) {
	realized := make([]float64, len(clocks))
	for c, clock := range clocks {
		var values []float64
		for g, key := range keys {
			if key.clock != clock {
				continue
			}
			for _, i := range groups[g] {
				v, err := t.FloatAt(t.Rows[i], t.RowLines[i], "realized_clock_mhz")
				if err != nil {
					return nil, err
				}
				values = append(values, v)
			}
		}
		realized[c] = nanMedian(values)
	}
	return realized, nil
}

// orderNaNLast is the stable order of the indexes of values by value, NaN
// last.
func orderNaNLast(values []float64) []int {
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return compareNaNLast(values[order[a]], values[order[b]]) < 0 })
	return order
}

// pick is values in order: its i-th element is values[order[i]].
func pick(values []float64, order []int) []float64 {
	out := make([]float64, len(order))
	for i, j := range order {
		out[i] = values[j]
	}
	return out
}

// missingPhase names the phase the reference reports missing. A NaN clock
// is a group of its own (NaN never equals NaN), found again in Python only
// under its own phase: the missing phase is the other one.
func missingPhase(clock float64, phase string, keys []rawGroupKey) string {
	if !math.IsNaN(clock) {
		return phase
	}
	for _, k := range keys {
		if math.IsNaN(k.clock) && k.phase == "prefill" {
			return "decode"
		}
		if math.IsNaN(k.clock) {
			return "prefill"
		}
	}
	return phase
}

// rawGroup parses the grouping key of a raw row; keep is false for rows of
// other phases, which the reference skips.
func rawGroup(t *pycompat.Table, row []string, line int) (rawGroupKey, bool, error) {
	var key rawGroupKey
	phase, ok := t.Value(row, "phase")
	if !ok {
		return key, false, fmt.Errorf("%s line %d: phase: missing field", t.Name, line)
	}
	key.phase = pycompat.ASCIILower(pycompat.Strip(phase))
	if key.phase != "prefill" && key.phase != "decode" && key.phase != "idle" {
		return key, false, nil
	}
	var err error
	if key.clock, err = t.FloatAt(row, line, "requested_clock_mhz"); err != nil {
		return key, false, err
	}
	for _, f := range []struct {
		name string
		dst  *pycompat.Integer
	}{{"prompt_tokens", &key.prompt}, {"output_tokens", &key.output}, {"concurrency", &key.concurrency}, {"repeat", &key.repeat}} {
		if *f.dst, err = t.IntAt(row, line, f.name); err != nil {
			return key, false, err
		}
	}
	return key, true, nil
}

// nanMedian is np.median: NaN when any value is NaN.
func nanMedian(values []float64) float64 {
	if slices.ContainsFunc(values, math.IsNaN) {
		return math.NaN()
	}
	return numeric.Median(values)
}

// nanMin is np.min: NaN when any value is NaN.
func nanMin(values []float64) float64 {
	if slices.ContainsFunc(values, math.IsNaN) {
		return math.NaN()
	}
	return slices.Min(values)
}

// compareNaNLast orders floats ascending with NaN last (numpy's sort order).
func compareNaNLast(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
