package profile

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"servesim/internal/limits"
	"servesim/internal/pycompat"
)

// BundleManifestJSON is the manifest a measured bundle folder holds beside
// BundleProfileCSV.
const BundleManifestJSON = "profile_manifest.json"

// Written bundle provenance: what a bundle written here says of itself.
const (
	// defaultBundleSourceLabel is the source_label of a bundle whose
	// metadata gives none.
	defaultBundleSourceLabel = "measured NVIDIA L4 bundle (servesim calibrate --bundle-out)"
	// realizedMethod names how the realized-clock medians are taken.
	realizedMethod = "median of batch medians"
	// selectionRule says how the modeled clocks are chosen.
	selectionRule = "ascending requested clocks whose batch-balanced realized median, prefill rate and decode rate all exceed those of the last modeled clock"
	// selectionGiven says the metadata chose the modeled clocks.
	selectionGiven = "modeled_clocks_mhz of the run metadata"
)

// BundleGPU is the GPU of a measured run, the manifest's gpu mapping.
type BundleGPU struct {
	Name      string `json:"name"`                 // the name nvidia-smi reports; must name an NVIDIA L4
	Driver    string `json:"driver,omitempty"`     // the driver version, when known
	MemoryMiB int64  `json:"memory_mib,omitempty"` // the memory nvidia-smi reports, when known
}

// BundleMetadata is the run metadata of a measured bundle: what the raw
// rows and the telemetry cannot tell. It is read from the JSON object
// servesim calibrate --bundle-metadata names (ParseBundleMetadata), whose
// keys are the JSON names below; every key the manifest pins is copied
// there as it is, so the bundle validation judges it.
type BundleMetadata struct {
	GPU                 BundleGPU `json:"gpu"`                          // required: gpu.name
	Model               string    `json:"model"`                        // required: the served model
	ModelRevision       string    `json:"model_revision"`               // required: its Hugging Face revision
	VLLMImage           string    `json:"vllm_image"`                   // required: the vLLM container image
	VLLMImageDigest     string    `json:"vllm_image_digest"`            // required: the image's resolved sha256 digest
	VLLMServerArguments []string  `json:"vllm_server_arguments"`        // required: vllm serve's arguments (prefix caching follows from them)
	PowerCapW           float64   `json:"power_cap_w"`                  // required: the power cap the run held, W
	ThermalLimitC       float64   `json:"thermal_limit_c"`              // required: the GPU's thermal limit, °C
	WarmupBatches       int64     `json:"warmup_batches_per_condition"` // required: warmup batches run before each condition
	BaselineTTFTS       float64   `json:"baseline_ttft_s"`              // required: the baseline TTFT (the SLO is twice it), s
	BaselineTPOTS       float64   `json:"baseline_tpot_s"`              // required: the baseline TPOT (the SLO is 1.5 times it), s
	MeasuredOn          string    `json:"measured_on"`                  // required: the date of the run
	CompletedUTC        string    `json:"completed_utc"`                // required: when the run completed, UTC
	SourceLabel         string    `json:"source_label,omitempty"`       // optional: the profile's label
	// IdlePowerW is the idle power every clock level gets (the manifest's
	// idle_power_w, which the reference's aggregation reads); nil for the
	// reference's default, 0.45 times the lowest prefill or decode power.
	IdlePowerW *float64 `json:"idle_power_w,omitempty"`
	// ModeledClocksMHz are the requested clocks the profile models; empty
	// for the rule in clock_profile_selection (see BuildBundle).
	ModeledClocksMHz []float64 `json:"modeled_clocks_mhz,omitempty"`
}

