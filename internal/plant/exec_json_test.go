package plant

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// TestAppendPyFloatWritesWhatPythonWrites: the expected strings are
// Python 3.11's json.dumps (and repr) of each value.
func TestAppendPyFloatWritesWhatPythonWrites(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{660, "660.0"},
		{0.1, "0.1"},
		{0.30000000000000004, "0.30000000000000004"},
		{1e-4, "0.0001"},
		{9.999999999999999e-05, "9.999999999999999e-05"},
		{1e-05, "1e-05"},
		{1.5e-05, "1.5e-05"},
		{123456789, "123456789.0"},
		{1e15, "1000000000000000.0"},
		{9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"},
		{1.2345e16, "1.2345e+16"},
		{1e100, "1e+100"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-2.5, "-2.5"},
		{131072, "131072.0"},
		{41.25, "41.25"},
		{1.0 / 3, "0.3333333333333333"},
		{math.NaN(), "null"},
		{math.Inf(-1), "null"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(appendPyFloat(nil, tt.x)), "%v", tt.x)
	}
}

// FuzzAppendPyFloat: every finite float is written as a JSON number that
// reads back as the same float, and that Python reads as a float (a point
// or an exponent).
func FuzzAppendPyFloat(f *testing.F) {
	for _, x := range []float64{0, 1, 660, 0.1, 1e-4, 1e16, 5e-324, math.MaxFloat64, -1e-300} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		s := appendPyFloat(nil, x)
		if !finite(x) {
			if string(s) != "null" {
				t.Fatalf("%v: %s", x, s)
			}
			return
		}
		sc := answerScanner{b: s}
		if !sc.number() || sc.i != len(s) {
			t.Fatalf("%v: %s is not a JSON number", x, s)
		}
		if !bytes.ContainsAny(s, ".e") {
			t.Fatalf("%v: %s reads as an integer in Python", x, s)
		}
		back, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(x) {
			t.Fatalf("%v: %s reads back as %v (%v)", x, s, back, err)
		}
	})
}

// observationKeys are the protocol's observation fields, in order.
var observationKeys = []string{"time_s", "step_index", "prefill_queue", "decode_active", "prefill_remaining_tokens",
	"generated_decode_tokens", "oldest_prefill_age_s", "kv_tokens", "kv_capacity_tokens", "temperature_c",
	"previous_clock_mhz", "previous_power_w", "clock_levels_mhz", "arrived_requests", "completed_requests",
	"realized_clock_levels_mhz"}

func TestAppendObservation(t *testing.T) {
	prof := profile.Default()
	obs := Observation{TimeS: 0.30000000000000004, StepIndex: 3, PrefillQueue: 2, DecodeActive: 5,
		PrefillRemainingTokens: 700, GeneratedDecodeTokens: 12.5, OldestPrefillAgeS: 0.2, KVTokens: 3000.25,
		KVCapacityTokens: 131072, TemperatureC: 25.000001, PreviousClockMHz: 420, PreviousPowerW: 16.5,
		ClockLevelsMHz: prof.ClockMHz, ArrivedRequests: 9, CompletedRequests: 2, RealizedClockLevelsMHz: prof.RealizedClockLevelsMHz(),
		PowerCapW: math.Inf(1)}
	line := appendObservation([]byte("kept"), &obs)
	require.True(t, bytes.HasPrefix(line, []byte("kept")))
	line = line[len("kept"):]
	assert.Equal(t, `{"time_s":0.30000000000000004,"step_index":3,"prefill_queue":2,"decode_active":5,`+
		`"prefill_remaining_tokens":700.0,"generated_decode_tokens":12.5,"oldest_prefill_age_s":0.2,"kv_tokens":3000.25,`+
		`"kv_capacity_tokens":131072.0,"temperature_c":25.000001,"previous_clock_mhz":420.0,"previous_power_w":16.5,`+
		`"clock_levels_mhz":[420.0,690.0,960.0,1230.0,1500.0,1770.0,2040.0],"arrived_requests":9,"completed_requests":2,`+
		`"realized_clock_levels_mhz":[420.0,690.0,960.0,1230.0,1500.0,1770.0,2040.0]}`+"\n", string(line))
	// One line, keys in order, nothing else (no output length).
	require.Equal(t, 1, bytes.Count(line, []byte("\n")))
	var fields map[string]any
	require.NoError(t, json.Unmarshal(line, &fields))
	assert.Len(t, fields, len(observationKeys))
	at := -1
	for _, key := range observationKeys {
		i := bytes.Index(line, []byte(`"`+key+`":`))
		assert.Greater(t, i, at, key)
		at = i
	}

	empty := Observation{ClockLevelsMHz: []float64{1}, PowerCapW: math.Inf(1)}
	assert.Contains(t, string(appendObservation(nil, &empty)), `"realized_clock_levels_mhz":[]}`)

	// Under a fleet power budget, and only then, the line ends with the
	// replica's cap (0 W is a cap: loading replicas took the budget).
	for _, capW := range []float64{41.5, 0} {
		obs.PowerCapW = capW
		capped := string(appendObservation(nil, &obs))
		assert.True(t, strings.HasSuffix(capped, `"realized_clock_levels_mhz":[420.0,690.0,960.0,1230.0,1500.0,1770.0,2040.0],"power_cap_w":`+
			strconv.FormatFloat(capW, 'f', 1, 64)+"}\n"), capped)
	}
}

