package jsonout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
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
		got, err := AppendLine(nil, d)
		require.NoError(t, err)
		assert.Equal(t, want+"\n", string(got), "trial %d compact", trial)

		// The indented layout differs from json.Indent's (see
		// TestIndentedLayout); its content must not.
		indented, err := appendIndented(nil, d)
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
	doc := Object{
		{"record", record{ID: 1, T: 0.5}},
		{"records", []record{{ID: 1, T: 0.5, Note: "a"}, {ID: 2, T: math.NaN(), Opt: &one}}},
		{"series", []float64{0.1, 2, math.Inf(1)}},
		{"pointers", []*float64{nil, &one}},
		{"matrix", [][]int{{1, 2}, {}, {3}}},
		{"nested", []nested{{Name: "n", Items: []float64{1}}}},
		{"rows", []Object{{{"k", 1}, {"v", "x"}}}},
		{"mixed", []any{1, "s", nil}},
		{"objects", []any{map[string]any{"a": 1}, map[string]any{"b": []int{1}}}},
		{"empty", []int{}},
		{"none", Object{}},
	}
	got, err := appendIndented(nil, doc)
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
	type record struct {
		RequestID       int     `json:"request_id"`
		ArrivalTimeS    float64 `json:"arrival_time_s"`
		PrefillStartS   float64 `json:"prefill_start_s"`
		FirstTokenTimeS float64 `json:"first_token_time_s"`
		CompletionTimeS float64 `json:"completion_time_s"`
		PromptTokens    int     `json:"prompt_tokens"`
		OutputTokens    int     `json:"output_tokens"`
	}
	records := []record{
		{RequestID: 0, FirstTokenTimeS: 2.600000000000001, CompletionTimeS: 2.8, PromptTokens: 4808, OutputTokens: 10},
		{RequestID: 1, ArrivalTimeS: 1e-7, PrefillStartS: math.NaN(), FirstTokenTimeS: math.NaN(), CompletionTimeS: math.Inf(1), PromptTokens: 1, OutputTokens: 2},
	}
	got, err := AppendLine(nil, records)
	require.NoError(t, err)
	assert.Equal(t, `[{"request_id":0,"arrival_time_s":0,"prefill_start_s":0,"first_token_time_s":2.600000000000001,"completion_time_s":2.8,"prompt_tokens":4808,"output_tokens":10},`+
		`{"request_id":1,"arrival_time_s":1e-7,"prefill_start_s":null,"first_token_time_s":null,"completion_time_s":null,"prompt_tokens":1,"output_tokens":2}]`+"\n", string(got))
	ordered, err := appendIndented(nil, Object{{"z", 1}, {"a", math.NaN()}, {"m", Object{}}})
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
	whole, err := appendIndented(nil, doc)
	require.NoError(t, err)

	chunks, err := Chunks(doc)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 3, "a large document spans several chunks")
	assert.Equal(t, string(whole)+"\n", string(bytes.Join(chunks, nil)))

	var streamed countingWriter
	require.NoError(t, Stream(&streamed, doc))
	assert.Equal(t, string(whole)+"\n", streamed.String())
	assert.Greater(t, streamed.writes, 3, "a large document is written as it is encoded")
	assert.LessOrEqual(t, streamed.largest, chunkBytes+chunkBytes/4, "no write is larger than a chunk")
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