// Check reports the first missing or meaningless field of m, as "KEY:
// what is expected". The pinned values (model, image, ...) are judged by
// the bundle validation, not here.
func (m *BundleMetadata) Check() error {
	for _, f := range []struct{ key, value string }{
		{"gpu.name", m.GPU.Name}, {"model", m.Model}, {"model_revision", m.ModelRevision},
		{"vllm_image", m.VLLMImage}, {"vllm_image_digest", m.VLLMImageDigest},
		{"measured_on", m.MeasuredOn}, {"completed_utc", m.CompletedUTC},
	} {
		if strings.TrimSpace(f.value) == "" {
			return fmt.Errorf("%s: expected a non-empty string", f.key)
		}
	}
	if len(m.VLLMServerArguments) == 0 {
		return errors.New("vllm_server_arguments: expected the list of vllm serve's arguments")
	}
	for _, f := range []struct {
		key, unit string
		value     float64
	}{
		{"power_cap_w", "W", m.PowerCapW}, {"thermal_limit_c", "°C", m.ThermalLimitC},
		{"baseline_ttft_s", "s", m.BaselineTTFTS}, {"baseline_tpot_s", "s", m.BaselineTPOTS},
	} {
		if !(f.value > 0) || math.IsInf(f.value, 0) {
			return fmt.Errorf("%s %s: expected a positive, finite number (%s)", f.key, pycompat.FormatG(f.value), f.unit)
		}
	}
	if m.WarmupBatches < 0 {
		return fmt.Errorf("warmup_batches_per_condition %d: expected a whole number, 0 or more", m.WarmupBatches)
	}
	if m.IdlePowerW != nil && (!(*m.IdlePowerW > 0) || math.IsInf(*m.IdlePowerW, 0)) {
		return fmt.Errorf("idle_power_w %s: expected a positive, finite number (W)", pycompat.FormatG(*m.IdlePowerW))
	}
	return nil
}

// ParseBundleMetadata reads run metadata (BundleMetadata's JSON keys) from
// data, the file name. Unknown keys, a missing required key and values of
// the wrong type are errors naming the file and the key.
func ParseBundleMetadata(name string, data []byte) (BundleMetadata, error) {
	var m BundleMetadata
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	} else if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
	if err != nil {
		return BundleMetadata{}, fmt.Errorf("bundle metadata %s: %s", name, metadataJSONError(err))
	}
	if err := m.Check(); err != nil {
		return BundleMetadata{}, fmt.Errorf("bundle metadata %s: %w", name, err)
	}
	return m, nil
}

// metadataJSONError says in one line why encoding/json refused data.
func metadataJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not valid JSON at byte %d: %s", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("expected a JSON object, not %s", typ.Value)
		}
		return fmt.Sprintf("%s: expected %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: unexpected end of input"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return "unknown key " + field
	}
	return msg
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "a list"
	case kind == "struct":
		return "an object"
	case strings.HasPrefix(kind, "int"):
		return "a whole number"
	case strings.HasPrefix(kind, "float"), kind == "ptr":
		return "a number"
	}
	return kind
}

// ReadBundleInput reads a bundle's inputs: the profiler's raw rows, the
// telemetry log and the run metadata, at most MaxBundleFileBytes each.
// Errors name the file.
func ReadBundleInput(rawPath, telemetryPath, metadataPath string) (BundleInput, error) {
	in := BundleInput{RawName: rawPath, TelemetryName: telemetryPath}
	var err error
	if in.Raw, err = readInputFile("raw rows", rawPath); err != nil {
		return in, err
	}
	if in.Telemetry, err = readInputFile("telemetry", telemetryPath); err != nil {
		return in, err
	}
	data, err := readInputFile("metadata", metadataPath)
	if err != nil {
		return in, err
	}
	in.Metadata, err = ParseBundleMetadata(metadataPath, data)
	return in, err
}

// readInputFile reads one input file whole, saying which one failed.
func readInputFile(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bundle %s %s: %w", what, path, pathReason(err))
	}
	defer f.Close()
	data, err := limits.ReadAll(f, MaxBundleFileBytes)
	if err != nil {
		return nil, fmt.Errorf("bundle %s %s: %w", what, path, err)
	}
	return data, nil
}

// BundleInput is what a measured bundle is written from.
type BundleInput struct {
	// Raw is l4_profile_raw.csv as the profiler wrote it (its per-request
	// schema); it is written as it is.
	Raw []byte
	// Telemetry is l4_telemetry.csv, the 100 ms GPU telemetry log; it is
	// written as it is.
	Telemetry []byte
	// RawName and TelemetryName name the inputs in messages; empty for the
	// bundle's file names.
	RawName, TelemetryName string
	// Metadata is the run metadata.
	Metadata BundleMetadata
}

