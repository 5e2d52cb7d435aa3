package workload

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fromISOFormatCases are the forms Python 3.11's datetime.fromisoformat
// accepts and rejects (testdata/fromisoformat_cases.json, printed by
// /usr/bin/python3): UnixMicros is nil for a rejected one.
func fromISOFormatCases(t testing.TB) []struct {
	Text       string `json:"text"`
	UnixMicros *int64 `json:"unix_micros"`
	HasZone    bool   `json:"has_zone"`
} {
	data, err := os.ReadFile(filepath.Join("testdata", "fromisoformat_cases.json"))
	require.NoError(t, err)
	var cases []struct {
		Text       string `json:"text"`
		UnixMicros *int64 `json:"unix_micros"`
		HasZone    bool   `json:"has_zone"`
	}
	require.NoError(t, json.Unmarshal(data, &cases))
	require.NotEmpty(t, cases)
	return cases
}

// TestParseISOMicrosMatchesPython: the microseconds of every form Python
// accepts, an error for every form it rejects, by the fast path or not.
func TestParseISOMicrosMatchesPython(t *testing.T) {
	fast := 0
	for _, c := range fromISOFormatCases(t) {
		if _, _, ok := isoMicrosFast(c.Text); ok {
			fast++
		}
		got, hasZone, err := ParseISOMicros(c.Text)
		if c.UnixMicros == nil {
			assert.Errorf(t, err, "%q is rejected by Python, accepted as %v", c.Text, got)
			continue
		}
		if assert.NoErrorf(t, err, "%q", c.Text) {
			assert.Equalf(t, *c.UnixMicros, got, "%q", c.Text)
			assert.Equalf(t, c.HasZone, hasZone, "%q", c.Text)
		}
	}
	assert.Positive(t, fast, "cases read by the fast path")
}

// TestISOMicrosFastReadsTheTraceForms: the Azure 2023 and 2024 spellings
// take the fast path.
func TestISOMicrosFastReadsTheTraceForms(t *testing.T) {
	for text, want := range map[string]int64{
		"2023-11-16 18:17:03.9799600":      1700158623979960,
		"2024-05-10 00:00:00.009930+00:00": 1715299200009930,
		"2024-05-10 00:00:00.5-07:30":      1715299200500000 + 27_000_000_000,
		"2024-02-29T23:59:59":              1709251199000000,
		"1969-12-31 23:59:59.999999":       -1,
		"0001-01-01 00:00:00":              -62135596800000000,
	} {
		got, _, ok := isoMicrosFast(text)
		assert.True(t, ok, text)
		assert.Equal(t, want, got, text)
	}
}

// FuzzParseISOMicros checks the fast path against ParseISOTimestamp: same
// microseconds, same offset flag, and an error exactly when it errs.
func FuzzParseISOMicros(f *testing.F) {
	for _, c := range fromISOFormatCases(f) {
		f.Add(c.Text)
	}
	for _, s := range []string{"2024-05-10 00:00:00.009930+00:00", "2024-05-10 23:59:59,1234567-23:59", "2024-02-30 00:00:00", "2024-05-10\xff00:00:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		us, hasZone, err := ParseISOMicros(s)
		ref, refZone, refErr := parseISOTimestamp(s)
		if refErr != nil {
			require.Errorf(t, err, "%q: accepted as %d, the general path rejects it: %v", s, us, refErr)
			return
		}
		require.NoErrorf(t, err, "%q", s)
		require.Equalf(t, ref.UnixMicro(), us, "%q", s)
		require.Equalf(t, refZone, hasZone, "%q", s)
	})
}