func TestParseAnswer(t *testing.T) {
	good := []struct {
		line string
		want float64
	}{
		{`{"clock_mhz": 1500}` + "\n", 1500},
		{`{"clock_mhz":1500.0}`, 1500},
		{" \t{ \"clock_mhz\" : -0 } \r\n", 0},
		{`{"clock_mhz": 1.5e3, "plan": []}`, 1500},
		{`{"plan": [1500, 1230.5, -1e-3, 0], "clock_mhz": 1e+3}`, 1000},
		{`{"clock\u005fmhz": 660}`, 660},
		{`{"clock_mhz": 1e-400}`, 0},
		{`{"clock_mhz": 0.30000000000000004}`, 0.30000000000000004},
	}
	for _, tt := range good {
		got, err := parseAnswer([]byte(tt.line))
		require.NoError(t, err, tt.line)
		assert.Equal(t, tt.want, got, tt.line)
	}
	bad := []struct{ line, want string }{
		{"", "not a JSON object"},
		{"\n", "not a JSON object"},
		{"1500", "not a JSON object"},
		{`{"clock_mhz": 1500`, "not a JSON object"},
		{`{"clock_mhz": 1500,}`, "not a JSON object"},
		{`{"clock_mhz" 1500}`, "not a JSON object"},
		{`{clock_mhz: 1500}`, "not a JSON object"},
		{`{'clock_mhz': 1500}`, "not a JSON object"},
		{`{"clock_mhz": 01500}`, "not a JSON object"},
		{`{"clock_mhz": 1500.}`, "not a JSON object"},
		{`{"clock_mhz": .5}`, "not a JSON object"},
		{`{"clock_mhz": +5}`, "not a JSON object"},
		{`{"clock_mhz": 0x10}`, "not a JSON object"},
		{`{"clock_mhz": 1e}`, "not a JSON object"},
		{"{\"clock_mhz\": 1500}\n{\"clock_mhz\": 1500}", "more after the JSON object"},
		{`{"clock_mhz": 1500}}`, "more after the JSON object"},
		{`{}`, "no clock_mhz"},
		{`{"plan": []}`, "no clock_mhz"},
		{`{"clock_mhz": 1, "clock_mhz": 2}`, "clock_mhz given twice"},
		{`{"clock_mhz": 1, "plan": [], "plan": []}`, "plan given twice"},
		{`{"Clock_MHz": 1500}`, `unknown field "Clock_MHz"`},
		{`{"clock_mhz ": 1500}`, `unknown field "clock_mhz "`},
		{`{"clock_mhz": 1, "` + strings.Repeat("k", 40) + `": 1}`, `unknown field "` + strings.Repeat("k", 32) + `"...`},
		{`{"clock_mhz": "1500"}`, "clock_mhz is a string"},
		{`{"clock_mhz": null}`, "clock_mhz is null"},
		{`{"clock_mhz": true}`, "clock_mhz is true"},
		{`{"clock_mhz": [1500]}`, "clock_mhz is not a number"},
		{`{"clock_mhz": NaN}`, "clock_mhz NaN: expected a finite number"},
		{`{"clock_mhz": Infinity}`, "clock_mhz Infinity"},
		{`{"clock_mhz": -Infinity}`, "clock_mhz -Infinity"},
		{`{"clock_mhz": -1e309}`, `clock_mhz "-1e309": expected a finite number`},
		{`{"clock_mhz": 1500, "plan": 1500}`, "plan: expected an array of finite numbers"},
		{`{"clock_mhz": 1500, "plan": [1500, "x"]}`, "plan value is a string"},
		{`{"clock_mhz": 1500, "plan": [1500 1230]}`, "not a JSON object"},
		{`{"clock_mhz": 1500, "plan": [[1500]]}`, "plan value is not a number"},
		{"{\"clock\x01\": 1}", "not a JSON object"},
		{`{"clock\q": 1}`, "not a JSON object"},
		{`{"clock\u00": 1}`, "not a JSON object"},
	}
	for _, tt := range bad {
		_, err := parseAnswer([]byte(tt.line))
		assert.ErrorContains(t, err, tt.want, "%q", tt.line)
	}
}

