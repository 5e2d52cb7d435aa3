package profile

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// aggregateColumns are the columns of an aggregate profile table.
var aggregateColumns = []string{
	"clock_mhz", "prefill_tokens_per_s", "decode_tokens_per_s",
	"idle_power_w", "prefill_power_w", "decode_power_w",
}

// ManifestPath returns where the manifest of a profile CSV is looked for:
// profile_manifest.json beside it if that exists, else <csv stem>.json.
func ManifestPath(profilePath string) string {
	candidate := filepath.Join(filepath.Dir(profilePath), "profile_manifest.json")
	if _, err := os.Stat(candidate); err == nil {
		return candidate
	}
	return strings.TrimSuffix(profilePath, filepath.Ext(profilePath)) + ".json"
}

// Load reads the profile CSV at path and its manifest.
//
// TODO(issue 3): raw profiler schema aggregation and measured bundle validation.
func Load(path string) (*Profile, error) {
	header, rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	manifestPath := ManifestPath(path)
	manifest := map[string]any{}
	manifestSHA := ""
	if data, err := os.ReadFile(manifestPath); err == nil {
		if err := json.Unmarshal(data, &manifest); err != nil {
			return nil, fmt.Errorf("profile manifest %s: %w", manifestPath, err)
		}
		manifestSHA = sha256Hex(data)
	}
	status := "unknown"
	if s, ok := manifest["profile_status"]; ok {
		status = fmt.Sprint(s)
	}
	if status == StatusMeasuredL4 {
		return nil, errors.New("measured_l4 bundle validation is not implemented yet")
	}
	p := Profile{
		BaselineTTFTS:  DefaultBaselineTTFTS,
		BaselineTPOTS:  DefaultBaselineTPOTS,
		Status:         status,
		SourceLabel:    "unspecified profile",
		Manifest:       manifest,
		ManifestSHA256: manifestSHA,
	}
	if v, ok := manifest["baseline_ttft_s"].(float64); ok {
		p.BaselineTTFTS = v
	}
	if v, ok := manifest["baseline_tpot_s"].(float64); ok {
		p.BaselineTPOTS = v
	}
	if v, ok := manifest["source_label"]; ok {
		p.SourceLabel = fmt.Sprint(v)
	}
	index := map[string]int{}
	for i, name := range header {
		index[name] = i
	}
	columns := []*[]float64{&p.ClockMHz, &p.PrefillTokensPerS, &p.DecodeTokensPerS, &p.IdlePowerW, &p.PrefillPowerW, &p.DecodePowerW}
	for c, name := range aggregateColumns {
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("profile %s: missing column %s", path, name)
		}
		for r, row := range rows {
			v, err := strconv.ParseFloat(strings.TrimSpace(row[i]), 64)
			if err != nil {
				return nil, fmt.Errorf("profile %s line %d: %s %q: expected a number", path, r+2, name, row[i])
			}
			*columns[c] = append(*columns[c], v)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p.ProfileCSVSHA256 = sha256Hex(data)
	out, err := New(p)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return out, nil
}

func readCSV(path string) ([]string, [][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("empty service profile: %s", path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("profile %s: %w", path, err)
	}
	rows, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("empty service profile: %s", path)
	}
	return header, rows, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