// BundleFile is one file of a built bundle.
type BundleFile struct {
	Name   string `json:"name"`   // its name in the bundle folder
	SHA256 string `json:"sha256"` // SHA-256 hex of its bytes
	Bytes  int    `json:"bytes"`  // its size
	data   []byte
}

// BundleFiles is a measured bundle built in memory (BuildBundle), ready to
// be written (Write).
type BundleFiles struct {
	// Files are the aggregate profile, the all-requested table, the raw
	// rows, the telemetry and the manifest, in that order.
	Files []BundleFile
	// ModeledClocksMHz are the requested clocks of l4_profile.csv,
	// ExcludedClocksMHz the other requested clocks.
	ModeledClocksMHz, ExcludedClocksMHz []float64
}

// BundleDocument is what servesim calibrate --bundle-out prints: the
// folder, its profile, the clocks modeled and every file with its digest.
type BundleDocument struct {
	Bundle            string       `json:"bundle"`
	Profile           string       `json:"profile"`
	ModeledClocksMHz  []float64    `json:"modeled_clocks_mhz"`
	ExcludedClocksMHz []float64    `json:"excluded_clocks_mhz"`
	Files             []BundleFile `json:"files"`
}

// Document describes b written to dir.
func (b *BundleFiles) Document(dir string) BundleDocument {
	return BundleDocument{
		Bundle: dir, Profile: filepath.Join(dir, BundleProfileCSV),
		ModeledClocksMHz: b.ModeledClocksMHz, ExcludedClocksMHz: b.ExcludedClocksMHz, Files: b.Files,
	}
}

// WriteBundle builds the measured bundle of in (BuildBundle) and writes it
// to the folder dir (BundleFiles.Write).
func WriteBundle(dir string, in BundleInput) error {
	b, err := BuildBundle(in)
	if err != nil {
		return err
	}
	return b.Write(dir)
}

// rawSummary is what a bundle needs of its raw rows.
type rawSummary struct {
	rows      int
	sweep     []float64   // the requested clocks, ascending
	full      [][]float64 // per sweep clock, the aggregate columns
	realized  []float64   // per sweep clock, the batch-balanced realized median
	fallbacks int         // batches that used the telemetry fallback
}

// BuildBundle computes a measured bundle from in, refusing before anything
// is written what the bundle validation would refuse of the raw rows and
// the telemetry:
//
//   - l4_profile_all_requested.csv has a row per requested clock (the
//     manifest's selected_graphics_clocks_mhz), its rates and powers the
//     reference's _aggregate_raw_profile of the raw rows: per batch (clock,
//     condition, repeat) the rate is the tokens over the longest total_s
//     and the power the median mean_power_w, and each column is the median
//     over a clock's batches; the idle power is the metadata's
//     idle_power_w, else 0.45 times the lowest prefill or decode power.
//   - l4_profile.csv holds the rows of the modeled clocks: the metadata's
//     modeled_clocks_mhz, else, going up from the lowest requested clock,
//     each clock whose batch-balanced realized median (the median of its
//     batch medians), prefill rate and decode rate all exceed those of the
//     last one kept (a clock past the power cap's plateau is excluded).
//   - profile_manifest.json has the metadata's fields as they are, and
//     what follows from the rows: the clocks, the condition matrix and
//     repeats, the row counts, the fallback batch count, the realized
//     medians of every requested clock, vllm_prefix_caching_enabled (false
//     only when --no-enable-prefix-caching is the last word on it in the
//     server arguments), the baselines given, and the SHA-256 of the four
//     CSV files.
func BuildBundle(in BundleInput) (*BundleFiles, error) {
	rawName, telemetryName := cmpOr(in.RawName, fileRaw), cmpOr(in.TelemetryName, fileTelemetry)
	m := in.Metadata
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("bundle metadata: %w", err)
	}
	summary, err := summarizeRaw(rawName, in.Raw, m.IdlePowerW)
	if err != nil {
		return nil, err
	}
	telemetryRows, err := checkedRowCount(telemetryName, in.Telemetry, telemetryColumns, true)
	if err != nil {
		return nil, err
	}
	modeled, err := summary.modeled(m.ModeledClocksMHz)
	if err != nil {
		return nil, err
	}
	b := &BundleFiles{ExcludedClocksMHz: []float64{}}
	var modeledRows [][]float64
	for i, clock := range summary.sweep {
		if slices.Contains(modeled, i) {
			b.ModeledClocksMHz = append(b.ModeledClocksMHz, clock)
			modeledRows = append(modeledRows, summary.full[i])
		} else {
			b.ExcludedClocksMHz = append(b.ExcludedClocksMHz, clock)
		}
	}
	profileCSV, err := aggregateCSV(modeledRows)
	if err != nil {
		return nil, err
	}
	allCSV, err := aggregateCSV(summary.full)
	if err != nil {
		return nil, err
	}
	b.Files = []BundleFile{
		newBundleFile(fileProfile, profileCSV), newBundleFile(fileAllRequested, allCSV),
		newBundleFile(fileRaw, in.Raw), newBundleFile(fileTelemetry, in.Telemetry),
	}
	manifest, err := buildManifest(m, summary, b, telemetryRows)
	if err != nil {
		return nil, err
	}
	b.Files = append(b.Files, newBundleFile(BundleManifestJSON, manifest))
	return b, nil
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func newBundleFile(name string, data []byte) BundleFile {
	return BundleFile{Name: name, SHA256: sha256Hex(data), Bytes: len(data), data: data}
}