// FuzzParseAnswer: parseAnswer never panics, accepts exactly the lines
// that encoding/json reads as an object with a finite number clock_mhz and
// optionally an array of finite numbers plan, each once and nothing else,
// and reads the same clock.
func FuzzParseAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"clock_mhz": 1500}`, `{"clock_mhz": 1500, "plan": [1, 2.5e3]}`, `{"plan": [], "clock_mhz": -0.0}`,
		`{"clock_mhz": NaN}`, `{"clock_mhz": "1"}`, `{"clock_mhz": 1, "x": 2}`, `{"clock\u005fmhz": 1}`,
		`{"clock_mhz": 1, "clock_mhz": 1}`, `{"clock_mhz": 1e999}`, `[1500]`, ``, "{\"clock_mhz\":1}\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		clock, err := parseAnswer(line)
		want, ok := decodeAnswer(line)
		if (err == nil) != ok {
			t.Fatalf("%q: parseAnswer error %v, encoding/json accepts: %v", line, err, ok)
		}
		if ok && math.Float64bits(clock) != math.Float64bits(want) {
			t.Fatalf("%q: clock %v, encoding/json %v", line, clock, want)
		}
	})
}

// decodeAnswer applies the protocol's rules to line with encoding/json.
func decodeAnswer(line []byte) (float64, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil || fields == nil {
		return 0, false
	}
	// Duplicate keys: encoding/json keeps the last; the protocol refuses.
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	keys := 0
	if tok, _ := d.Token(); tok != json.Delim('{') {
		return 0, false
	}
	for d.More() {
		if _, err := d.Token(); err != nil {
			return 0, false
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return 0, false
		}
		keys++
	}
	if keys != len(fields) {
		return 0, false
	}
	number := func(raw json.RawMessage) (float64, bool) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return 0, false
		}
		x, ok := v.(float64)
		return x, ok && finite(x)
	}
	clock, ok := number(fields["clock_mhz"])
	if !ok {
		return 0, false
	}
	delete(fields, "clock_mhz")
	if raw, ok := fields["plan"]; ok {
		var plan []json.RawMessage
		if json.Unmarshal(raw, &plan) != nil || plan == nil {
			return 0, false
		}
		for _, x := range plan {
			if _, ok := number(x); !ok {
				return 0, false
			}
		}
		delete(fields, "plan")
	}
	return clock, len(fields) == 0
}
