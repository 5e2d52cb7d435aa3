package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileTableCheckCountsTheLevelsRead validates profile tables of one,
// two and four clock levels: the profile_table check names how many levels
// it read, the table's rows, not the zero of a table not yet read.
func TestProfileTableCheckCountsTheLevelsRead(t *testing.T) {
	const header = "clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\n"
	rows := []string{"900,5200,28,18,48,40\n", "1200,6300,35,19,55,45\n", "1500,7400,41,20,62,50\n", "1800,8200,46,21,70,56\n"}
	for _, tc := range []struct {
		levels int
		detail string
	}{
		{1, "1 clock level"},
		{2, "2 clock levels"},
		{4, "4 clock levels"},
	} {
		t.Run(tc.detail, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.csv")
			require.NoError(t, os.WriteFile(path, []byte(header+strings.Join(rows[:tc.levels], "")), 0o644))
			r := Validate(path)
			var table *Check
			for i := range r.Checks {
				if r.Checks[i].Name == "profile_table" {
					table = &r.Checks[i]
				}
			}
			require.NotNil(t, table, "checks: %v", r.Checks)
			assert.Equal(t, CheckOK, table.Status)
			assert.Equal(t, tc.detail, table.Detail)
		})
	}
}
