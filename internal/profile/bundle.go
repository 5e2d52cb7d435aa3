package profile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"servesim/internal/pycompat"
)

// The pinned measurement: what a measured_l4 bundle must declare.
const (
	profileSchemaVersion  = 2
	measuredModel         = "Qwen/Qwen2.5-7B-Instruct"
	measuredModelRevision = "acbd96531cda22292a3ceaa67e984955d3965282"
	measuredVLLMImage     = "vllm/vllm-openai:v0.28.0"
	measuredRepeats       = 5
	warmupBatches         = 1
)

// rawProfileColumns is the profiler's per-request schema.
var rawProfileColumns = []string{
	"phase", "prompt_tokens", "output_tokens", "concurrency",
	"requested_clock_mhz", "realized_clock_mhz", "repeat", "ttft_s", "tpot_s",
	"total_s", "energy_j", "mean_power_w", "peak_power_w", "peak_temp_c",
	"telemetry_sample_count", "telemetry_fallback_used", "request_index",
	"completion_tokens", "prompt_tokens_observed",
}

// telemetryColumns is the GPU telemetry log's schema.
var telemetryColumns = []string{
	"elapsed_s", "utc", "phase", "graphics_clock_mhz", "memory_clock_mhz",
	"power_w", "temperature_c", "utilization_percent", "memory_used_mib",
}

// Bundle file names, in the order the reference checks their checksums.
const (
	fileProfile      = "l4_profile.csv"
	fileAllRequested = "l4_profile_all_requested.csv"
	fileRaw          = "l4_profile_raw.csv"
	fileTelemetry    = "l4_telemetry.csv"
)

var bundleFiles = []string{fileProfile, fileAllRequested, fileRaw, fileTelemetry}

// condition is one cell of the fixed measurement matrix.
type condition struct {
	Phase                       string
	Prompt, Output, Concurrency pycompat.Integer
}

// String describes the condition in messages.
func (c condition) String() string {
	return fmt.Sprintf("%s prompt=%s output=%s concurrency=%s", c.Phase, c.Prompt, c.Output, c.Concurrency)
}

// expectedConditions is the fixed condition matrix: prefill of 128, 512,
// 2048 and 4096 prompt tokens and decode of 128 tokens after 128 or 1024
// prompt tokens, each at concurrency 1, 4 and 8.
var expectedConditions = func() []condition {
	var out []condition
	for _, prompt := range []int64{128, 512, 2048, 4096} {
		for _, conc := range []int64{1, 4, 8} {
			out = append(out, condition{"prefill", pycompat.IntOf(prompt), pycompat.IntOf(1), pycompat.IntOf(conc)})
		}
	}
	for _, prompt := range []int64{128, 1024} {
		for _, conc := range []int64{1, 4, 8} {
			out = append(out, condition{"decode", pycompat.IntOf(prompt), pycompat.IntOf(128), pycompat.IntOf(conc)})
		}
	}
	return out
}()

var expectedConditionSet = func() map[condition]bool {
	m := map[condition]bool{}
	for _, c := range expectedConditions {
		m[c] = true
	}
	return m
}()

// bundlePatterns are the reference's regular expressions for digests and
// file names, compiled on first use so that commands that never validate a
// bundle do not pay for them at start-up.
var bundlePatterns = sync.OnceValue(func() (p struct{ imageDigest, safeName, hexDigest *regexp.Regexp }) {
	p.imageDigest = regexp.MustCompile(`(?:^|@)sha256:[0-9a-fA-F]{64}\n?$`)
	p.safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	p.hexDigest = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	return p
})

// bundle holds what the bundle checks share.
type bundle struct {
	c        *checkList
	folder   *profileFolder
	table    *pycompat.Table
	manifest *pycompat.Object
	profile  profileFile             // the profile CSV as it was read
	files    map[string]bundleResult // the bundle files read whole (the CSVs checked after their checksums)

	sweep      []float64 // selected_graphics_clocks_mhz
	modeled    []float64 // the aggregate table's clocks
	sweepIndex []int     // for each modeled clock, its index in sweep
	full       *pycompat.Table
	fullValues [][]float64
	raw        *pycompat.Table
	telemetry  *pycompat.Table
	batches    *rawBatches
	realized   []float64 // batch-balanced medians of the modeled clocks
	declared   []float64 // the manifest's realized-clock medians
}

