package profile

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// The embedded engineering-proxy profile: numbers chosen by the servesim
// authors for an L4-class board (72 W, clocks up to 2040 MHz), never
// measured. Prefill throughput saturates with clock as compute-bound work
// meets the memory roof; decode (memory-bound) gains less; power rises
// roughly linearly with clock from an idle floor. The top levels draw more
// than the plant's default 64.8 W limit in prefill and decode, so the proxy
// power governor of the plant is exercised.
var (
	//go:embed embedded_proxy.csv
	embeddedProxyCSV []byte
	//go:embed embedded_proxy.json
	embeddedProxyManifest []byte
)

// EmbeddedPath is the name servesim gives the embedded profile in
// provenance records.
const EmbeddedPath = "(embedded engineering proxy)"

var defaultProfile = sync.OnceValues(func() (*Profile, error) {
	return parseEmbedded(embeddedProxyCSV, embeddedProxyManifest)
})

// Default returns the embedded engineering-proxy profile (status
// engineering_proxy_not_measured). Callers must not modify it.
func Default() *Profile {
	p, err := defaultProfile()
	if err != nil {
		panic("embedded profile is invalid: " + err.Error()) // a build defect, caught by its test
	}
	return p
}

// parseEmbedded reads an aggregate profile table and its manifest from
// memory.
func parseEmbedded(table, manifestJSON []byte) (*Profile, error) {
	var manifest map[string]any
	if err := json.Unmarshal(manifestJSON, &manifest); err != nil {
		return nil, fmt.Errorf("embedded manifest: %w", err)
	}
	records, err := csv.NewReader(bytes.NewReader(table)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("embedded profile: %w", err)
	}
	p := Profile{
		Status:           fmt.Sprint(manifest["profile_status"]),
		SourceLabel:      fmt.Sprint(manifest["source_label"]),
		Manifest:         manifest,
		ProfileCSVSHA256: sha256Hex(table),
		ManifestSHA256:   sha256Hex(manifestJSON),
	}
	p.BaselineTTFTS, _ = manifest["baseline_ttft_s"].(float64)
	p.BaselineTPOTS, _ = manifest["baseline_tpot_s"].(float64)
	columns := []*[]float64{&p.ClockMHz, &p.PrefillTokensPerS, &p.DecodeTokensPerS, &p.IdlePowerW, &p.PrefillPowerW, &p.DecodePowerW}
	for r, row := range records[1:] {
		if len(row) != len(columns) {
			return nil, fmt.Errorf("embedded profile line %d: expected %d fields", r+2, len(columns))
		}
		for c, text := range row {
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, fmt.Errorf("embedded profile line %d: %s %q: expected a number", r+2, records[0][c], text)
			}
			*columns[c] = append(*columns[c], v)
		}
	}
	return New(p)
}