// checkedTable reads a bundle CSV as the validation does: the exact
// header, at least one row, within MaxBundleFileBytes.
func checkedTable(name string, data []byte, expected []string, countOnly bool) (*pycompat.Table, error) {
	if int64(len(data)) > MaxBundleFileBytes {
		return nil, fmt.Errorf("%s: %s is more than a bundle file may hold (%s)", name, limits.FormatBytes(int64(len(data))), limits.FormatBytes(MaxBundleFileBytes))
	}
	t, err := pycompat.ReadTable(name, data, countOnly)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(t.Header, expected) {
		return nil, fmt.Errorf("%s: expected the columns %s: %s", name, strings.Join(expected, ","), headerDifference(t.Header, expected))
	}
	if t.RowCount == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return t, nil
}

// headerDifference says where header first differs from expected.
func headerDifference(header, expected []string) string {
	for i, name := range expected {
		if i >= len(header) {
			return fmt.Sprintf("the header ends after %d columns", len(header))
		}
		if header[i] != name {
			return fmt.Sprintf("column %d is %s", i+1, limits.Quote(header[i]))
		}
	}
	return fmt.Sprintf("the header has %d columns, %d more", len(header), len(header)-len(expected))
}

// checkedRowCount is the row count of a checked table.
func checkedRowCount(name string, data []byte, expected []string, countOnly bool) (int, error) {
	t, err := checkedTable(name, data, expected, countOnly)
	if err != nil {
		return 0, err
	}
	return t.RowCount, nil
}

// summarizeRaw checks the raw rows as the bundle validation does (the
// sweep, every row, the repetition matrix) and aggregates them.
func summarizeRaw(name string, data []byte, idlePowerW *float64) (*rawSummary, error) {
	t, err := checkedTable(name, data, rawProfileColumns, false)
	if err != nil {
		return nil, err
	}
	s := &rawSummary{rows: t.RowCount}
	for i, row := range t.Rows {
		clock, err := t.FloatAt(row, t.RowLines[i], "requested_clock_mhz")
		if err != nil {
			return nil, err
		}
		if clock > 0 && !math.IsInf(clock, 0) && !slices.Contains(s.sweep, clock) {
			s.sweep = append(s.sweep, clock)
		}
	}
	slices.Sort(s.sweep)
	batches, problems := collectRawBatches(t, s.sweep)
	if len(problems) > 0 {
		return nil, errors.New(problems[0])
	}
	if !orderedLevels(s.sweep) {
		return nil, fmt.Errorf("%s: the rows hold %d requested clocks %s: a measured bundle needs at least four", name, len(s.sweep), formatLevels(s.sweep))
	}
	if problems := batches.matrixProblems(s.sweep); len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", name, problems[0])
	}
	s.fallbacks = batches.fallbackCount()
	for _, clock := range s.sweep {
		s.realized = append(s.realized, batches.balancedMedian(clock))
	}
	if err := s.aggregate(t, idlePowerW); err != nil {
		return nil, err
	}
	return s, nil
}

