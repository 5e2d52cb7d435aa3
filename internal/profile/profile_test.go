package profile

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
)

// methodCases are the reference PerformanceProfile's answers
// (testdata/profile_methods.json, written by testdata/refgen/methods.py).
type methodCases struct {
	Points           []map[string]float64 `json:"points"`
	RealizedLevels   []float64            `json:"realized_levels"`
	RealizedForLevel []float64            `json:"realized_for_level"`
	MinRealized      float64              `json:"min_realized"`
	TTFTSLOSeconds   float64              `json:"ttft_slo_s"`
	TPOTSLOSeconds   float64              `json:"tpot_slo_s"`
	IsMeasured       bool                 `json:"is_measured"`
}

func TestProfileMethodsMatchReference(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "profile_methods.json"))
	require.NoError(t, err)
	var golden map[string]methodCases
	require.NoError(t, json.Unmarshal(data, &golden))
	root := sharedtest.Dir(t)
	dir := t.TempDir()
	variant := func(name string) string {
		for _, v := range bundleVariants {
			if v.name == name {
				return writeVariant(t, dir, v)
			}
		}
		t.Fatalf("no variant %s", name)
		return ""
	}
	paths := map[string]string{
		"reference_l4_synthetic": filepath.Join(root, "reference", "data", "l4_synthetic", "l4_profile.csv"),
		"l4_measured_aggregate":  filepath.Join(root, "data", "l4_measured_aggregate", "l4_profile.csv"),
		"synthetic_measured":     variant("valid_crlf"),
		"synthetic_raw_proxy":    variant("raw_schema_as_proxy"),
	}
	require.Len(t, golden, len(paths))
	compared := 0
	for name, want := range golden {
		t.Run(name, func(t *testing.T) {
			p, err := Load(paths[name])
			require.NoError(t, err)
			assert.Equal(t, want.IsMeasured, p.IsMeasured())
			assert.Equal(t, want.RealizedLevels, p.RealizedClockLevelsMHz())
			assert.Equal(t, want.MinRealized, p.MinRealizedClockMHz())
			assert.Equal(t, want.TTFTSLOSeconds, p.TTFTSLOSeconds())
			assert.Equal(t, want.TPOTSLOSeconds, p.TPOTSLOSeconds())
			for i, level := range p.ClockMHz {
				got, err := p.RealizedClockForLevel(level)
				require.NoError(t, err)
				assert.Equal(t, want.RealizedForLevel[i], got)
			}
			_, err = p.RealizedClockForLevel(p.ClockMHz[0] + 0.5)
			assert.Error(t, err, "an unsupported level has no realized clock")
			for _, pt := range want.Points {
				c := pt["clock"]
				for _, phase := range []Phase{PhasePrefill, PhaseDecode, PhaseIdle, PhaseInterleaved} {
					assert.Equal(t, pt["rate_"+string(phase)], p.Rate(phase, c), "rate(%s, %v)", phase, c)
					assert.Equal(t, pt["power_"+string(phase)], p.Power(phase, c), "power(%s, %v)", phase, c)
					compared += 2
				}
				assert.Equal(t, pt["quantize_down"], p.QuantizeClock(c, true), "quantize_clock(%v)", c)
				assert.Equal(t, pt["quantize_nearest"], p.QuantizeClock(c, false), "quantize_clock(%v, downward=False)", c)
				compared += 2
			}
		})
	}
	t.Logf("%d rate/power/quantize values equal the reference bit for bit", compared)
}

func validProfile() Profile {
	return Profile{
		ClockMHz:          []float64{900, 1500, 2040},
		PrefillTokensPerS: []float64{5200, 7400, 9100},
		DecodeTokensPerS:  []float64{28, 41, 52},
		IdlePowerW:        []float64{18, 20, 22},
		PrefillPowerW:     []float64{48, 62, 74},
		DecodePowerW:      []float64{40, 55, 66},
		BaselineTTFTS:     0.2,
		BaselineTPOTS:     0.02,
		Status:            StatusEngineeringProxy,
	}
}

