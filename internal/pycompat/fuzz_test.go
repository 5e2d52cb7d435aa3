package pycompat

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadTable feeds arbitrary bytes to the CSV reader: no input may
// panic, a parsed table must be consistent, and counting its rows must
// agree with keeping them.
func FuzzReadTable(f *testing.F) {
	f.Add([]byte("clock_mhz,prefill_tokens_per_s,decode_tokens_per_s,idle_power_w,prefill_power_w,decode_power_w\r\n900,5200,28,18,48,40\r\n1500,7400,41,20,62,55\r\n"))
	f.Add([]byte("a,b\n\"x,\"\"y\"\"\",2\n\"open\n"))
	f.Add([]byte("\ufeffa,a\r1\x00,2,3\r\n\r\n"))
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,\"12\"3,7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := ReadTable("fuzz.csv", data, false)
		if err != nil {
			return
		}
		if table.RowCount != len(table.Rows) || len(table.Rows) != len(table.RowLines) {
			t.Fatalf("inconsistent table: %d rows counted, %d kept, %d lines", table.RowCount, len(table.Rows), len(table.RowLines))
		}
		counted, err := ReadTable("fuzz.csv", data, true)
		if err != nil || counted.RowCount != table.RowCount {
			t.Fatalf("counting mode disagrees: %v", err)
		}
	})
}

// FuzzJSON feeds arbitrary bytes to the json.loads-compatible parser: no
// input may panic it or the functions on what it decodes, and every
// document Go's encoding/json accepts must parse.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"a": NaN, "b": [1, -Infinity, {"c": 1e400}], "sha256": {"../x": 1}}`))
	f.Add([]byte(`{"gpu": {"name": ["nvidia l4"]}, "conditions": [{"phase": 1, "prompt_tokens": "1_2"}], "row_count": 1e300}`))
	f.Add([]byte(`{"k": "\ud800", "k": [true, false, null, 12345678901234567890123]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON(data)
		if err != nil {
			if json.Valid(data) && utf8.Valid(data) && !strings.HasPrefix(string(data), "\ufeff") && strings.Count(string(data), "[")+strings.Count(string(data), "{") < MaxJSONDepth {
				t.Fatalf("encoding/json accepts what we reject: %v", err)
			}
			return
		}
		_ = ReprOf(v)
		_ = Str(v)
		_ = Plain(v)
		_, _ = FloatOf(v)
		_, _ = IntOfValue(v)
		_, _ = Tuple(v)
	})
}

// FuzzNumbers checks Python's float() and int() ports against Go's
// parsers on the inputs both define: no panic, and the same value.
func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"1", " 1_000 ", "1e3", "-0.5", "inf", "+nan", "٣", "\u00a07\u2000", "1__0", "0x10", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fv, ferr := Float(s)
		iv, ierr := Int(s)
		if ierr == nil {
			want, err := iv.Float()
			if ferr != nil || (err == nil && want != fv) {
				t.Fatalf("int(%q) = %s but float() = %v, %v", s, iv, fv, ferr)
			}
		}
		plain := strings.TrimSpace(s)
		if plain == "" || strings.ContainsAny(plain, "_xXpP") || !utf8.ValidString(s) {
			return
		}
		if want, err := strconv.ParseFloat(plain, 64); err == nil && ferr == nil && want != fv && !(want != want && fv != fv) {
			t.Fatalf("float(%q) = %v, strconv says %v", s, fv, want)
		}
	})
}