// bundleResult is a bundle file read whole, or why it could not be.
type bundleResult struct {
	data   []byte
	sha256 string
	err    error
}

// validateBundle runs every check of the reference's
// _validate_measured_profile_bundle that can be evaluated and returns the
// declared realized-clock medians (nil when they could not be read). The
// bundle's files are read from folder; profile is the profile CSV as it
// was read.
func validateBundle(c *checkList, folder *profileFolder, table *pycompat.Table, manifest *pycompat.Object, profile profileFile) []float64 {
	b := &bundle{c: c, folder: folder, table: table, manifest: manifest, profile: profile, files: map[string]bundleResult{}}
	b.checkPinnedMetadata()
	b.checkClocks()
	b.checkProtocol()
	b.checkChecksums()
	b.checkFullProfile()
	b.checkRawProfile()
	b.checkRealizedMedians()
	for _, field := range []string{"measured_on", "completed_utc"} {
		v, _ := manifest.Get(field)
		if s, ok := v.(string); ok && pycompat.Strip(s) != "" {
			c.ok(field, s)
		} else {
			c.fail(field, "measured profile manifest lacks "+field)
		}
	}
	return b.declared
}

func (b *bundle) get(key string) any {
	v, _ := b.manifest.Get(key)
	return v
}

// equalCheck records name as ok when the manifest's key equals want.
func (b *bundle) equalCheck(name, key string, want any, message string) {
	v, present := b.manifest.Get(key)
	if present && v == want {
		b.c.ok(name, fmt.Sprint(want))
		return
	}
	b.c.fail(name, fmt.Sprintf("%s (%s is %s)", message, key, reprOrAbsent(v, present)))
}

func reprOrAbsent(v any, present bool) string {
	if !present {
		return "absent"
	}
	return pycompat.ReprOf(v)
}

func (b *bundle) checkPinnedMetadata() {
	c := b.c
	b.equalCheck("manifest_status", "status", "complete", "measured profile manifest status must be 'complete'")
	b.equalCheck("manifest_profile_status", "profile_status", StatusMeasuredL4, "complete measured manifest must declare profile_status 'measured_l4'")
	if v := b.get("schema_version"); pycompat.EqualsInt(v, profileSchemaVersion) {
		c.ok("schema_version", pycompat.ReprOf(v))
	} else {
		c.fail("schema_version", "unsupported measured profile schema_version: "+pycompat.ReprOf(v))
	}
	b.columnsCheck("profile_columns", aggregateColumns, "measured profile manifest does not declare the expected aggregate schema")
	b.columnsCheck("raw_profile_columns", rawProfileColumns, "measured profile manifest does not declare the expected raw schema")
	if c.needs("aggregate_schema", "profile_csv") {
		keys := b.table.Keys(b.table.FirstRow)
		same := len(keys) == len(aggregateColumns)
		for i := 0; same && i < len(keys); i++ {
			same = keys[i] != nil && *keys[i] == aggregateColumns[i]
		}
		if same {
			c.ok("aggregate_schema", strings.Join(aggregateColumns, ","))
		} else {
			c.fail("aggregate_schema", fmt.Sprintf("measured aggregate profile has an unexpected column schema (%s has columns %s)", b.table.Name, describeKeys(keys)))
		}
	}
	gpu, isMap := b.get("gpu").(*pycompat.Object)
	var name any = ""
	if isMap {
		if v, ok := gpu.Get("name"); ok {
			name = v
		}
	}
	if isMap && strContainsASCIIFold(name, "nvidia l4") {
		c.ok("gpu", pycompat.Str(name))
	} else {
		c.fail("gpu", "measured profile hardware metadata must identify an NVIDIA L4")
	}
	b.equalCheck("model", "model", measuredModel, "measured profile model metadata does not match the pinned model")
	b.equalCheck("model_revision", "model_revision", measuredModelRevision, "measured profile model revision does not match the pinned revision")
	b.equalCheck("vllm_image", "vllm_image", measuredVLLMImage, "measured profile container does not match the pinned vLLM image")
	digest := ""
	if v, ok := b.manifest.Get("vllm_image_digest"); ok {
		digest = pycompat.Str(v)
	}
	if bundlePatterns().imageDigest.MatchString(digest) {
		c.ok("vllm_image_digest", digest)
	} else {
		c.fail("vllm_image_digest", "measured profile must record a resolved vLLM sha256 digest")
	}
	if v, ok := b.manifest.Get("vllm_prefix_caching_enabled"); ok && v == false {
		c.ok("prefix_caching_disabled", "vllm_prefix_caching_enabled is false")
	} else {
		c.fail("prefix_caching_disabled", "measured profile must explicitly disable vLLM prefix caching")
	}
	if args, err := b.sequence("vllm_server_arguments"); err != nil {
		c.failErr("vllm_server_arguments", err)
	} else if containsValue(args, "--no-enable-prefix-caching") {
		c.ok("vllm_server_arguments", "--no-enable-prefix-caching")
	} else {
		c.fail("vllm_server_arguments", "measured profile vLLM arguments must include --no-enable-prefix-caching")
	}
}

