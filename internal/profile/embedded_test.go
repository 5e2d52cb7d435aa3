package profile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultIsTheLabelledEngineeringProxy(t *testing.T) {
	p := Default()
	assert.Equal(t, StatusEngineeringProxy, p.Status)
	assert.False(t, p.IsMeasured())
	assert.Contains(t, p.SourceLabel, "not a measurement")
	assert.Equal(t, []float64{420, 690, 960, 1230, 1500, 1770, 2040}, p.ClockMHz)
	assert.Len(t, p.ProfileCSVSHA256, 64)
	assert.Len(t, p.ManifestSHA256, 64)
	assert.InDelta(t, 0.5, p.TTFTSLOSeconds(), 1e-15)
	assert.InDelta(t, 0.03, p.TPOTSLOSeconds(), 1e-15)
	// The top level exceeds the plant's default 64.8 W limit in prefill,
	// so the proxy power governor matters.
	assert.Greater(t, p.Power(PhasePrefill, p.MaxClockMHz()), 64.8)
	assert.Same(t, p, Default())
}

func TestParseEmbeddedRejectsBadTables(t *testing.T) {
	manifest := []byte(`{"profile_status":"engineering_proxy_not_measured","baseline_ttft_s":0.2,"baseline_tpot_s":0.01}`)
	header := "clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\n"
	tests := []struct {
		name, table, manifest, want string
	}{
		{"not a number", header + "300,x,1,1,1,1\n600,2,2,2,2,2\n", string(manifest), `line 2: prefill_tokens_per_s "x"`},
		{"short row", header + "300,1,1,1,1\n", string(manifest), "wrong number of fields"},
		{"one level", header + "300,1,1,1,1,1\n", string(manifest), "at least two"},
		{"bad manifest", header, "{", "embedded manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseEmbedded([]byte(tt.table), []byte(tt.manifest))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
