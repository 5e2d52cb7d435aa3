// Package profiletest writes synthetic measured NVIDIA L4 profile bundles
// for tests: a complete bundle that passes every check of the measured
// bundle validation, which tests then change one thing at a time.
package profiletest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Bundle file names.
const (
	ProfileCSV      = "l4_profile.csv"
	AllRequestedCSV = "l4_profile_all_requested.csv"
	RawCSV          = "l4_profile_raw.csv"
	TelemetryCSV    = "l4_telemetry.csv"
	ManifestJSON    = "profile_manifest.json"
)

// CSVFiles are the bundle's CSV files in the order their checksums are
// listed.
var CSVFiles = []string{ProfileCSV, AllRequestedCSV, RawCSV, TelemetryCSV}

// Table is a CSV file: a header and rows of fields.
type Table struct {
	Header []string   // column names
	Rows   [][]string // data rows, one field per column
}

// Column returns the index of name in the header, or -1.
func (t *Table) Column(name string) int { return slices.Index(t.Header, name) }

// Set sets the field name of row i.
func (t *Table) Set(i int, name, value string) { t.Rows[i][t.Column(name)] = value }

// Get returns the field name of row i.
func (t *Table) Get(i int, name string) string { return t.Rows[i][t.Column(name)] }

// Manifest is a JSON object with ordered keys whose values are raw JSON, so
// tests can write what Python's json accepts and Go's does not (NaN).
type Manifest struct {
	keys   []string
	values map[string]string
}

// Set sets key to v encoded as JSON.
func (m *Manifest) Set(key string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	m.SetRaw(key, string(data))
}

// SetRaw sets key to a raw JSON text.
func (m *Manifest) SetRaw(key, raw string) {
	if m.values == nil {
		m.values = map[string]string{}
	}
	if _, ok := m.values[key]; !ok {
		m.keys = append(m.keys, key)
	}
	m.values[key] = raw
}

// Delete removes key.
func (m *Manifest) Delete(key string) {
	delete(m.values, key)
	m.keys = slices.DeleteFunc(m.keys, func(k string) bool { return k == key })
}