// columnsCheck compares tuple(manifest.Get(key, ())) with want.
func (b *bundle) columnsCheck(key string, want []string, message string) {
	name := key
	v, present := b.manifest.Get(key)
	items := []any{}
	ok := true
	if present {
		items, ok = pycompat.Tuple(v)
	}
	same := ok && len(items) == len(want)
	for i := 0; same && i < len(items); i++ {
		same = items[i] == want[i]
	}
	if same {
		b.c.ok(name, strings.Join(want, ","))
		return
	}
	b.c.fail(name, message)
}

func describeKeys(keys []*string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		if k == nil {
			parts[i] = "<extra fields>"
		} else {
			parts[i] = *k
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// strContainsASCIIFold is `needle in str(v).lower()` for a decoded JSON
// value and a lower-case ASCII needle without quotes or separators: only
// the strings inside v (at any depth, keys included) can hold it.
func strContainsASCIIFold(v any, needle string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(pycompat.ASCIILower(x), needle)
	case []any:
		for _, e := range x {
			if strContainsASCIIFold(e, needle) {
				return true
			}
		}
	case *pycompat.Object:
		for _, k := range x.Keys {
			if strContainsASCIIFold(k, needle) || strContainsASCIIFold(x.Values[k], needle) {
				return true
			}
		}
	}
	return false
}

func containsValue(items []any, want string) bool {
	for _, v := range items {
		if v == want {
			return true
		}
	}
	return false
}

// sequence is _manifest_sequence: the manifest's key must be a list.
func (b *bundle) sequence(key string) ([]any, error) {
	if items, ok := b.get(key).([]any); ok {
		return items, nil
	}
	return nil, fmt.Errorf("measured profile manifest field '%s' must be a sequence", key)
}

// floatArray is np.asarray(items, dtype=float) for the list manifest[key]:
// numbers and numeric strings convert, null becomes NaN; nested or other
// values fail (numpy builds another shape or raises).
func floatArray(key string, items []any) ([]float64, error) {
	out := make([]float64, len(items))
	for i, v := range items {
		if v == nil {
			out[i] = math.NaN()
			continue
		}
		switch v.(type) {
		case []any, *pycompat.Object:
			return nil, fmt.Errorf("manifest field %s item %d is %s, expected a number", key, i, pycompat.TypeName(v))
		}
		f, err := pycompat.FloatOf(v)
		if err != nil {
			return nil, fmt.Errorf("manifest field %s item %d %s: %w", key, i, pycompat.ReprOf(v), err)
		}
		out[i] = f
	}
	return out, nil
}

// orderedLevels reports whether values are at least four finite, positive,
// strictly increasing clock levels.
func orderedLevels(values []float64) bool {
	return len(values) >= 4 && allFinitePositive(values) && strictlyIncreasing(values)
}

// isClose is np.isclose(a, b, rtol=0, atol=atol).
func isClose(a, b, atol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= atol
}

// modeledRowsAtol is how close, absolutely, a modeled aggregate row's
// values must be to the full aggregate profile's row of the same clock:
// the reference's np.allclose(..., rtol=0.0, atol=1e-12), seed003_plant.py
// line 783.
const modeledRowsAtol = 1e-12

// allClose is np.allclose(a, b, rtol=0, atol=atol) for equal shapes.
func allClose(a, b []float64, atol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !isClose(a[i], b[i], atol) {
			return false
		}
	}
	return true
}