func TestNewRejectsInvalidProfiles(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Profile)
		want string
	}{
		{"short column", func(p *Profile) { p.IdlePowerW = p.IdlePowerW[:2] }, "profile columns must have the same length, at least two"},
		{"one level", func(p *Profile) {
			for _, c := range []*[]float64{&p.ClockMHz, &p.PrefillTokensPerS, &p.DecodeTokensPerS, &p.IdlePowerW, &p.PrefillPowerW, &p.DecodePowerW} {
				*c = (*c)[:1]
			}
		}, "at least two"},
		{"NaN", func(p *Profile) { p.DecodePowerW[1] = math.NaN() }, "profile columns must be finite"},
		{"zero", func(p *Profile) { p.IdlePowerW[0] = 0 }, "profile values must be positive"},
		{"clocks not increasing", func(p *Profile) { p.ClockMHz[2] = 1500 }, "clock levels must be strictly increasing"},
		{"prefill not increasing", func(p *Profile) { p.PrefillTokensPerS[2] = 7000 }, "prefill service rate must increase strictly with clock"},
		{"decode not increasing", func(p *Profile) { p.DecodeTokensPerS[1] = 28 }, "decode service rate must increase strictly with clock"},
		{"baseline", func(p *Profile) { p.BaselineTPOTS = 0 }, "baseline latency values must be positive"},
		{"realized misaligned", func(p *Profile) { p.RealizedClockMHz = []float64{880, 1480} }, "realized clock medians must be finite, positive, and aligned"},
		{"realized not increasing", func(p *Profile) { p.RealizedClockMHz = []float64{880, 1480, 1480} }, "realized clock medians must be strictly increasing"},
		{"measured without bundle", func(p *Profile) { p.Status = StatusMeasuredL4 }, "a measured_l4 profile must pass complete bundle validation"},
		{"measured without medians", func(p *Profile) { p.Status, p.MeasurementValid = StatusMeasuredL4, true }, "must carry realized-clock medians"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validProfile()
			tt.edit(&p)
			_, err := New(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	p, err := New(validProfile())
	require.NoError(t, err)
	assert.Equal(t, p.ClockMHz, p.RealizedClockLevelsMHz(), "identity for an unvalidated profile")
	assert.False(t, p.IsMeasured())
}

func TestManifestPath(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ csv, want string }{
		{"l4_profile.csv", "l4_profile.json"},
		{"a.tar.csv", "a.tar.json"},
		{"noext", "noext.json"},
		{".csv", ".csv.json"},
		{"a.", "a..json"},
	}
	for _, tt := range tests {
		assert.Equal(t, filepath.Join(dir, tt.want), ManifestPath(filepath.Join(dir, tt.csv)), tt.csv)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profile_manifest.json"), []byte("{}"), 0o644))
	assert.Equal(t, filepath.Join(dir, "profile_manifest.json"), ManifestPath(filepath.Join(dir, "x.csv")))
}

func TestLoadReportsFileLineAndField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.csv")
	require.NoError(t, os.WriteFile(path, []byte("clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\n900,5200,28,18,48,40\n1500,7400,41,20\n"), 0o644))
	_, err := Load(path)
	require.Error(t, err)
	assert.Equal(t, "profile "+path+": p.csv line 3: prefill_power_w: missing field (float() argument must be a string or a real number, not 'NoneType')", err.Error())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.json"), []byte(`{"profile_status": "measured_l4", "x": [1,}`), 0o644))
	r := Validate(path)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "manifest "+filepath.Join(dir, "p.json")+": expecting value: line 1 column 43 (char 42)")
	assert.Equal(t, CheckNotRun, r.Checks[len(r.Checks)-1].Status, "nothing is judged on an unreadable manifest")
}

func TestValidateReportsEveryBadField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.csv")
	require.NoError(t, os.WriteFile(path, []byte("clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\r\n900,5200,x,18,48,40\r\n1500,7400,41,20,62,-\r\n"), 0o644))
	r := Validate(path)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "p.csv line 2: decode_tokens_per_s: could not convert string to float: 'x'")
	var detail string
	for _, c := range r.Checks {
		if c.Name == "profile_table" {
			detail = c.Detail
		}
	}
	assert.Contains(t, detail, "line 2: decode_tokens_per_s")
	assert.Contains(t, detail, "line 3: decode_power_w: could not convert string to float: '-'")
}
