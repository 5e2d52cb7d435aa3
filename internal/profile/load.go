package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"servesim/internal/pycompat"
)

// aggregateColumns are the columns of an aggregate profile table, in the
// order a measured bundle must have them.
var aggregateColumns = []string{
	"clock_mhz", "prefill_tokens_per_s", "decode_tokens_per_s",
	"idle_power_w", "prefill_power_w", "decode_power_w",
}

// ManifestPath returns where the manifest of a profile CSV is looked for:
// profile_manifest.json beside it if that exists, else the CSV's path with
// its suffix replaced by .json (Python's Path.with_suffix).
func ManifestPath(profilePath string) string {
	dir, name := filepath.Split(profilePath)
	candidate := filepath.Join(dir, "profile_manifest.json")
	if _, err := os.Stat(candidate); err == nil {
		return candidate
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 && i < len(name)-1 {
		name = name[:i]
	}
	return dir + name + ".json"
}

// Load reads the profile CSV at path, finds its manifest (see ManifestPath),
// and returns the profile. A measured_l4 profile must be a complete bundle
// that passes every check of the reference's bundle validation; an aggregate
// table is read as is and the profiler's raw per-request schema is reduced
// to per-clock medians. The error is the first check that failed.
func Load(path string) (*Profile, error) {
	r := Validate(path)
	return r.Profile, r.Err
}

// Validate loads the profile at path like Load and reports every check it
// could evaluate, not only the first failure. The verdict (Report.Profile
// non-nil) is the reference's, except that it fails closed on the file
// system too: the profile CSV, its manifest and every file the manifest
// lists must be regular files in the CSV's folder (see profileFolder), and
// a measured bundle must be given as its own l4_profile.csv.
func Validate(path string) *Report {
	r := &Report{Path: path}
	c := &checkList{report: r, failed: map[string]bool{}}
	dir, name := splitProfilePath(path)
	folder := openProfileFolder(dir)
	defer folder.close()

	table, csvFile := readProfileCSV(c, folder, name)
	r.ManifestPath = ManifestPath(path)
	manifest, manifestOK := readManifest(c, r, folder)
	if manifestOK {
		r.SourceLabel = "unspecified profile"
		if v, ok := manifest.Get("source_label"); ok {
			r.SourceLabel = pycompat.Str(v)
		}
	}
	statusKnown := determineStatus(c, table, manifest, manifestOK)

	var realized []float64
	measured := statusKnown && r.Status == StatusMeasuredL4 && r.ManifestFound
	bundleOK := false
	if measured {
		start := len(r.Checks)
		realized = validateBundle(c, folder, table, manifest, csvFile)
		bundleOK = c.allPassed(start)
	}

	var p Profile
	if c.needs("profile_table", "profile_csv", "manifest") {
		problems := readProfileTable(table, manifest, &p) // the detail counts the levels it reads
		c.result("profile_table", clockLevels(len(p.ClockMHz)), problems)
	}
	deps := []string{"profile_table", "profile_status"}
	if measured && !bundleOK {
		deps = append(deps, "measured_bundle")
	}
	if c.needs("profile_values", deps...) {
		prof, err := finishProfile(&p, r, manifest, bundleOK, realized)
		if err != nil {
			c.failErr("profile_values", err)
		} else {
			c.ok("profile_values", "columns finite, positive and increasing; baselines positive")
			if r.Err == nil {
				r.Profile = prof
			}
		}
	}
	return r
}

// clockLevels is the profile_table check's detail: how many clock levels
// the table has.
func clockLevels(n int) string {
	if n == 1 {
		return "1 clock level"
	}
	return fmt.Sprintf("%d clock levels", n)
}

// profileFile identifies the profile CSV as it was read: the bundle's
// l4_profile.csv checksum is checked against it only when it is that file.
type profileFile struct {
	name   string      // its name in the folder
	info   fs.FileInfo // its identity; nil when it could not be read
	sha256 string      // SHA-256 hex of the bytes read
}

// readProfileCSV reads the profile table (check profile_csv), once: its
// digest serves as provenance and as the bundle's checksum of it.
func readProfileCSV(c *checkList, folder *profileFolder, name string) (*pycompat.Table, profileFile) {
	path := c.report.Path
	data, sum, info, err := folder.read(name, MaxProfileBytes)
	if err != nil {
		c.fail("profile_csv", "cannot read the profile: "+fileReason(err))
		return nil, profileFile{name: name}
	}
	c.report.ProfileCSVSHA256 = sum
	file := profileFile{name: name, info: info, sha256: sum}
	table, err := pycompat.ReadTable(name, data, false)
	if err != nil {
		c.failErr("profile_csv", err)
		return nil, file
	}
	if table.RowCount == 0 {
		c.fail("profile_csv", "empty service profile: "+path)
		return nil, file
	}
	c.ok("profile_csv", fmt.Sprintf("%d rows, %d columns", table.RowCount, len(table.Header)))
	return table, file
}

// fileReason is the reason of a *fileError without the file's name, or
// the error's message.
func fileReason(err error) string {
	var fe *fileError
	if errors.As(err, &fe) {
		return fe.reason
	}
	return err.Error()
}

// readManifest reads the manifest when one exists (check manifest).
func readManifest(c *checkList, r *Report, folder *profileFolder) (*pycompat.Object, bool) {
	if _, err := os.Stat(r.ManifestPath); err != nil {
		c.ok("manifest", "no manifest at "+r.ManifestPath)
		return &pycompat.Object{Values: map[string]any{}}, true
	}
	r.ManifestFound = true
	data, sum, _, err := folder.read(filepath.Base(r.ManifestPath), MaxProfileBytes)
	if err != nil {
		c.fail("manifest", fmt.Sprintf("manifest %s: %s", r.ManifestPath, fileReason(err)))
		return nil, false
	}
	r.ManifestSHA256 = sum
	v, err := pycompat.ParseJSON(data)
	if err == nil {
		if obj, ok := v.(*pycompat.Object); ok {
			c.ok("manifest", r.ManifestPath)
			return obj, true
		}
		err = fmt.Errorf("%w, not %s", errNotObject, pycompat.TypeName(v))
	}
	c.fail("manifest", fmt.Sprintf("manifest %s: %v", r.ManifestPath, err))
	return nil, false
}

// determineStatus sets the profile status (check profile_status): the
// manifest's profile_status, else the CSV's first row's, else "unknown".
func determineStatus(c *checkList, table *pycompat.Table, manifest *pycompat.Object, manifestOK bool) bool {
	r := c.report
	if !manifestOK {
		c.needs("profile_status", "manifest")
		return false
	}
	if v, ok := manifest.Get("profile_status"); ok {
		r.Status = pycompat.Str(v)
	} else {
		if !c.needs("profile_status", "profile_csv") {
			return false
		}
		r.Status = "unknown"
		if table.HasColumn("profile_status") {
			r.Status = "None"
			if v, ok := table.Value(table.FirstRow, "profile_status"); ok {
				r.Status = v
			}
		}
	}
	if r.Status == StatusMeasuredL4 && !r.ManifestFound {
		c.fail("profile_status", "measured_l4 profile is missing profile_manifest.json")
		return true
	}
	c.ok("profile_status", r.Status)
	return true
}

// readProfileTable fills the profile columns from an aggregate table (and
// returns every unparsable field, in the reference's column-by-column order)
// or from the profiler's raw schema.
func readProfileTable(table *pycompat.Table, manifest *pycompat.Object, p *Profile) []string {
	isAggregate := true
	for _, name := range aggregateColumns {
		isAggregate = isAggregate && table.HasColumn(name)
	}
	if !isAggregate {
		if err := aggregateRawProfile(table, manifest, p); err != nil {
			return []string{err.Error()}
		}
		return nil
	}
	var problems []string
	columns := []*[]float64{&p.ClockMHz, &p.PrefillTokensPerS, &p.DecodeTokensPerS, &p.IdlePowerW, &p.PrefillPowerW, &p.DecodePowerW}
	for c, name := range aggregateColumns {
		values := make([]float64, len(table.Rows))
		for i, row := range table.Rows {
			v, err := table.FloatAt(row, table.RowLines[i], name)
			if err != nil {
				problems = append(problems, err.Error())
			}
			values[i] = v
		}
		*columns[c] = values
	}
	return limitProblems(problems)
}

// finishProfile sets the baselines and provenance and validates p.
func finishProfile(p *Profile, r *Report, manifest *pycompat.Object, measured bool, realized []float64) (*Profile, error) {
	var err error
	if p.BaselineTTFTS, err = manifestFloat(manifest, "baseline_ttft_s", DefaultBaselineTTFTS); err != nil {
		return nil, err
	}
	if p.BaselineTPOTS, err = manifestFloat(manifest, "baseline_tpot_s", DefaultBaselineTPOTS); err != nil {
		return nil, err
	}
	p.Status = r.Status
	p.SourceLabel = r.SourceLabel
	p.Manifest = pycompat.Plain(manifest).(map[string]any)
	p.MeasurementValid = measured
	p.ProfileCSVSHA256 = r.ProfileCSVSHA256
	p.ManifestSHA256 = r.ManifestSHA256
	p.RealizedClockMHz = realized
	return New(*p)
}

// manifestFloat is float(manifest.Get(key, fallback)).
func manifestFloat(manifest *pycompat.Object, key string, fallback float64) (float64, error) {
	v, ok := manifest.Get(key)
	if !ok {
		return fallback, nil
	}
	f, err := pycompat.FloatOf(v)
	if err != nil {
		return 0, fmt.Errorf("manifest field %s %s: %w", key, pycompat.ReprOf(v), err)
	}
	return f, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