func formatLevels(values []float64) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = pycompat.FormatG(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (b *bundle) checkClocks() {
	c := b.c
	const sweepMessage = "measured profile sweep must contain at least four ordered clock levels"
	if items, err := b.sequence("selected_graphics_clocks_mhz"); err != nil {
		c.failErr("clock_sweep", err)
	} else if sweep, err := floatArray("selected_graphics_clocks_mhz", items); err != nil {
		c.fail("clock_sweep", sweepMessage+" ("+err.Error()+")")
	} else if !orderedLevels(sweep) {
		c.fail("clock_sweep", fmt.Sprintf("%s (selected_graphics_clocks_mhz is %s)", sweepMessage, formatLevels(sweep)))
	} else {
		b.sweep = sweep
		c.ok("clock_sweep", formatLevels(sweep)+" MHz")
	}

	if c.needs("modeled_clocks", "aggregate_schema") {
		modeled, err := b.tableClocks(b.table)
		switch {
		case err != nil:
			c.failErr("modeled_clocks", err)
		case !orderedLevels(modeled):
			c.fail("modeled_clocks", fmt.Sprintf("measured aggregate profile must contain at least four ordered clock levels (%s has %s)", b.table.Name, formatLevels(modeled)))
		default:
			b.modeled = modeled
			c.ok("modeled_clocks", formatLevels(modeled)+" MHz")
		}
	}

	if c.needs("modeled_subset", "clock_sweep", "modeled_clocks") {
		var problems []string
		for _, clock := range b.modeled {
			match, count := -1, 0
			for j, s := range b.sweep {
				if isClose(s, clock, 1e-9) {
					match, count = j, count+1
				}
			}
			if count != 1 {
				problems = append(problems, fmt.Sprintf("measured aggregate clock levels must be an ordered subset of the completed measurement sweep (%s MHz matches %d sweep levels)", pycompat.FormatG(clock), count))
			}
			b.sweepIndex = append(b.sweepIndex, match)
		}
		c.result("modeled_subset", "every modeled level is a sweep level", problems)
	}

	if _, declared := b.manifest.Get("modeled_graphics_clocks_mhz"); !declared {
		c.ok("modeled_graphics_clocks", "not declared")
	} else if c.needs("modeled_graphics_clocks", "modeled_clocks") {
		const message = "measured aggregate clock levels do not match modeled_graphics_clocks_mhz"
		items, seqErr := b.sequence("modeled_graphics_clocks_mhz")
		values, err := floatArray("modeled_graphics_clocks_mhz", items)
		switch {
		case seqErr != nil:
			c.failErr("modeled_graphics_clocks", seqErr)
		case err != nil:
			c.fail("modeled_graphics_clocks", message+" ("+err.Error()+")")
		case !allClose(values, b.modeled, 1e-9):
			c.fail("modeled_graphics_clocks", fmt.Sprintf("%s (declared %s, table has %s)", message, formatLevels(values), formatLevels(b.modeled)))
		default:
			c.ok("modeled_graphics_clocks", formatLevels(values)+" MHz")
		}
	}
}

// tableClocks is [float(row["clock_mhz"]) for row in rows].
func (b *bundle) tableClocks(t *pycompat.Table) ([]float64, error) {
	out := make([]float64, len(t.Rows))
	for i, row := range t.Rows {
		v, err := t.FloatAt(row, t.RowLines[i], "clock_mhz")
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (b *bundle) checkProtocol() {
	c := b.c
	if v := b.get("measured_repeats_per_condition"); pycompat.EqualsInt(v, measuredRepeats) {
		c.ok("repeats", pycompat.ReprOf(v))
	} else {
		c.fail("repeats", fmt.Sprintf("measured profile must record five repetitions per condition (measured_repeats_per_condition is %s)", pycompat.ReprOf(v)))
	}
	if v := b.get("warmup_batches_per_condition"); pycompat.EqualsInt(v, warmupBatches) {
		c.ok("warmup", pycompat.ReprOf(v))
	} else {
		c.fail("warmup", fmt.Sprintf("measured profile must record one warmup batch per condition (warmup_batches_per_condition is %s)", pycompat.ReprOf(v)))
	}
	items, err := b.sequence("conditions")
	if err != nil {
		c.failErr("conditions", err)
		return
	}
	declared := map[condition]bool{}
	for i, item := range items {
		obj, ok := item.(*pycompat.Object)
		if !ok {
			c.fail("conditions", fmt.Sprintf("measured profile conditions must be mappings (item %d is %s)", i, pycompat.TypeName(item)))
			return
		}
		cond, err := manifestCondition(obj)
		if err != nil {
			c.fail("conditions", fmt.Sprintf("manifest conditions item %d: %v", i, err))
			return
		}
		declared[cond] = true
	}
	var problems []string
	for _, want := range expectedConditions {
		if !declared[want] {
			problems = append(problems, "missing "+want.String())
		}
	}
	for _, item := range items {
		got, _ := manifestCondition(item.(*pycompat.Object))
		if !expectedConditionSet[got] {
			problems = append(problems, "unexpected "+got.String())
		}
	}
	if len(problems) > 0 {
		c.fail("conditions", "measured profile manifest does not match the fixed condition matrix ("+strings.Join(limitProblems(problems), ", ")+")")
		return
	}
	c.ok("conditions", fmt.Sprintf("%d conditions", len(expectedConditions)))
}

// manifestCondition is the reference's (str(phase), int(prompt_tokens),
// int(output_tokens), int(concurrency)) of a declared condition.
func manifestCondition(obj *pycompat.Object) (condition, error) {
	var cond condition
	phase, ok := obj.Get("phase")
	if !ok {
		phase = ""
	}
	cond.Phase = pycompat.Str(phase)
	for _, f := range []struct {
		key string
		dst *pycompat.Integer
	}{{"prompt_tokens", &cond.Prompt}, {"output_tokens", &cond.Output}, {"concurrency", &cond.Concurrency}} {
		v, ok := obj.Get(f.key)
		if !ok {
			v = pycompat.JSONInt("0")
		}
		n, err := pycompat.IntOfValue(v)
		if err != nil {
			return cond, fmt.Errorf("%s %s: %w", f.key, pycompat.ReprOf(v), err)
		}
		*f.dst = n
	}
	return cond, nil
}

func (b *bundle) checkChecksums() {
	c := b.c
	checksums, ok := b.get("sha256").(*pycompat.Object)
	if !ok {
		c.fail("checksums_listed", "measured profile manifest must contain file checksums")
		return
	}
	var missing []string
	for _, name := range bundleFiles {
		if _, listed := checksums.Get(name); !listed {
			missing = append(missing, "measured profile manifest lacks a valid checksum for "+name)
		}
	}
	c.result("checksums_listed", strings.Join(bundleFiles, ", "), missing)
	for _, name := range checksums.Keys {
		check := "sha256 " + name
		if !bundlePatterns().safeName.MatchString(name) {
			c.fail(check, fmt.Sprintf("measured profile manifest contains an unsafe checksum file name (%q)", name))
			continue
		}
		expected := pycompat.Str(checksums.Values[name])
		if !bundlePatterns().hexDigest.MatchString(expected) {
			c.fail(check, "measured profile manifest lacks a valid checksum for "+name)
			continue
		}
		got, err := b.digest(name)
		if err != nil {
			c.fail(check, fmt.Sprintf("measured profile checksum mismatch for %s (%v)", name, err))
			continue
		}
		if got != strings.ToLower(expected) {
			c.fail(check, fmt.Sprintf("measured profile checksum mismatch for %s (manifest %s, file %s)", name, strings.ToLower(expected), got))
			continue
		}
		c.ok(check, "OK")
	}
}

// digest is the SHA-256 hex of a listed bundle file, read once: the
// profile CSV's from its reading, the CSVs checked later from their bytes
// (kept for those checks), any other file streamed in constant memory. A
// file that is not a regular file in the bundle's folder is never opened,
// so no digest of a file elsewhere is ever reported.
func (b *bundle) digest(name string) (string, error) {
	switch name {
	case fileProfile:
		info, err := b.folder.stat(name, math.MaxInt64)
		if err != nil {
			return "", err
		}
		if b.profile.info == nil || !os.SameFile(info, b.profile.info) {
			return "", fmt.Errorf("the profile given is %s, not this bundle's %s: the file parsed must be the file hashed; give %s",
				b.profile.name, name, filepath.Join(b.folder.dir, name))
		}
		return b.profile.sha256, nil
	case fileAllRequested, fileRaw, fileTelemetry:
		f := b.readBundleFile(name)
		return f.sha256, f.err
	}
	sum, _, err := b.folder.hash(name, MaxBundleFileBytes)
	return sum, err
}

// readBundleFile reads a bundle file whole, once.
func (b *bundle) readBundleFile(name string) bundleResult {
	if f, ok := b.files[name]; ok {
		return f
	}
	var f bundleResult
	f.data, f.sha256, _, f.err = b.folder.read(name, MaxBundleFileBytes)
	b.files[name] = f
	return f
}

// readCSVChecked is _read_csv_checked: the file must exist, have exactly
// the expected header and at least one row.
func (b *bundle) readCSVChecked(name string, expected []string, countOnly bool) (*pycompat.Table, error) {
	f := b.readBundleFile(name)
	if f.err != nil {
		var fe *fileError
		if errors.As(f.err, &fe) && fe.missing {
			return nil, fmt.Errorf("measured profile bundle is missing required file: %s", name)
		}
		return nil, fmt.Errorf("measured profile bundle is missing required file: %s (%v)", name, f.err)
	}
	t, err := pycompat.ReadTable(name, f.data, countOnly)
	if err != nil {
		return nil, err
	}
	same := len(t.Header) == len(expected)
	for i := 0; same && i < len(expected); i++ {
		same = t.Header[i] == expected[i]
	}
	if !same {
		quoted := make([]string, len(expected))
		for i, e := range expected {
			quoted[i] = pycompat.Repr(e)
		}
		return nil, fmt.Errorf("measured profile file %s has an unexpected schema; expected [%s]", name, strings.Join(quoted, ", "))
	}
	if t.RowCount == 0 {
		return nil, fmt.Errorf("measured profile file is empty: %s", name)
	}
	return t, nil
}

func (b *bundle) checkFullProfile() {
	c := b.c
	full, err := b.readCSVChecked(fileAllRequested, aggregateColumns, false)
	if err != nil {
		c.failErr("all_requested_csv", err)
	} else {
		b.full = full
		c.ok("all_requested_csv", fmt.Sprintf("%d rows", full.RowCount))
	}
	if c.needs("full_profile_clocks", "all_requested_csv", "clock_sweep") {
		clocks, err := b.tableClocks(b.full)
		switch {
		case err != nil:
			c.failErr("full_profile_clocks", err)
		case !allClose(clocks, b.sweep, 1e-9):
			c.fail("full_profile_clocks", fmt.Sprintf("full aggregate profile clocks do not match the completed measurement sweep (%s has %s)", fileAllRequested, formatLevels(clocks)))
		default:
			c.ok("full_profile_clocks", "match the sweep")
		}
	}
	if c.needs("full_profile_values", "full_profile_clocks") {
		var problems []string
		b.fullValues = make([][]float64, len(b.full.Rows))
		for i, row := range b.full.Rows {
			values, err := rowValues(b.full, i, row)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if !allFinitePositive(values) {
				problems = append(problems, fmt.Sprintf("full aggregate profile values must be finite and positive (%s line %d)", fileAllRequested, b.full.RowLines[i]))
			}
			b.fullValues[i] = values
		}
		c.result("full_profile_values", "finite and positive", limitProblems(problems))
	}
	if c.needs("modeled_rows_match", "modeled_subset", "full_profile_values") {
		var problems []string
		for i, row := range b.table.Rows {
			values, err := rowValues(b.table, i, row)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if !allClose(values, b.fullValues[b.sweepIndex[i]], modeledRowsAtol) {
				problems = append(problems, fmt.Sprintf("modeled aggregate rows must match the full aggregate profile (%s line %d, %s MHz)", b.table.Name, b.table.RowLines[i], pycompat.FormatG(b.modeled[i])))
			}
		}
		c.result("modeled_rows_match", "equal to the full profile's rows", limitProblems(problems))
	}
}

// rowValues parses the six aggregate columns of row i.
func rowValues(t *pycompat.Table, i int, row []string) ([]float64, error) {
	values := make([]float64, len(aggregateColumns))
	for j, name := range aggregateColumns {
		v, err := t.FloatAt(row, t.RowLines[i], name)
		if err != nil {
			return nil, err
		}
		values[j] = v
	}
	return values, nil
}

// countCheck compares int(manifest.Get(key, -1)) with a row count.
func (b *bundle) countCheck(name, key string, count int, message string) {
	v, present := b.manifest.Get(key)
	if !present {
		v = pycompat.JSONInt("-1")
	}
	n, err := pycompat.IntOfValue(v)
	switch {
	case err != nil:
		b.c.fail(name, fmt.Sprintf("manifest field %s %s: %v", key, pycompat.ReprOf(v), err))
	case n != pycompat.IntOf(int64(count)):
		b.c.fail(name, fmt.Sprintf("%s (manifest %s, file %d)", message, n, count))
	default:
		b.c.ok(name, fmt.Sprint(count))
	}
}

func (b *bundle) checkRawProfile() {
	c := b.c
	if raw, err := b.readCSVChecked(fileRaw, rawProfileColumns, false); err != nil {
		c.failErr("raw_csv", err)
	} else {
		b.raw = raw
		c.ok("raw_csv", fmt.Sprintf("%d rows", raw.RowCount))
	}
	if telemetry, err := b.readCSVChecked(fileTelemetry, telemetryColumns, true); err != nil {
		c.failErr("telemetry_csv", err)
	} else {
		b.telemetry = telemetry
		c.ok("telemetry_csv", fmt.Sprintf("%d rows", telemetry.RowCount))
	}
	if c.needs("row_count", "raw_csv") {
		b.countCheck("row_count", "row_count", b.raw.RowCount, "measured raw profile row_count does not match the manifest")
	}
	if c.needs("telemetry_row_count", "telemetry_csv") {
		b.countCheck("telemetry_row_count", "telemetry_row_count", b.telemetry.RowCount, "measured telemetry row_count does not match the manifest")
	}
	if c.needs("raw_rows", "raw_csv", "clock_sweep") {
		batches, problems := collectRawBatches(b.raw, b.sweep)
		if c.result("raw_rows", fmt.Sprintf("%d rows in %d batches", b.raw.RowCount, len(batches.order)), limitProblems(problems)) {
			b.batches = batches
		}
	}
	if c.needs("repetition_matrix", "raw_rows") {
		c.result("repetition_matrix", fmt.Sprintf("%d clocks x %d conditions x %d repeats", len(b.sweep), len(expectedConditions), measuredRepeats), limitProblems(b.batches.matrixProblems(b.sweep)))
	}
	if c.needs("telemetry_fallback_batch_count", "raw_rows") {
		b.countCheck("telemetry_fallback_batch_count", "telemetry_fallback_batch_count", b.batches.fallbackCount(), "measured telemetry_fallback_batch_count does not match the raw profile")
	}
	if c.needs("realized_medians_increasing", "repetition_matrix", "modeled_subset") {
		b.realized = make([]float64, len(b.modeled))
		for i, j := range b.sweepIndex {
			b.realized[i] = b.batches.balancedMedian(b.sweep[j])
		}
		if strictlyIncreasing(b.realized) {
			c.ok("realized_medians_increasing", formatLevels(b.realized)+" MHz")
		} else {
			c.fail("realized_medians_increasing", fmt.Sprintf("modeled realized clocks must be strictly increasing after batch-balanced aggregation (%s MHz)", formatLevels(b.realized)))
		}
	}
}

func (b *bundle) checkRealizedMedians() {
	c := b.c
	if c.needs("realized_medians_declared", "modeled_clocks") {
		declared, err := manifestRealizedMedians(b.manifest, b.modeled)
		if err != nil {
			c.failErr("realized_medians_declared", err)
		} else {
			b.declared = declared
			c.ok("realized_medians_declared", formatLevels(declared)+" MHz")
		}
	}
	if c.needs("realized_medians_match", "realized_medians_increasing", "realized_medians_declared") {
		if allClose(b.declared, b.realized, 1e-9) {
			c.ok("realized_medians_match", "within 1e-9 MHz")
		} else {
			c.fail("realized_medians_match", fmt.Sprintf("manifest realized-clock medians do not match batch-balanced raw measurements (manifest %s, raw %s)", formatLevels(b.declared), formatLevels(b.realized)))
		}
	}
}

// manifestRealizedMedians is _manifest_realized_clock_medians.
func manifestRealizedMedians(manifest *pycompat.Object, requested []float64) ([]float64, error) {
	v, _ := manifest.Get("clock_profile_selection")
	selection, ok := v.(*pycompat.Object)
	if !ok {
		return nil, fmt.Errorf("measured profile manifest lacks clock_profile_selection metadata")
	}
	v, _ = selection.Get("realized_clock_median_mhz_by_requested")
	mapping, ok := v.(*pycompat.Object)
	if !ok {
		return nil, fmt.Errorf("measured profile manifest lacks batch-balanced realized-clock medians")
	}
	type pair struct{ requested, realized float64 }
	parsed := make([]pair, 0, len(mapping.Keys))
	for _, key := range mapping.Keys {
		req, err1 := pycompat.Float(key)
		real, err2 := pycompat.FloatOf(mapping.Values[key])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("measured realized-clock mapping must contain numeric values (%s: %s)", pycompat.Repr(key), pycompat.ReprOf(mapping.Values[key]))
		}
		if !allFinitePositive([]float64{req, real}) {
			return nil, fmt.Errorf("measured realized-clock mapping must contain finite positive values (%s: %s)", pycompat.Repr(key), pycompat.ReprOf(mapping.Values[key]))
		}
		parsed = append(parsed, pair{req, real})
	}
	medians := make([]float64, len(requested))
	for i, r := range requested {
		count := 0
		for _, p := range parsed {
			if isClose(p.requested, r, 1e-9) {
				medians[i] = p.realized
				count++
			}
		}
		if count != 1 {
			return nil, fmt.Errorf("measured profile manifest must declare exactly one realized-clock median for requested level %s MHz", pycompat.FormatG(r))
		}
	}
	return medians, nil
}
