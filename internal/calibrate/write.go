package calibrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"servesim/internal/jsonout"
	"servesim/internal/limits"
	"servesim/internal/profile"
)

// Inputs are a calibration's files and the server their runs are
// replayed on (servesim calibrate's flags).
type Inputs struct {
	// Bench are the result files of the runs to fit, HeldOut those of the
	// runs replayed with the fitted card and reported, not fitted.
	Bench, HeldOut []string
	// PowerLogs are nvidia-smi logs kept while the runs ran.
	PowerLogs []string
	Setup     *Setup
	// Free names the card parameters to fit (ParamNames when empty).
	Free []string
	// ProfilePath names the setup's profile in the provenance.
	ProfilePath string
	// Version is servesim's, for the provenance.
	Version string
}

// FileDigest is an input file and the SHA-256 of its bytes.
type FileDigest struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// Provenance records what a calibration read: every input file with its
// SHA-256, the profile, the cards it started from and servesim's
// version.
type Provenance struct {
	BenchFiles   []FileDigest `json:"bench_files"`
	HeldOutFiles []FileDigest `json:"holdout_files"`
	PowerLogs    []FileDigest `json:"power_logs"`
	Profile      string       `json:"profile"`
	// ProfileCSVSHA256 is the profile CSV's digest (the embedded one's
	// for the embedded profile).
	ProfileCSVSHA256 string `json:"profile_csv_sha256"`
	// StartingGPU is the card the fit started from, as given.
	StartingGPU string `json:"starting_gpu"`
	// Seeds are the arrival draws a finite-rate run was replayed with.
	Seeds           []uint64 `json:"seeds"`
	ServesimVersion string   `json:"servesim_version"`
}

// Document is the calibration's result document: the report and its
// provenance.
type Document struct {
	Report
	Provenance Provenance `json:"provenance"`
}

// Document is the report with its provenance, as written.
func (r *Report) Document(p Provenance) Document { return Document{Report: *r, Provenance: p} }

// CalibratedSuffix ends the name of a calibrated card.
const CalibratedSuffix = "-calibrated"

// CalibratedName is the name of a card fitted from the card name: name
// with CalibratedSuffix, or name itself when it already ends so (a
// calibrated card calibrated again).
func CalibratedName(name string) string {
	if strings.HasSuffix(name, CalibratedSuffix) {
		return name
	}
	return name + CalibratedSuffix
}

// Calibrate reads the inputs' files (ReadRun, ReadPowerLog), refuses runs
// of different models (OneModel), runs the Study and names the fitted card
// CalibratedName of the starting one. Its errors name the file or the
// parameter at fault.
func (in Inputs) Calibrate() (*Report, Provenance, error) {
	prov := Provenance{Profile: in.ProfilePath, ProfileCSVSHA256: in.Setup.Profile.ProfileCSVSHA256,
		StartingGPU: in.Setup.GPU.Name, Seeds: in.Setup.Seeds, ServesimVersion: in.Version}
	runs, digests, err := readRuns(in.Bench)
	if err != nil {
		return nil, prov, err
	}
	prov.BenchFiles = digests
	heldOut, digests, err := readRuns(in.HeldOut)
	if err != nil {
		return nil, prov, err
	}
	prov.HeldOutFiles = digests
	if err := OneModel(append(append([]*Run(nil), runs...), heldOut...)); err != nil {
		return nil, prov, err
	}
	var logs []*PowerLog
	for _, path := range in.PowerLogs {
		log, err := ReadPowerLog(path)
		if err != nil {
			return nil, prov, err
		}
		sum, err := digest(path)
		if err != nil {
			return nil, prov, &PowerLogError{File: path, Reason: err.Error()}
		}
		logs = append(logs, log)
		prov.PowerLogs = append(prov.PowerLogs, FileDigest{File: path, SHA256: sum})
	}
	study := &Study{Runs: runs, HeldOut: heldOut, PowerLogs: logs, Setup: in.Setup, Free: in.Free}
	rep, err := study.Calibrate()
	if err != nil {
		return nil, prov, err
	}
	rep.GPU.Name = CalibratedName(rep.GPU.Name)
	return rep, prov, nil
}

