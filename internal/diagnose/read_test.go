package diagnose

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/limits"
	"servesim/internal/testsupport"
)

const csvHeader = "request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival\n"

// collect reads every record of input.
func collect(t *testing.T, input string, opts ReadOptions) ([]Record, ArrivalKind, error) {
	t.Helper()
	var recs []Record
	kind, err := Scan(strings.NewReader(input), "logs", opts, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, kind, err
}

func TestReadCSV(t *testing.T) {
	want := RequestLog{RequestID: "a", PromptTokens: 100, OutputTokens: 10, QueueWaitMs: 1.5, PrefillMs: 20,
		DecodeTPOTMs: 12.25, Preempted: true, RecomputePenaltyMs: 0, PrefixCachedTokens: 40, KVOccupancyPctAtArrival: 97.5}
	tests := []struct {
		name  string
		input string
	}{
		{"seed order", csvHeader + "a,100,10,1.5,20,12.25,true,0,40,97.5\n"},
		{"any order, extra columns, spaces", "kv_occupancy_pct_at_arrival, model ,request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens\n" +
			"97.5, llama ,a, 100 ,10,1.5,20,12.25,TRUE,0,40\n"},
		{"CRLF, BOM, blank lines, no final newline", "\uFEFF" + strings.ReplaceAll(csvHeader, "\n", "\r\n") + "\r\n\r\na,100,10,1.5,20,12.25,1,0,40,97.5"},
		{"quoted fields and integral floats", csvHeader + `"a",100.0,1e1,"1.5",20,12.25,"True",0,40,97.5` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, kind, err := collect(t, tt.input, ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, ArrivalNone, kind)
			require.Len(t, recs, 1)
			assert.Equal(t, want, recs[0].Log)
		})
	}
}

func TestReadBooleans(t *testing.T) {
	for text, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "1": true, "false": false, "FaLsE": false, "0": false} {
		recs, _, err := collect(t, csvHeader+"a,1,1,0,0,0,"+text+",0,0,0\n", ReadOptions{})
		require.NoError(t, err, text)
		assert.Equal(t, want, recs[0].Log.Preempted, text)
	}
}

func TestReadJSONLines(t *testing.T) {
	input := `
{"request_id": "a", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": true, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5, "extra": [1, 2]}

{"request_id": 7, "prompt_tokens": "100", "output_tokens": 10.0, "queue_wait_ms": "1.5", "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": "false", "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5}
{"request_id": "c", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": 0, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5}
`
	recs, kind, err := collect(t, input, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, ArrivalNone, kind)
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"a", "7", "c"}, []string{recs[0].Log.RequestID, recs[1].Log.RequestID, recs[2].Log.RequestID})
	assert.Equal(t, []int{2, 4, 5}, []int{recs[0].Line, recs[1].Line, recs[2].Line})
	assert.True(t, recs[0].Log.Preempted)
	assert.False(t, recs[1].Log.Preempted)
	assert.Equal(t, recs[0].Log.KVOccupancyPctAtArrival, recs[1].Log.KVOccupancyPctAtArrival)
	assert.Equal(t, int64(10), recs[1].Log.OutputTokens)
}

func TestReadArrivals(t *testing.T) {
	recs, kind, err := collect(t, "arrival_s,timestamp,"+csvHeader+"61.5,2023-11-16 18:17:03.9799600,a,1,1,0,0,0,0,0,0,0\n", ReadOptions{Arrival: true})
	require.NoError(t, err)
	assert.Equal(t, ArrivalSeconds, kind, "arrival_s wins over timestamp")
	assert.Equal(t, 61.5, recs[0].ArrivalS)

	for _, ts := range []string{"2023-11-16 18:17:03.9799600", "2023-11-16T18:17:03.97996Z", "2023-11-16T19:17:03.97996+01:00", "2023-11-16T18:17:03.97996"} {
		recs, kind, err = collect(t, "timestamp,"+csvHeader+ts+",a,1,1,0,0,0,0,0,0,0\n", ReadOptions{Arrival: true})
		require.NoError(t, err, ts)
		assert.Equal(t, ArrivalTimestamp, kind)
		assert.InDelta(t, 1700158623.97996, recs[0].ArrivalS, 1e-6, ts)
	}

	_, _, err = collect(t, csvHeader+"a,1,1,0,0,0,0,0,0,0\n", ReadOptions{Arrival: true})
	assert.EqualError(t, err, `logs line 1: arrival_s: missing column: splitting into windows needs an arrival_s or timestamp column`)
	_, _, err = collect(t, csvHeader+"a,1,1,0,0,0,0,0,0,0\n", ReadOptions{})
	assert.NoError(t, err, "arrival times are only needed when asked for")
}