// aggregate fills s.full with the reference's aggregation of the rows
// (aggregateRawProfile). That function indexes its result by each clock's
// median realized clock; its rates and powers never read the realized
// column, so aggregating a copy whose realized column holds the requested
// clock gives the same values indexed, and ordered, by the requested
// clock, as the bundle's tables are.
func (s *rawSummary) aggregate(t *pycompat.Table, idlePowerW *float64) error {
	view := *t
	requested, realized := slices.Index(t.Header, "requested_clock_mhz"), slices.Index(t.Header, "realized_clock_mhz")
	view.Rows = make([][]string, len(t.Rows))
	for i, row := range t.Rows {
		row = slices.Clone(row)
		row[realized] = row[requested]
		view.Rows[i] = row
	}
	manifest := &pycompat.Object{Values: map[string]any{}}
	if idlePowerW != nil {
		manifest.Keys = []string{"idle_power_w"}
		manifest.Values["idle_power_w"] = *idlePowerW
	}
	var p Profile
	if err := aggregateRawProfile(&view, manifest, &p); err != nil {
		return err
	}
	if !slices.Equal(p.ClockMHz, s.sweep) {
		return fmt.Errorf("%s: the aggregation's clocks %s are not the requested clocks %s", t.Name, formatLevels(p.ClockMHz), formatLevels(s.sweep))
	}
	for i, clock := range s.sweep {
		values := []float64{clock, p.PrefillTokensPerS[i], p.DecodeTokensPerS[i], p.IdlePowerW[i], p.PrefillPowerW[i], p.DecodePowerW[i]}
		for j, v := range values {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: the aggregate %s at %s MHz is %s: the bundle's values must be finite and positive", t.Name, aggregateColumns[j], pycompat.FormatG(clock), pycompat.FloatRepr(v))
			}
		}
		s.full = append(s.full, values)
	}
	return nil
}

// modeled returns the indexes in s.sweep of the modeled clocks: given, or
// chosen by the rule BuildBundle describes. They must be at least four,
// with increasing realized medians and rates.
func (s *rawSummary) modeled(given []float64) ([]int, error) {
	const prefill, decode = 1, 2
	var picked []int
	increases := func(i int) bool {
		if len(picked) == 0 {
			return true
		}
		last := picked[len(picked)-1]
		return s.realized[i] > s.realized[last] && s.full[i][prefill] > s.full[last][prefill] && s.full[i][decode] > s.full[last][decode]
	}
	if len(given) == 0 {
		for i := range s.sweep {
			if increases(i) {
				picked = append(picked, i)
			}
		}
		if len(picked) < 4 {
			return nil, fmt.Errorf("raw rows: only %d requested clocks %s have increasing realized medians and rates: a measured bundle models at least four", len(picked), formatLevels(s.pick(picked)))
		}
		return picked, nil
	}
	for _, clock := range given {
		i := slices.IndexFunc(s.sweep, func(c float64) bool { return isClose(c, clock, 1e-9) })
		switch {
		case i < 0:
			return nil, fmt.Errorf("bundle metadata: modeled_clocks_mhz: %s MHz is not a requested clock of the raw rows %s", pycompat.FormatG(clock), formatLevels(s.sweep))
		case len(picked) > 0 && i <= picked[len(picked)-1]:
			return nil, fmt.Errorf("bundle metadata: modeled_clocks_mhz: expected ascending clocks, listed once (%s MHz)", pycompat.FormatG(clock))
		case !increases(i):
			return nil, fmt.Errorf("bundle metadata: modeled_clocks_mhz: at %s MHz the batch-balanced realized median or a rate does not increase: the profile's realized clocks and rates must increase strictly", pycompat.FormatG(clock))
		}
		picked = append(picked, i)
	}
	if len(picked) < 4 {
		return nil, fmt.Errorf("bundle metadata: modeled_clocks_mhz: %d clocks: a measured bundle models at least four", len(picked))
	}
	return picked, nil
}