// readRuns reads the bench files at paths with their digests.
func readRuns(paths []string) ([]*Run, []FileDigest, error) {
	var runs []*Run
	var digests []FileDigest
	for _, path := range paths {
		run, err := ReadRun(path)
		if err != nil {
			return nil, nil, err
		}
		sum, err := digest(path)
		if err != nil {
			return nil, nil, fmt.Errorf("bench file %s: %v", path, err)
		}
		runs = append(runs, run)
		digests = append(digests, FileDigest{File: path, SHA256: sum})
	}
	return runs, digests, nil
}

// digest is the SHA-256 hex of the file at path.
func digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s", limits.OneLine(err.Error()))
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s", limits.OneLine(err.Error()))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// OneModel refuses runs of different models (their model_id; a run
// without one matches any): a card is fitted to one model's runs.
func OneModel(runs []*Run) error {
	first := -1
	for i, r := range runs {
		if r.ModelID == "" {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if r.ModelID != runs[first].ModelID {
			return fmt.Errorf("bench file %s: model_id %s: the other runs are of %s: calibrate one model at a time",
				r.File, limits.Quote(r.ModelID), limits.Quote(runs[first].ModelID))
		}
	}
	return nil
}

// GPUCard is the fitted card as a GPU card file (the JSON names of
// cards.GPU), which cards.LoadGPU reads back.
func (r *Report) GPUCard() ([]byte, error) {
	chunks, err := jsonout.Chunks(r.GPU)
	if err != nil {
		return nil, err
	}
	return bytes.Join(chunks, nil), nil
}

// profileColumns are the columns of a written profile CSV, those of the
// embedded proxy.
var profileColumns = []string{"clock_mhz", "prefill_tokens_per_s", "decode_tokens_per_s", "idle_power_w", "prefill_power_w", "decode_power_w"}

// manifest is a written profile's manifest, in the key order of the
// embedded proxy's.
type manifest struct {
	Status        string  `json:"profile_status"`
	SourceLabel   string  `json:"source_label"`
	BaselineTTFTS float64 `json:"baseline_ttft_s"`
	BaselineTPOTS float64 `json:"baseline_tpot_s"`
}

// ProfileFiles are the setup's profile with the fitted powers (Profile)
// as the files profile.Load reads: the CSV, in the embedded proxy's
// columns, and its manifest (profile_status, source_label and the
// baselines of the fitted card's lone request on the setup's engine,
// plant.ServiceModel.Baseline). A profile without fitted powers is an
// error.
func (r *Report) ProfileFiles(setup *Setup) (csvData, manifestData []byte, err error) {
	if len(r.Power) == 0 {
		return nil, nil, fmt.Errorf("calibrate: no power was fitted: expected power logs")
	}
	p, err := r.Profile(setup)
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	if err := w.Write(profileColumns); err != nil {
		return nil, nil, err
	}
	for i := range p.ClockMHz {
		row := []string{num(p.ClockMHz[i]), num(p.PrefillTokensPerS[i]), num(p.DecodeTokensPerS[i]),
			num(p.IdlePowerW[i]), num(p.PrefillPowerW[i]), num(p.DecodePowerW[i])}
		if err := w.Write(row); err != nil {
			return nil, nil, err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, nil, err
	}
	chunks, err := jsonout.Chunks(manifest{Status: p.Status, SourceLabel: p.SourceLabel, BaselineTTFTS: p.BaselineTTFTS, BaselineTPOTS: p.BaselineTPOTS})
	if err != nil {
		return nil, nil, err
	}
	return b.Bytes(), bytes.Join(chunks, nil), nil
}

// ProfileManifestPath is where the manifest of a profile CSV written to
// csvPath goes: the CSV's path with .json for its suffix, which
// profile.ManifestPath finds, unless a profile_manifest.json in that
// folder would shadow it: that is an error.
func ProfileManifestPath(csvPath string) (string, error) {
	shadow := filepath.Join(filepath.Dir(csvPath), "profile_manifest.json")
	if _, err := os.Stat(shadow); err == nil {
		return "", fmt.Errorf("%s: its folder holds %s, which profile loading would read as its manifest instead of the one written beside it: write the profile to another folder", csvPath, shadow)
	}
	return profile.ManifestPath(csvPath), nil
}
