package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// encodingJSON is what encoding/json writes for v, indented by two spaces,
// HTML left as is: servesim's encoder must agree on every value it can write.
func encodingJSON(t *testing.T, v any, indent bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestEncoderAgreesWithEncodingJSON(t *testing.T) {
	type leaf struct {
		F  float64 `json:"f"`
		S  string  `json:"s,omitempty"`
		NS []int   `json:"ns"`
	}
	type Embedded struct {
		E int `json:"e"`
	}
	type doc struct {
		Embedded
		Name   string             `json:"name"`
		Leaves []leaf             `json:"leaves"`
		Empty  []leaf             `json:"empty"`
		Map    map[string]float64 `json:"map"`
		Ptr    *leaf              `json:"ptr"`
		Any    any                `json:"any"`
		Hidden int                `json:"-"`
	}
	r := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "plain", "quote\" back\\slash", "tab\tnew\nline\r", "<html & more>", "ünïcødé ✓", "\x01\x1f", "\u2028\u2029", "bad\xffutf8"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e21, 123456789.123, 5e-324, math.MaxFloat64, 0.1}
	for trial := range 200 {
		d := doc{Embedded: Embedded{E: trial}, Name: strs[r.IntN(len(strs))], Map: map[string]float64{}, Empty: []leaf{}, Leaves: []leaf{}}
		for range r.IntN(4) {
			d.Leaves = append(d.Leaves, leaf{F: floats[r.IntN(len(floats))] * r.Float64(), S: strs[r.IntN(len(strs))], NS: []int{r.IntN(100), -r.IntN(100)}})
		}
		for range r.IntN(3) {
			d.Map[strs[r.IntN(len(strs))]] = floats[r.IntN(len(floats))]
		}
		if r.IntN(2) == 0 {
			d.Ptr = &leaf{F: 2, NS: []int{}}
		}
		d.Any = map[string]any{"k": []any{1.5, "x", nil, true}}
		want := encodingJSON(t, d, false)
		got, err := appendJSONLine(nil, d)
		require.NoError(t, err)
		assert.Equal(t, want+"\n", string(got), "trial %d compact", trial)

		// The indented layout differs from json.Indent's (see
		// TestIndentedLayout); its content must not.
		indented, err := appendJSON(nil, d)
		require.NoError(t, err)
		var compacted bytes.Buffer
		require.NoError(t, json.Compact(&compacted, indented), "trial %d", trial)
		assert.Equal(t, want, compacted.String(), "trial %d indented", trial)
	}
}

func TestIndentedLayout(t *testing.T) {
	type record struct {
		ID   int      `json:"id"`
		T    float64  `json:"t"`
		Note string   `json:"note,omitempty"`
		Opt  *float64 `json:"opt"`
	}
	type nested struct {
		Name  string    `json:"name"`
		Items []float64 `json:"items"`
	}
	one := 1.0
	doc := orderedObject{
		{"record", record{ID: 1, T: 0.5}},
		{"records", []record{{ID: 1, T: 0.5, Note: "a"}, {ID: 2, T: math.NaN(), Opt: &one}}},
		{"series", []float64{0.1, 2, math.Inf(1)}},
		{"pointers", []*float64{nil, &one}},
		{"matrix", [][]int{{1, 2}, {}, {3}}},
		{"nested", []nested{{Name: "n", Items: []float64{1}}}},
		{"rows", []orderedObject{{{"k", 1}, {"v", "x"}}}},
		{"mixed", []any{1, "s", nil}},
		{"objects", []any{map[string]any{"a": 1}, map[string]any{"b": []int{1}}}},
		{"empty", []int{}},
		{"none", orderedObject{}},
	}
	got, err := appendJSON(nil, doc)
	require.NoError(t, err)
	want := `{
  "record": {
    "id": 1,
    "t": 0.5,
    "opt": null
  },
  "records": [
    {"id": 1, "t": 0.5, "note": "a", "opt": null},
    {"id": 2, "t": null, "opt": 1}
  ],
  "series": [0.1, 2, null],
  "pointers": [null, 1],
  "matrix": [
    [1, 2],
    [],
    [3]
  ],
  "nested": [
    {
      "name": "n",
      "items": [1]
    }
  ],
  "rows": [
    {"k": 1, "v": "x"}
  ],
  "mixed": [1, "s", null],
  "objects": [
    {"a": 1},
    {
      "b": [1]
    }
  ],
  "empty": [],
  "none": {}
}`
	assert.Equal(t, want, string(got))
}