// Bytes is the manifest as an indented JSON object.
func (m *Manifest) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range m.keys {
		key, _ := json.Marshal(k)
		fmt.Fprintf(&b, "  %s: %s", key, m.values[k])
		if i < len(m.keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// Derived manifest fields that Write recomputes from the files unless they
// are listed in Bundle.Freeze.
const (
	DeriveSHA256        = "sha256"
	DeriveRowCount      = "row_count"
	DeriveTelemetryRows = "telemetry_row_count"
	DeriveFallbackCount = "telemetry_fallback_batch_count"
	DeriveRealized      = "clock_profile_selection"
)

// Bundle is a synthetic profile bundle before it is written.
type Bundle struct {
	Profile, AllRequested, Raw, Telemetry Table    // aggregate profile, all-requested, raw and telemetry CSV tables
	Manifest                              Manifest // manifest written as ManifestName
	// ProfileName and ManifestName are the files the aggregate table and
	// the manifest are written to (ManifestName "" writes no manifest).
	ProfileName, ManifestName string
	// LineEnding ends every CSV line ("\r\n" by default).
	LineEnding string
	// Freeze lists derived manifest fields Write must not recompute.
	Freeze map[string]bool
	// AfterDerive edits the manifest after the derived fields are set.
	AfterDerive func(m *Manifest)
	// AfterChecksums edits the file contents after the checksums are taken.
	AfterChecksums func(files map[string][]byte)
	// Extra files written beside the bundle (names may hold folders).
	Extra map[string][]byte
}

// Requested and modeled clock levels of the default bundle: the top two
// requested levels realize the same clock (a plateau), so only the first
// four are modeled.
var (
	SweepMHz   = []float64{1200, 1500, 1800, 2040, 2100}
	ModeledMHz = []float64{1200, 1500, 1800, 2040}
)

const plateauMHz = 2010

type conditionSpec struct {
	phase                       string
	prompt, output, concurrency int
}

func conditions() []conditionSpec {
	var out []conditionSpec
	for _, p := range []int{128, 512, 2048, 4096} {
		for _, c := range []int{1, 4, 8} {
			out = append(out, conditionSpec{"prefill", p, 1, c})
		}
	}
	for _, p := range []int{128, 1024} {
		for _, c := range []int{1, 4, 8} {
			out = append(out, conditionSpec{"decode", p, 128, c})
		}
	}
	return out
}

// AggregateColumns, RawColumns and TelemetryColumns are the bundle schemas.
var (
	AggregateColumns = []string{"clock_mhz", "prefill_tokens_per_s", "decode_tokens_per_s", "idle_power_w", "prefill_power_w", "decode_power_w"}
	RawColumns       = []string{"phase", "prompt_tokens", "output_tokens", "concurrency", "requested_clock_mhz", "realized_clock_mhz", "repeat", "ttft_s", "tpot_s", "total_s", "energy_j", "mean_power_w", "peak_power_w", "peak_temp_c", "telemetry_sample_count", "telemetry_fallback_used", "request_index", "completion_tokens", "prompt_tokens_observed"}
	TelemetryColumns = []string{"elapsed_s", "utc", "phase", "graphics_clock_mhz", "memory_clock_mhz", "power_w", "temperature_c", "utilization_percent", "memory_used_mib"}
)

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// realizedBase is the typical realized clock at a requested level.
func realizedBase(requested float64) float64 { return math.Min(requested-15, plateauMHz) }

func aggregateRow(requested float64) []string {
	r := realizedBase(requested)
	return []string{
		num(requested),
		num(math.Round((3100+2.75*r)*1000) / 1000),
		num(math.Round((18.5+0.0215*r)*10000) / 10000),
		num(math.Round((16.2+0.0031*r)*1000) / 1000),
		num(math.Round((38.0+0.031*r)*1000) / 1000),
		num(math.Round((31.0+0.024*r)*1000) / 1000),
	}
}

// New returns the default valid bundle with telemetryRows telemetry rows
// (1,950 raw rows: 5 clocks x 18 conditions x 5 repeats x concurrency).
func New(telemetryRows int) *Bundle {
	b := &Bundle{ProfileName: ProfileCSV, ManifestName: ManifestJSON, LineEnding: "\r\n", Freeze: map[string]bool{}}
	b.Profile.Header = slices.Clone(AggregateColumns)
	b.AllRequested.Header = slices.Clone(AggregateColumns)
	for _, c := range SweepMHz {
		b.AllRequested.Rows = append(b.AllRequested.Rows, aggregateRow(c))
	}
	for _, c := range ModeledMHz {
		b.Profile.Rows = append(b.Profile.Rows, aggregateRow(c))
	}
	b.Raw.Header = slices.Clone(RawColumns)
	batchIndex := 0
	for _, clock := range SweepMHz {
		for _, cond := range conditions() {
			for repeat := range 5 {
				batchIndex++
				fallback := "false"
				if batchIndex%97 == 13 {
					fallback = "true"
				}
				samples := 6 + batchIndex%9
				for req := range cond.concurrency {
					jitter := float64((req*7+repeat*3+batchIndex)%5-1) * 1.25
					realized := realizedBase(clock) + jitter
					tokens := float64(cond.prompt * cond.concurrency)
					rate := 3100 + 2.75*realizedBase(clock)
					if cond.phase == "decode" {
						tokens = float64(cond.output * cond.concurrency)
						rate = (18.5 + 0.0215*realizedBase(clock)) * float64(cond.concurrency)
					}
					total := math.Round(tokens/rate*(1+0.002*float64(repeat)+0.001*float64(req))*1e6) / 1e6
					power := math.Round((38+0.031*realizedBase(clock)+0.4*float64(req%3))*1000) / 1000
					b.Raw.Rows = append(b.Raw.Rows, []string{
						cond.phase, strconv.Itoa(cond.prompt), strconv.Itoa(cond.output), strconv.Itoa(cond.concurrency),
						num(clock), num(realized), strconv.Itoa(repeat),
						num(math.Round(total*0.6*1e6) / 1e6), num(math.Round(total/float64(cond.output)*1e6) / 1e6), num(total),
						num(math.Round(power*total*1000) / 1000), num(power), num(power + 6.5), num(float64(55 + batchIndex%17)),
						strconv.Itoa(samples), fallback, strconv.Itoa(req),
						strconv.Itoa(cond.output), strconv.Itoa(cond.prompt),
					})
				}
			}
		}
	}
	b.Telemetry.Header = slices.Clone(TelemetryColumns)
	for i := range telemetryRows {
		clock := SweepMHz[(i/200)%len(SweepMHz)]
		b.Telemetry.Rows = append(b.Telemetry.Rows, []string{
			num(float64(i) * 0.1), fmt.Sprintf("2026-03-14T%02d:%02d:%02d.%dZ", 18+i/36000, (i/600)%60, (i/10)%60, i%10),
			[]string{"prefill", "decode", "idle"}[(i/50)%3], num(realizedBase(clock) + float64(i%3)),
			"6250", num(float64(40 + i%31)), num(float64(52 + i%13)), strconv.Itoa(i % 101), strconv.Itoa(17000 + i%900),
		})
	}
	m := &b.Manifest
	m.Set("schema_version", 2)
	m.Set("status", "complete")
	m.Set("profile_status", "measured_l4")
	m.Set("source_label", "synthetic NVIDIA L4 bundle (servesim tests)")
	m.Set("gpu", map[string]any{"name": "NVIDIA L4", "memory_mib": 23034, "driver": "570.124.06"})
	m.Set("model", "Qwen/Qwen2.5-7B-Instruct")
	m.Set("model_revision", "acbd96531cda22292a3ceaa67e984955d3965282")
	m.Set("vllm_image", "vllm/vllm-openai:v0.28.0")
	m.Set("vllm_image_digest", "vllm/vllm-openai@sha256:"+strings.Repeat("5e1f0c7a", 8))
	m.Set("vllm_prefix_caching_enabled", false)
	m.Set("vllm_server_arguments", []string{"--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "8192", "--no-enable-prefix-caching"})
	m.Set("selected_graphics_clocks_mhz", SweepMHz)
	m.Set("modeled_graphics_clocks_mhz", ModeledMHz)
	m.Set("measured_repeats_per_condition", 5)
	m.Set("warmup_batches_per_condition", 1)
	var conds []map[string]any
	for _, c := range conditions() {
		conds = append(conds, map[string]any{"concurrency": c.concurrency, "output_tokens": c.output, "phase": c.phase, "prompt_tokens": c.prompt})
	}
	m.Set("conditions", conds)
	m.Set("profile_columns", AggregateColumns)
	m.Set("raw_profile_columns", RawColumns)
	m.Set("baseline_ttft_s", 0.2)
	m.Set("baseline_tpot_s", 0.021)
	m.Set("measured_on", "2026-03-14")
	m.Set("completed_utc", "2026-03-14T22:41:07Z")
	return b
}

// Files serializes the bundle: every file name and its content, with the
// derived manifest fields refreshed and the hooks applied.
func (b *Bundle) Files() map[string][]byte {
	files := map[string][]byte{
		b.ProfileName:   b.csv(&b.Profile),
		AllRequestedCSV: b.csv(&b.AllRequested),
		RawCSV:          b.csv(&b.Raw),
		TelemetryCSV:    b.csv(&b.Telemetry),
	}
	for name, data := range b.Extra {
		files[name] = data
	}
	m := &b.Manifest
	if !b.Freeze[DeriveRowCount] {
		m.Set(DeriveRowCount, len(b.Raw.Rows))
	}
	if !b.Freeze[DeriveTelemetryRows] {
		m.Set(DeriveTelemetryRows, len(b.Telemetry.Rows))
	}
	medians, fallbacks := b.batchStatistics()
	if !b.Freeze[DeriveFallbackCount] {
		m.Set(DeriveFallbackCount, fallbacks)
	}
	if !b.Freeze[DeriveRealized] {
		var pairs []string
		for _, clock := range SweepMHz {
			if v, ok := medians[clock]; ok {
				pairs = append(pairs, fmt.Sprintf("%q: %s", num(clock), num(v)))
			}
		}
		m.SetRaw(DeriveRealized, `{"method": "median of batch medians", "realized_clock_median_mhz_by_requested": {`+strings.Join(pairs, ", ")+`}}`)
	}
	if !b.Freeze[DeriveSHA256] {
		var pairs []string
		for _, name := range CSVFiles {
			if data, ok := files[name]; ok {
				pairs = append(pairs, fmt.Sprintf("%q: %q", name, SHA256(data)))
			}
		}
		m.SetRaw(DeriveSHA256, "{"+strings.Join(pairs, ", ")+"}")
	}
	if b.AfterDerive != nil {
		b.AfterDerive(m)
	}
	if b.AfterChecksums != nil {
		b.AfterChecksums(files)
	}
	if b.ManifestName != "" {
		files[b.ManifestName] = m.Bytes()
	}
	return files
}

// Write writes the bundle into dir and returns the profile CSV's path.
func (b *Bundle) Write(dir string) (string, error) {
	for name, data := range b.Files() {
		if data == nil {
			continue
		}
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, b.ProfileName), nil
}

// SHA256 is the hexadecimal SHA-256 of data.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (b *Bundle) csv(t *Table) []byte {
	var buf bytes.Buffer
	write := func(fields []string) {
		for i, f := range fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			buf.WriteString(f)
		}
		buf.WriteString(b.LineEnding)
	}
	write(t.Header)
	for _, row := range t.Rows {
		write(row)
	}
	return buf.Bytes()
}

// batchStatistics computes, from the raw table as written, the
// batch-balanced median realized clock of each requested level (the median
// of the per-batch medians) and the number of batches that used the
// telemetry fallback. Rows it cannot parse are ignored.
func (b *Bundle) batchStatistics() (map[float64]float64, int) {
	t := &b.Raw
	type key struct {
		clock                               float64
		phase, prompt, output, conc, repeat string
	}
	realized := map[key][]float64{}
	fallback := map[key]bool{}
	var order []key
	for _, row := range t.Rows {
		if len(row) != len(t.Header) || t.Column("requested_clock_mhz") < 0 {
			continue
		}
		clock, err1 := parseNumber(row[t.Column("requested_clock_mhz")])
		value, err2 := parseNumber(row[t.Column("realized_clock_mhz")])
		if err1 != nil || err2 != nil {
			continue
		}
		k := key{clock, row[t.Column("phase")], row[t.Column("prompt_tokens")], row[t.Column("output_tokens")], row[t.Column("concurrency")], strings.TrimSpace(row[t.Column("repeat")])}
		if _, seen := realized[k]; !seen {
			order = append(order, k)
		}
		realized[k] = append(realized[k], value)
		if strings.EqualFold(strings.TrimSpace(row[t.Column("telemetry_fallback_used")]), "true") {
			fallback[k] = true
		}
	}
	perClock := map[float64][]float64{}
	fallbacks := 0
	for _, k := range order {
		perClock[k.clock] = append(perClock[k.clock], median(realized[k]))
		if fallback[k] {
			fallbacks++
		}
	}
	out := map[float64]float64{}
	for clock, values := range perClock {
		out[clock] = median(values)
	}
	return out, fallbacks
}

// parseNumber reads the plain numbers the bundles hold, allowing the
// underscores and surrounding spaces some variants write.
func parseNumber(s string) (float64, error) {
	return strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), 64)
}

func median(values []float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