func (s *rawSummary) pick(indexes []int) []float64 {
	out := make([]float64, len(indexes))
	for i, j := range indexes {
		out[i] = s.sweep[j]
	}
	return out
}

// aggregateCSV writes aggregate rows as Python's csv writer writes them:
// the aggregate columns, floats as repr, CRLF line ends.
func aggregateCSV(rows [][]float64) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = true
	if err := w.Write(aggregateColumns); err != nil {
		return nil, err
	}
	for _, row := range rows {
		fields := make([]string, len(row))
		for i, v := range row {
			fields[i] = pycompat.FloatRepr(v)
		}
		if err := w.Write(fields); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// orderedJSON is a JSON object with its keys in order.
type orderedJSON []struct {
	key   string
	value any
}

// MarshalJSON writes the object with its keys in order.
func (o orderedJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(kv.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(kv.value)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *orderedJSON) add(key string, value any) {
	*o = append(*o, struct {
		key   string
		value any
	}{key, value})
}

// prefixCachingEnabled is what vllm serve's arguments leave prefix caching
// at: enabled (vLLM's default) unless --no-enable-prefix-caching comes
// after any --enable-prefix-caching.
func prefixCachingEnabled(args []string) bool {
	for i := len(args) - 1; i >= 0; i-- {
		switch args[i] {
		case "--no-enable-prefix-caching":
			return false
		case "--enable-prefix-caching":
			return true
		}
	}
	return true
}

// buildManifest is the bundle's manifest.
func buildManifest(m BundleMetadata, s *rawSummary, b *BundleFiles, telemetryRows int) ([]byte, error) {
	var conditions []orderedJSON
	for _, c := range expectedConditions {
		var o orderedJSON
		o.add("phase", c.Phase)
		o.add("prompt_tokens", json.Number(c.Prompt.String()))
		o.add("output_tokens", json.Number(c.Output.String()))
		o.add("concurrency", json.Number(c.Concurrency.String()))
		conditions = append(conditions, o)
	}
	var realized, sums orderedJSON
	for i, clock := range s.sweep {
		realized.add(strconv.FormatFloat(clock, 'f', -1, 64), s.realized[i])
	}
	for _, f := range b.Files {
		sums.add(f.Name, f.SHA256)
	}
	var selection orderedJSON
	selection.add("method", realizedMethod)
	if len(m.ModeledClocksMHz) > 0 {
		selection.add("rule", selectionGiven)
	} else {
		selection.add("rule", selectionRule)
	}
	selection.add("modeled_requested_clocks_mhz", b.ModeledClocksMHz)
	selection.add("excluded_requested_clocks_mhz", b.ExcludedClocksMHz)
	selection.add("realized_clock_median_mhz_by_requested", realized)
	source := cmpOr(m.SourceLabel, defaultBundleSourceLabel)

	var o orderedJSON
	for _, kv := range []struct {
		key   string
		value any
	}{
		{"schema_version", profileSchemaVersion},
		{"status", "complete"},
		{"profile_status", StatusMeasuredL4},
		{"source_label", source},
		{"gpu", m.GPU},
		{"model", m.Model},
		{"model_revision", m.ModelRevision},
		{"vllm_image", m.VLLMImage},
		{"vllm_image_digest", m.VLLMImageDigest},
		{"vllm_prefix_caching_enabled", prefixCachingEnabled(m.VLLMServerArguments)},
		{"vllm_server_arguments", m.VLLMServerArguments},
		{"power_cap_w", m.PowerCapW},
		{"thermal_limit_c", m.ThermalLimitC},
		{"selected_graphics_clocks_mhz", s.sweep},
		{"modeled_graphics_clocks_mhz", b.ModeledClocksMHz},
		{"measured_repeats_per_condition", measuredRepeats},
		{"warmup_batches_per_condition", m.WarmupBatches},
		{"conditions", conditions},
		{"profile_columns", aggregateColumns},
		{"raw_profile_columns", rawProfileColumns},
		{"telemetry_columns", telemetryColumns},
		{"row_count", s.rows},
		{"telemetry_row_count", telemetryRows},
		{"telemetry_fallback_batch_count", s.fallbacks},
		{"clock_profile_selection", selection},
		{"baseline_ttft_s", m.BaselineTTFTS},
		{"baseline_tpot_s", m.BaselineTPOTS},
	} {
		o.add(kv.key, kv.value)
	}
	if m.IdlePowerW != nil {
		o.add("idle_power_w", *m.IdlePowerW)
	}
	o.add("measured_on", m.MeasuredOn)
	o.add("completed_utc", m.CompletedUTC)
	o.add("sha256", sums)
	compact, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Write writes the bundle to the folder dir atomically: into a new
// temporary folder beside it, validated there as validate-profile
// validates a measured bundle, then renamed to dir. dir must not exist or
// be an empty folder; a bundle that fails validation is removed and the
// first failed check reported.
func (b *BundleFiles) Write(dir string) error {
	dir = filepath.Clean(dir)
	if err := checkBundleTarget(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp")
	if err != nil {
		return fmt.Errorf("bundle %s: cannot create a folder beside it: %w", dir, pathReason(err))
	}
	renamed := false
	defer func() {
		if !renamed {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("bundle %s: %w", dir, pathReason(err))
	}
	for _, f := range b.Files {
		if err := writeSynced(filepath.Join(tmp, f.Name), f.data); err != nil {
			return fmt.Errorf("bundle %s: writing %s: %w", dir, f.Name, pathReason(err))
		}
	}
	profilePath := filepath.Join(tmp, fileProfile)
	r := Validate(profilePath)
	if r.Err == nil && (r.Profile == nil || !r.Profile.IsMeasured()) {
		r.Err = fmt.Errorf("profile %s: not a validated measured_l4 bundle", profilePath)
	}
	if r.Err != nil {
		check := "measured_bundle"
		for _, c := range r.Checks {
			if c.Status == CheckFailed {
				check = c.Name
				break
			}
		}
		why := strings.TrimPrefix(r.Err.Error(), "profile "+profilePath+": ")
		return fmt.Errorf("bundle %s: not written: the bundle fails validation check %s: %s", dir, check, limits.OneLine(why))
	}
	// os.Rename refuses an existing folder, even an empty one: remove it
	// (os.Remove removes only an empty folder).
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		if isNotEmpty(err) || errors.Is(err, os.ErrExist) {
			return fmt.Errorf("bundle %s: the folder exists and is not empty: write the bundle to a new folder", dir)
		}
		return fmt.Errorf("bundle %s: %w", dir, pathReason(err))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if errors.Is(err, os.ErrExist) || isNotEmpty(err) {
			return fmt.Errorf("bundle %s: the folder exists and is not empty: write the bundle to a new folder", dir)
		}
		return fmt.Errorf("bundle %s: %w", dir, pathReason(err))
	}
	renamed = true
	return nil
}

// pathReason is the reason of an *os.PathError without its path (the
// messages here name the path already), or err.
func pathReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkBundleTarget refuses a dir that exists as anything but an empty
// folder.
func checkBundleTarget(dir string) error {
	info, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("bundle %s: %w", dir, pathReason(err))
	case !info.IsDir():
		return fmt.Errorf("bundle %s: exists and is not a folder: write the bundle to a new folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", dir, pathReason(err))
	}
	if len(entries) > 0 {
		return fmt.Errorf("bundle %s: the folder exists and is not empty: write the bundle to a new folder", dir)
	}
	return nil
}

// isNotEmpty reports whether a rename failed on a folder that is not
// empty (ENOTEMPTY, which Go does not map to os.ErrExist).
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY)
}

// writeSynced writes a new file and flushes it to disk, so that the
// renamed folder never holds a file shorter than its digest says.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