func TestEncoderWritesUndefinedNumbersAsNull(t *testing.T) {
	records := plant.RequestRecords{
		{RequestID: 0, FirstTokenTimeS: 2.600000000000001, CompletionTimeS: 2.8, PromptTokens: 4808, OutputTokens: 10},
		{RequestID: 1, ArrivalTimeS: 1e-7, PrefillStartS: math.NaN(), FirstTokenTimeS: math.NaN(), CompletionTimeS: math.Inf(1), PromptTokens: 1, OutputTokens: 2},
	}
	got, err := appendJSONLine(nil, records)
	require.NoError(t, err)
	assert.Equal(t, `[{"request_id":0,"arrival_time_s":0,"prefill_start_s":0,"first_token_time_s":2.600000000000001,"completion_time_s":2.8,"prompt_tokens":4808,"output_tokens":10},`+
		`{"request_id":1,"arrival_time_s":1e-7,"prefill_start_s":null,"first_token_time_s":null,"completion_time_s":null,"prompt_tokens":1,"output_tokens":2}]`+"\n", string(got))
	ordered, err := appendJSON(nil, orderedObject{{"z", 1}, {"a", math.NaN()}, {"m", orderedObject{}}})
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"z\": 1,\n  \"a\": null,\n  \"m\": {}\n}", string(ordered))
}

func TestChunkedAndStreamedEncodingEqualOneBuffer(t *testing.T) {
	type row struct {
		ID    int       `json:"id"`
		Times []float64 `json:"times"`
		Name  string    `json:"name"`
	}
	rows := make([]row, 20000)
	for i := range rows {
		rows[i] = row{ID: i, Times: []float64{float64(i) / 7, math.NaN(), 1e-9 * float64(i)}, Name: strings.Repeat("x", i%13)}
	}
	doc := struct {
		Rows []row `json:"rows"`
		Tail []int `json:"tail"`
	}{rows, []int{1, 2, 3}}
	whole, err := appendJSON(nil, doc)
	require.NoError(t, err)

	chunks, err := encodeJSONChunks(doc)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 3, "a large document spans several chunks")
	assert.Equal(t, string(whole)+"\n", string(bytes.Join(chunks, nil)))

	var streamed countingWriter
	require.NoError(t, streamJSON(&streamed, doc))
	assert.Equal(t, string(whole)+"\n", streamed.String())
	assert.Greater(t, streamed.writes, 3, "a large document is written as it is encoded")
	assert.LessOrEqual(t, streamed.largest, spillBytes+spillBytes/4, "no write is larger than a chunk")
}

// countingWriter records what is written and how.
type countingWriter struct {
	bytes.Buffer
	writes, largest int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(p))
	return w.Buffer.Write(p)
}

// failingWriter accepts limit bytes, then fails every write.
type failingWriter struct{ limit int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		return 0, errors.New("disk full")
	}
	w.limit -= len(p)
	return len(p), nil
}

func TestStreamJSONReportsTheFirstWriteError(t *testing.T) {
	doc := make([]float64, 100000)
	err := streamJSON(&failingWriter{limit: spillBytes}, doc)
	require.EqualError(t, err, "disk full")
}

type jsonMarshalerValue struct{}

func (jsonMarshalerValue) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

type jsonMarshalerPointer struct{}

func (*jsonMarshalerPointer) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

type textMarshalerValue struct{}

func (textMarshalerValue) MarshalText() ([]byte, error) { return []byte("x"), nil }

// recursiveNode refers to itself.
type recursiveNode struct {
	Children []recursiveNode `json:"children"`
	Name     string          `json:"name"`
}

func TestStreamable(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"simulate report", plant.Report{}, true},
		{"pointer to simulate report", &plant.Report{}, true},
		{"numbers", []float64{}, true},
		{"map of numbers", map[string][]int{}, true},
		{"int-keyed map", map[int]string{}, true},
		{"recursive type", recursiveNode{}, true},
		{"ignored unsupported field", struct {
			C          chan int `json:"-"`
			unexported func()
		}{}, true},
		{"interface field", struct{ A any }{}, false},
		{"ordered object", orderedObject{}, false},
		{"json.Marshaler", jsonMarshalerValue{}, false},
		{"json.Marshaler on the pointer", []jsonMarshalerPointer{}, false},
		{"encoding.TextMarshaler", map[string]textMarshalerValue{}, false},
		{"channel", struct{ C chan int }{}, false},
		{"complex", []complex128{}, false},
		{"struct-keyed map", map[struct{ A int }]int{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, streamable(reflect.TypeOf(tc.v)))
		})
	}
}