func TestStreamJSONReportsTheFirstWriteError(t *testing.T) {
	doc := make([]float64, 100000)
	err := Stream(&testsupport.FailingWriter{Limit: chunkBytes, Err: errors.New("disk full")}, doc)
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
		{"numbers", []float64{}, true},
		{"map of numbers", map[string][]int{}, true},
		{"int-keyed map", map[int]string{}, true},
		{"recursive type", recursiveNode{}, true},
		{"ignored unsupported field", struct {
			C          chan int `json:"-"`
			unexported func()
		}{}, true},
		{"interface field", struct{ A any }{}, false},
		{"ordered object", Object{}, false},
		{"json.Marshaler", jsonMarshalerValue{}, false},
		{"json.Marshaler on the pointer", []jsonMarshalerPointer{}, false},
		{"encoding.TextMarshaler", map[string]textMarshalerValue{}, false},
		{"channel", struct{ C chan int }{}, false},
		{"complex", []complex128{}, false},
		{"struct-keyed map", map[struct{ A int }]int{}, false},
		{",string option", struct {
			N int `json:"n,string"`
		}{}, false},
		{"ambiguous members", ambiguous{}, false},
		{"members one hides", hidden{}, true},
		{"omitzero", withOmitZero{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Streamable(reflect.TypeOf(tc.v)))
		})
	}
}

// clock has an IsZero method that omitzero must call.
type clock struct{ MHz float64 }

func (c clock) IsZero() bool { return c.MHz <= 0 }

type withOmitZero struct {
	A int             `json:"a,omitzero"`
	B clock           `json:"b,omitzero"`
	C *clock          `json:"c,omitzero"`
	D [2]float64      `json:"d,omitzero"`
	E struct{ X int } `json:"e,omitempty"` // omitempty never omits a struct
}

// Left and Right are embedded types whose untagged Name fields meet.
type Left struct {
	Name string
	L    int `json:"l"`
}

// Right has a field named like one of Left's.
type Right struct {
	Name string
	R    int `json:"r"`
}

// ambiguous has two untagged members "Name" at one depth.
type ambiguous struct {
	Left
	Right
}

// Deep embeds Right one level further down.
type Deep struct{ Right }

// hidden has members "Name" at three depths and an untagged "Other" beside
// a tagged one: the shallowest, and the tagged, win.
type hidden struct {
	*Deep
	Left
	Title string `json:"Name"`
	Other int
	Tag   int `json:"Other"`
}

func TestEmbeddedMembersFollowEncodingJSON(t *testing.T) {
	v := hidden{Deep: &Deep{Right{Name: "deep", R: 2}}, Left: Left{Name: "left", L: 1}, Title: "top", Other: 3, Tag: 4}
	got, err := AppendLine(nil, v)
	require.NoError(t, err)
	assert.Equal(t, encodingJSON(t, v, false)+"\n", string(got))
	assert.Equal(t, `{"r":2,"l":1,"Name":"top","Other":4}`+"\n", string(got))

	// A nil embedded pointer leaves its members out, as encoding/json does.
	v.Deep = nil
	got, err = AppendLine(nil, v)
	require.NoError(t, err)
	assert.Equal(t, encodingJSON(t, v, false)+"\n", string(got))

	_, err = AppendLine(nil, ambiguous{})
	var encErr *EncodeError
	require.ErrorAs(t, err, &encErr)
	assert.EqualError(t, err, `encoding result: jsonout.ambiguous: 2 fields at one depth are the member "Name" and none hides the others (encoding/json would drop them all)`)
}

func TestOmitZeroFollowsEncodingJSON(t *testing.T) {
	for _, v := range []withOmitZero{
		{},
		{A: 1, B: clock{MHz: 1}, C: &clock{MHz: 2}, D: [2]float64{0, 1}, E: struct{ X int }{1}},
		{B: clock{MHz: -1}, C: &clock{}},
	} {
		got, err := AppendLine(nil, v)
		require.NoError(t, err)
		assert.Equal(t, encodingJSON(t, v, false)+"\n", string(got))
	}
	got, err := AppendLine(nil, withOmitZero{})
	require.NoError(t, err)
	assert.Equal(t, `{"e":{"X":0}}`+"\n", string(got))
}

func TestUnsupportedTypesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"json.Marshaler", jsonMarshalerValue{}, "jsonout.jsonMarshalerValue implements json.Marshaler, which jsonout does not call"},
		{"json.Marshaler on the pointer", []jsonMarshalerPointer{{}}, "jsonout.jsonMarshalerPointer implements json.Marshaler, which jsonout does not call"},
		{"in an interface", []any{1, textMarshalerValue{}}, "jsonout.textMarshalerValue implements encoding.TextMarshaler, which jsonout does not call"},
		{",string", struct {
			N int `json:"n,string"`
		}{}, `struct { N int "json:\"n,string\"" }: field N has the ",string" option, which jsonout does not support`},
		{"channel", struct{ C chan int }{}, "cannot encode chan int as JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, encode := range []func(any) error{
				func(v any) error { _, err := AppendLine(nil, v); return err },
				func(v any) error { _, err := appendIndented(nil, v); return err },
				func(v any) error { _, err := Chunks(v); return err },
				func(v any) error { return Stream(io.Discard, v) },
			} {
				err := encode(tc.v)
				var encErr *EncodeError
				require.ErrorAs(t, err, &encErr)
				assert.EqualError(t, encErr.Err, tc.want)
			}
		})
	}
}

// TestChunksWriteTheWholeDocument: a document with every kind of member,
// as Chunks writes it.
func TestChunksWriteTheWholeDocument(t *testing.T) {
	type inner struct {
		B float64 `json:"b"`
	}
	type embedded struct {
		E int `json:"e"`
	}
	type result struct {
		embedded
		Name    string             `json:"name"`
		NaN     float64            `json:"nan"`
		Inf     float64            `json:"inf"`
		Small   float64            `json:"small"`
		Whole   float64            `json:"whole"`
		Opt     *float64           `json:"opt"`
		Omitted string             `json:"omitted,omitempty"`
		Skip    int                `json:"-"`
		List    []float64          `json:"list"`
		Nil     []int              `json:"nil"`
		Map     map[string]float64 `json:"map"`
		Inner   inner              `json:"inner"`
		HTML    string             `json:"html"`
		Raw     any                `json:"raw"`
	}
	v := result{
		embedded: embedded{E: 7}, Name: "x", NaN: math.NaN(), Inf: math.Inf(-1), Small: 1e-7, Whole: 5,
		List: []float64{1.5, math.Inf(1)}, Map: map[string]float64{"z": 1, "a": math.NaN()},
		Inner: inner{B: 0.1}, HTML: "<a&b>", Raw: map[string]any{"k": []any{1.0, "s"}},
	}
	chunks, err := Chunks(v)
	require.NoError(t, err)
	got := bytes.Join(chunks, nil)
	want := `{
  "e": 7,
  "name": "x",
  "nan": null,
  "inf": null,
  "small": 1e-7,
  "whole": 5,
  "opt": null,
  "list": [1.5, null],
  "nil": [],
  "map": {
    "a": null,
    "z": 1
  },
  "inner": {
    "b": 0.1
  },
  "html": "<a&b>",
  "raw": {
    "k": [1, "s"]
  }
}
`
	assert.Equal(t, want, string(got))
}

func TestRawMessageIsWrittenAsIs(t *testing.T) {
	type doc struct {
		Raw  json.RawMessage   `json:"raw"`
		Nil  json.RawMessage   `json:"nil"`
		List []json.RawMessage `json:"list"`
	}
	v := doc{Raw: json.RawMessage(`{"a": [1, 2.50, "x<y"], "b": null}`), List: []json.RawMessage{json.RawMessage(` 1e3 `), json.RawMessage(`"s"`)}}
	got, err := AppendLine(nil, v)
	require.NoError(t, err)
	assert.Equal(t, `{"raw":{"a":[1,2.50,"x<y"],"b":null},"nil":null,"list":[1e3,"s"]}`+"\n", string(got))
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	assert.Equal(t, want.String(), string(got), "as encoding/json writes it")

	indented, err := appendIndented(nil, Object{{Key: "m", Value: json.RawMessage(`{"a":[1,2]}`)}})
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"m\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}", string(indented))
	assert.False(t, Streamable(reflect.TypeOf(v)), "a raw message may not be JSON")

	_, err = AppendLine(nil, json.RawMessage(`{"a":`))
	var encErr *EncodeError
	require.ErrorAs(t, err, &encErr)
}