func TestReadErrorsNameFileLineAndField(t *testing.T) {
	row := "a,100,10,1.5,20,12.25,true,0,40,97.5\n"
	jsonRow := `{"request_id": "a", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": true, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5}` + "\n"
	tests := []struct {
		name, input, want string
	}{
		{"missing column", strings.Replace(csvHeader, ",prefill_ms", "", 1) + "a,100,10,1.5,12.25,true,0,40,97.5\n",
			`logs line 1: prefill_ms: missing column: the header must name request_id, prompt_tokens, output_tokens, queue_wait_ms, prefill_ms, decode_tpot_ms, preempted, recompute_penalty_ms, prefix_cached_tokens, kv_occupancy_pct_at_arrival`},
		{"duplicate column", "prefill_ms," + csvHeader + "1," + row, `logs line 1: prefill_ms: column appears twice in the header`},
		{"unparsable number", csvHeader + row + "b,100,10,fast,20,12.25,true,0,40,97.5\n", `logs line 3: queue_wait_ms "fast": expected a number`},
		{"unparsable integer", csvHeader + "b,100.5,10,1,20,12.25,true,0,40,97.5\n", `logs line 2: prompt_tokens "100.5": expected an integer`},
		{"unparsable boolean", csvHeader + "b,100,10,1,20,12.25,yes,0,40,97.5\n", `logs line 2: preempted "yes": expected true, false, 1 or 0`},
		{"seed validation: tokens", csvHeader + row + row + "c,100,0,1,20,12.25,true,0,40,97.5\n",
			`logs line 4: output_tokens "0": invalid completed request token counts: must be at least 1`},
		{"seed validation: measurements", csvHeader + "c,100,1,1,20,12.25,true,0,40,NaN\n",
			`logs line 2: kv_occupancy_pct_at_arrival "NaN": invalid completed request measurements: must be finite and non-negative`},
		{"seed validation: KV above 100", csvHeader + "c,100,1,1,20,12.25,true,0,40,100.01\n",
			`logs line 2: kv_occupancy_pct_at_arrival "100.01": invalid completed request measurements: must be at most 100`},
		{"wrong field count", csvHeader + "c,100,1\n", `logs line 2: malformed CSV: wrong number of fields: every row must have as many fields as the header`},
		{"bare quote", csvHeader + `c,1"00,1,1,20,12.25,true,0,40,1` + "\n", `logs line 2: malformed CSV: bare " in non-quoted-field`},
		{"unterminated quote", csvHeader + `c,"100,1,1,20,12.25,true,0,40,1` + "\n", `logs line 2: malformed CSV: extraneous or missing " in quoted-field`},
		{"JSON array", "[" + jsonRow + "]", `logs line 1: a JSON array is not a request log: expected JSON Lines (one object per line) or CSV with a header row`},
		{"JSON: missing key", jsonRow + `{"request_id": "b"}` + "\n", `logs line 2: prompt_tokens: missing key`},
		{"JSON: null", strings.Replace(jsonRow, `"prefill_ms": 20`, `"prefill_ms": null`, 1), `logs line 1: prefill_ms: missing key`},
		{"JSON: not an object", jsonRow + "[1, 2]\n", `logs line 2: expected one JSON object per line`},
		{"JSON: broken", jsonRow + jsonRow[:40] + "\n", `logs line 2: expected one JSON object per line`},
		{"JSON: array value", strings.Replace(jsonRow, `"prefill_ms": 20`, `"prefill_ms": [20]`, 1), `logs line 1: prefill_ms "[20]": expected a number, a boolean or a string`},
		{"JSON: validation", strings.Replace(jsonRow, `"prefix_cached_tokens": 40`, `"prefix_cached_tokens": 400`, 1),
			`logs line 1: prefix_cached_tokens "400": invalid completed request token counts: must be between 0 and prompt_tokens (100)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := collect(t, tt.input, ReadOptions{})
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			var ie *InputError
			assert.True(t, errors.As(err, &ie))
		})
	}
}

func TestReadEmpty(t *testing.T) {
	for _, input := range []string{"", "\n\n", "\uFEFF", csvHeader, "  \n"} {
		recs, _, err := collect(t, input, ReadOptions{})
		if input == "  \n" {
			// A line of blanks is a header without the required columns.
			assert.Error(t, err)
			continue
		}
		assert.NoError(t, err, "%q", input)
		assert.Empty(t, recs, "%q", input)
	}
}

func TestCallbackErrorStopsReading(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	_, err := Scan(strings.NewReader(csvHeader+"a,1,1,0,0,0,0,0,0,0\nb,1,1,0,0,0,0,0,0,0\n"), "logs", ReadOptions{}, func(Record) error {
		calls++
		return stop
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)
}

// TestSampleLogsGolden diagnoses the sample logs in testdata/logs as the
// command does (the whole log; and by minute when the log has arrival
// times) and compares with testdata/golden (rewrite with -update).
func TestSampleLogsGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/logs/*")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, path := range inputs {
		for _, byWindowS := range []float64{0, 60} {
			golden := filepath.Join("testdata", "golden", filepath.Base(path)+".json")
			if byWindowS > 0 {
				golden = filepath.Join("testdata", "golden", filepath.Base(path)+".by_window_60s.json")
			}
			t.Run(filepath.Base(golden), func(t *testing.T) {
				doc, _, err := Logs([]string{path}, openFile(""), filepath.Base(path), byWindowS, DefaultOptions())
				if byWindowS > 0 && err != nil {
					require.ErrorContains(t, err, "splitting into windows needs an arrival_s or timestamp column")
					require.NoFileExists(t, golden)
					return
				}
				require.NoError(t, err)
				chunks, err := jsonout.Chunks(doc) // as the command writes it
				require.NoError(t, err)
				testsupport.CheckGolden(t, golden, bytes.Join(chunks, nil))
			})
		}
	}
}

// csvRecords reads every record with encoding/csv (fields per record free).
func csvRecords(data []byte) ([][]string, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	var out [][]string
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// scannerRecords reads every record with csvScanner.
func scannerRecords(data []byte) ([][]string, error) {
	cs := newCSVScanner(bufio.NewReaderSize(bytes.NewReader(data), 16), MaxLogLineBytes)
	var out [][]string
	for {
		err := cs.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		rec := make([]string, cs.fields())
		for i := range rec {
			rec[i] = string(cs.field(i))
		}
		out = append(out, rec)
	}
}

func TestCSVScannerMatchesEncodingCSV(t *testing.T) {
	for _, input := range csvSeeds {
		want, wantErr := csvRecords([]byte(input))
		got, gotErr := scannerRecords([]byte(input))
		assert.Equal(t, wantErr != nil, gotErr != nil, "%q: %v / %v", input, wantErr, gotErr)
		if wantErr == nil {
			assert.Equal(t, want, got, "%q", input)
		}
	}
}

// csvSeeds are CSV inputs with every syntax feature; also the fuzz seeds.
var csvSeeds = []string{
	"", "\n", "a", "a\n", "a,b\r\nc,d", "a,b\r", "a\r\rb\n", "\"a,b\",c\n", "\"a\"\"b\"\n", "\"a\nb\",c\r\nd,e\n",
	"\"a\r\nb\"\n", "\"a\"b\n", "a\"b\n", "\"ab\n", ",,\n", "\"\",\"\"\n", "a,\"b\"\n\n\nc\n", " \"a\"\n",
	"\"a\" \n", "a,b\n\"c\nd\"\"\",e\n", "\r\n\r\nx\r\n", "a\n\r\nb",
	"\"" + strings.Repeat("x", 40) + "\n" + strings.Repeat("y", 40) + "\"\n",
	strings.Repeat("long", 20) + "," + strings.Repeat("z", 33) + "\n",
	csvHeader + "a,100,10,1.5,20,12.25,true,0,40,97.5\n",
}

// TestLongFieldIsQuotedShort: a bad field of a request log is quoted in at
// most limits.MaxQuotedChars characters, so the message stays one short line.
func TestLongFieldIsQuotedShort(t *testing.T) {
	long := strings.Repeat("9", 100000) + "x"
	csvLog := csvHeader + "r1," + long + ",10,1,1,1,false,0,0,50\n"
	_, err := Scan(strings.NewReader(csvLog), "log.csv", ReadOptions{}, func(Record) error { return nil })
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 300, "%.400s", err)
	assert.Contains(t, err.Error(), `prompt_tokens "`+strings.Repeat("9", limits.MaxQuotedChars)+`"... (100001 bytes)`)
}

// TestArrivalIfPresent: without --by-window, arrival times are read when a
// log has them, and a log without them, or a bad one, is no error (the
// overload finding then cannot be told); with Arrival they stay required.
func TestArrivalIfPresent(t *testing.T) {
	row := "a,100,10,1.5,20,12.25,true,0,40,97.5"
	jsonRow := func(arrival string) string {
		return `{"request_id": "a", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, ` +
			`"preempted": true, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5` + arrival + "}\n"
	}
	type arrival struct {
		kind ArrivalKind
		at   float64
	}
	tests := []struct {
		name  string
		input string
		kind  ArrivalKind
		want  []arrival
	}{
		{"CSV with arrival_s", "arrival_s," + csvHeader + "2.5," + row + "\n", ArrivalSeconds, []arrival{{ArrivalSeconds, 2.5}}},
		{"CSV with a timestamp", "timestamp," + csvHeader + "1970-01-01T00:00:03Z," + row + "\n", ArrivalTimestamp, []arrival{{ArrivalTimestamp, 3}}},
		{"CSV without an arrival column", csvHeader + row + "\n", ArrivalNone, []arrival{{ArrivalNone, 0}}},
		{"CSV with bad arrivals", "arrival_s," + csvHeader + "soon," + row + "\n," + row + "\nNaN," + row + "\n4," + row + "\n",
			ArrivalSeconds, []arrival{{ArrivalNone, 0}, {ArrivalNone, 0}, {ArrivalNone, 0}, {ArrivalSeconds, 4}}},
		{"JSON Lines with a missing, null or object arrival", jsonRow(`, "arrival_s": 1`) + jsonRow("") + jsonRow(`, "arrival_s": null`) +
			jsonRow(`, "arrival_s": {"s": 1}`) + jsonRow(`, "arrival_s": "x"`) + jsonRow(`, "arrival_s": "7"`),
			ArrivalSeconds, []arrival{{ArrivalSeconds, 1}, {ArrivalNone, 0}, {ArrivalNone, 0}, {ArrivalNone, 0}, {ArrivalNone, 0}, {ArrivalSeconds, 7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, kind, err := collect(t, tt.input, ReadOptions{ArrivalIfPresent: true})
			require.NoError(t, err)
			assert.Equal(t, tt.kind, kind)
			var got []arrival
			for _, r := range recs {
				got = append(got, arrival{r.Arrival, r.ArrivalS})
				assert.Equal(t, "a", r.Log.RequestID)
			}
			assert.Equal(t, tt.want, got)
			_, _, err = collect(t, tt.input, ReadOptions{Arrival: true, ArrivalIfPresent: true})
			if len(tt.want) == 1 && tt.want[0].kind != ArrivalNone {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err, "Arrival requires them")
			}
		})
	}
}
