package pycompat

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pythonCases are Python 3.11's float(), int(), csv.DictReader and
// json.loads results on tricky inputs (testdata/python_syntax.json, written
// by a script that ran them through the reference interpreter).
type pythonCases struct {
	Float map[string]string `json:"float"`
	Int   map[string]string `json:"int"`
	CSV   []struct {
		Doc        string    `json:"doc"`
		FieldNames *[]string `json:"fieldnames"`
		Rows       [][][]any `json:"rows"`
		Error      string    `json:"error"`
	} `json:"csv"`
	JSON []struct {
		Doc   string `json:"doc"`
		Value any    `json:"value"`
		Error string `json:"error"`
	} `json:"json"`
}

func loadPythonCases(t *testing.T) pythonCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "python_syntax.json"))
	require.NoError(t, err)
	var cases pythonCases
	require.NoError(t, json.Unmarshal(data, &cases))
	return cases
}

// pyNum renders a float as the case file does.
func pyNum(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return FloatRepr(f)
}

func TestPyFloatAndIntMatchPython(t *testing.T) {
	cases := loadPythonCases(t)
	require.NotEmpty(t, cases.Float)
	for in, want := range cases.Float {
		got := "ERR"
		if v, err := Float(in); err == nil {
			got = pyNum(v)
		}
		assert.Equal(t, want, got, "float(%q)", in)
	}
	for in, want := range cases.Int {
		got := "ERR"
		if v, err := Int(in); err == nil {
			got = v.String()
		}
		assert.Equal(t, want, got, "int(%q)", in)
	}
}

func TestCSVTableMatchesDictReader(t *testing.T) {
	cases := loadPythonCases(t)
	require.NotEmpty(t, cases.CSV)
	for _, c := range cases.CSV {
		table, err := ReadTable("case.csv", []byte(c.Doc), false)
		if c.Error != "" {
			assert.Error(t, err, "%q", c.Doc)
			continue
		}
		require.NoError(t, err, "%q", c.Doc)
		if c.FieldNames == nil {
			assert.False(t, table.HasHeader, "%q", c.Doc)
		} else {
			assert.Equal(t, *c.FieldNames, append([]string{}, table.Header...), "%q", c.Doc)
		}
		var rows [][][]any
		for _, row := range table.Rows {
			var items [][]any
			for _, k := range table.Keys(row) {
				if k == nil {
					var extra []any
					for _, f := range row[len(table.Header):] {
						extra = append(extra, f)
					}
					items = append(items, []any{nil, extra})
					continue
				}
				var v any
				if s, ok := table.Value(row, *k); ok {
					v = s
				}
				items = append(items, []any{*k, v})
			}
			rows = append(rows, items)
		}
		if len(c.Rows) == 0 {
			assert.Empty(t, rows, "%q", c.Doc)
		} else {
			assert.Equal(t, c.Rows, rows, "%q", c.Doc)
		}
	}
}

// encodeCase renders a decoded value as the case file does.
func encodeCase(v any) any {
	switch x := v.(type) {
	case nil:
		return []any{"null"}
	case bool:
		return []any{"bool", x}
	case JSONInt:
		return []any{"int", string(x)}
	case float64:
		return []any{"float", pyNum(x)}
	case string:
		return []any{"str", x}
	case []any:
		items := []any{}
		for _, e := range x {
			items = append(items, encodeCase(e))
		}
		return []any{"list", items}
	case *Object:
		items := []any{}
		for _, k := range x.Keys {
			items = append(items, []any{k, encodeCase(x.Values[k])})
		}
		return []any{"dict", items}
	}
	panic("unexpected value")
}

func TestPyJSONMatchesJSONLoads(t *testing.T) {
	cases := loadPythonCases(t)
	require.NotEmpty(t, cases.JSON)
	for _, c := range cases.JSON {
		v, err := ParseJSON([]byte(c.Doc))
		if c.Error != "" {
			assert.Error(t, err, "json.loads(%q) raised %s", c.Doc, c.Error)
			continue
		}
		require.NoError(t, err, "%q", c.Doc)
		got, _ := json.Marshal(encodeCase(v))
		want, _ := json.Marshal(c.Value)
		assert.JSONEq(t, string(want), string(got), "%q", c.Doc)
	}
}

func TestPythonFormatting(t *testing.T) {
	tests := []struct {
		x       float64
		g, repr string
	}{
		{1200, "1200", "1200.0"},
		{1e6, "1e+06", "1000000.0"},
		{1234567, "1.23457e+06", "1234567.0"},
		{1200.5, "1200.5", "1200.5"},
		{0.0001, "0.0001", "0.0001"},
		{1e-5, "1e-05", "1e-05"},
		{1e16, "1e+16", "1e+16"},
		{math.NaN(), "nan", "nan"},
		{math.Inf(-1), "-inf", "-inf"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.g, FormatG(tt.x), "format(%v, 'g')", tt.x)
		assert.Equal(t, tt.repr, FloatRepr(tt.x), "repr(%v)", tt.x)
	}
	assert.Equal(t, `'a\'b"'`, Repr(`a'b"`))
	assert.Equal(t, `"a'b"`, Repr(`a'b`))
	assert.Equal(t, `'\t\x00é\x85'`, Repr("\t\x00é\u0085"))
	assert.Equal(t, "['NVIDIA L4', 1, 2.5, True, None, {'k': 'v'}]", ReprOf([]any{"NVIDIA L4", JSONInt("1"), 2.5, true, nil, &Object{Keys: []string{"k"}, Values: map[string]any{"k": "v"}}}))
}

func TestPyIntegerArithmetic(t *testing.T) {
	big, err := Int("99999999999999999999")
	require.NoError(t, err)
	assert.True(t, big.Positive())
	assert.Equal(t, "99999999999999999999", big.String())
	assert.Equal(t, "9999999999999999999800000000000000000001", Mul(big, big).String())
	assert.Equal(t, IntOf(12), Mul(IntOf(3), IntOf(4)))
	assert.Equal(t, "85070591730234615847396907784232501249", Mul(IntOf(math.MaxInt64), IntOf(math.MaxInt64)).String())
	f, err := big.Float()
	require.NoError(t, err)
	assert.Equal(t, 1e20, f)
	n, err := IntFromFloat(-7.9)
	require.NoError(t, err)
	assert.Equal(t, IntOf(-7), n)
	_, err = IntFromFloat(math.NaN())
	assert.Error(t, err)
	assert.True(t, EqualsInt(true, 1))
	assert.True(t, EqualsInt(5.0, 5))
	assert.False(t, EqualsInt("5", 5))
}

func TestNumberErrorsQuoteAtMost80Characters(t *testing.T) {
	_, err := Float("x")
	require.EqualError(t, err, "could not convert string to float: 'x'")
	long := strings.Repeat("é", 200)
	_, err = Float(long)
	require.EqualError(t, err, "could not convert string to float: '"+strings.Repeat("é", 80)+"'... (400 bytes)")
	_, err = Int(long)
	require.EqualError(t, err, "invalid literal for int() with base 10: '"+strings.Repeat("é", 80)+"'... (400 bytes)")
}
