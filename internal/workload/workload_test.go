package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/pycompat"
	"servesim/internal/sharedtest"
)

// TestParseISOTimestampMatchesPython checks the timestamp parser against
// Python 3.11's datetime.fromisoformat on accepted and rejected forms
// (testdata/fromisoformat_cases.json, printed by /usr/bin/python3).
func TestParseISOTimestampMatchesPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "fromisoformat_cases.json"))
	require.NoError(t, err)
	var cases []struct {
		Text       string `json:"text"`
		UnixMicros *int64 `json:"unix_micros"`
		HasZone    bool   `json:"has_zone"`
	}
	require.NoError(t, json.Unmarshal(data, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		got, hasZone, err := parseISOTimestamp(c.Text)
		if c.UnixMicros == nil {
			assert.Errorf(t, err, "%q is rejected by Python, accepted as %v", c.Text, got)
			continue
		}
		if assert.NoErrorf(t, err, "%q", c.Text) {
			assert.Equalf(t, *c.UnixMicros, got.UnixMicro(), "%q", c.Text)
			assert.Equalf(t, c.HasZone, hasZone, "%q", c.Text)
		}
	}
}

func TestLoadWorkloadMatchesTheReference(t *testing.T) {
	// Numbers printed by the reference's load_workload on the code trace.
	f, err := os.Open(sharedtest.CodeTrace(t))
	require.NoError(t, err)
	defer f.Close()
	w, err := LoadWorkload(f, "code.csv", 300)
	require.NoError(t, err)
	require.Len(t, w.Requests, 781)
	assert.Equal(t, Request{ID: 1, ArrivalTimeS: 0.052, PromptTokens: 3180, OutputTokens: 8}, w.Requests[1])
	assert.Equal(t, "b0f27704811454a2c556125e614b6d1e159adf628d99d63842eb5f4a5da0ce5b", WorkloadChecksum(w.Requests))
	assert.Len(t, w.SHA256, 64)
}

func TestLoadWorkloadAcceptsLFAndCRLFAndExtraColumns(t *testing.T) {
	for _, body := range []string{
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,2\n2023-11-16 18:17:04.9799600,20,3\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,10,2\r\n2023-11-16 18:17:04.9799600,20,3\r\n",
		"GeneratedTokens,Extra,TIMESTAMP,ContextTokens\n2,x,2023-11-16 18:17:03.9799600,10\n\n3,y,2023-11-16 18:17:04.9799600, 2_0 \n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:17:03.97996Z,10,2\n2023-11-16T19:17:04.97996+01:00,20,3\n",
		// A repeated column name means its last column, as csv.DictReader reads it.
		"TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:17:03.9799600,x,2,10\n2023-11-16 18:17:04.9799600,y,3,20\n",
	} {
		w, err := LoadWorkload(strings.NewReader(body), "t.csv", NoElapsedLimit)
		require.NoError(t, err, body)
		require.Len(t, w.Requests, 2)
		assert.Equal(t, 1.0, w.Requests[1].ArrivalTimeS)
		assert.Equal(t, 20, w.Requests[1].PromptTokens)
		assert.Equal(t, 3, w.Requests[1].OutputTokens)
	}
}

func TestArrivalMicrosecondsRecoversWholeMicroseconds(t *testing.T) {
	w, err := LoadWorkload(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n"+
		"2023-11-16 18:17:03.9799600,1,1\n2023-11-16 18:17:04.0319609,1,1\n2023-11-17 18:17:03.9799601,1,1\n"), "t.csv", NoElapsedLimit)
	require.NoError(t, err)
	var got []int64
	for _, r := range w.Requests {
		got = append(got, r.ArrivalMicroseconds())
	}
	// the 7th fractional digit is truncated, as Python's datetime does
	assert.Equal(t, []int64{0, 52_000, 86_400_000_000}, got)

	// float64(m)/1e6 round-trips for every m up to 70 years of microseconds
	const limit = 70 * 366 * 86_400 * 1_000_000
	for m := int64(0); m < limit; m = m*3 + 7 {
		for _, v := range []int64{m, limit - m} {
			require.Equal(t, v, Request{ArrivalTimeS: float64(v) / 1e6}.ArrivalMicroseconds(), "m=%d", v)
		}
	}
	assert.Equal(t, int64(2), Request{ArrivalTimeS: 1.6e-6}.ArrivalMicroseconds(), "other times are rounded")
}

func TestLoadWorkloadFiltersByElapsedTime(t *testing.T) {
	body := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1,1\n2023-11-16 18:00:01,1,1\n2023-11-16 18:00:02,1,1\n"
	w, err := LoadWorkload(strings.NewReader(body), "t.csv", 1)
	require.NoError(t, err)
	assert.Len(t, w.Requests, 2)
}

func TestLoadWorkloadErrorsNameFileLineAndField(t *testing.T) {
	header := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	row := "2023-11-16 18:17:03.9799600,10,2\n"
	tests := []struct {
		name, body, want string
		limit            float64
	}{
		{"empty file", "", "trace t.csv: empty workload trace", NoElapsedLimit},
		{"header only", header, "trace t.csv: empty workload trace: no rows", NoElapsedLimit},
		{"missing column", "TIMESTAMP,ContextTokens\n" + row, "trace t.csv line 1: missing column GeneratedTokens", NoElapsedLimit},
		{"bad timestamp", header + row + "yesterday,10,2\n", `trace t.csv line 3: TIMESTAMP "yesterday": expected an ISO 8601 date-time`, NoElapsedLimit},
		{"negative tokens", header + row + "2023-11-16 18:17:04,10,-3\n", `trace t.csv line 3: GeneratedTokens "-3": token counts must be positive`, NoElapsedLimit},
		{"zero tokens", header + "2023-11-16 18:17:04,0,3\n", `line 2: ContextTokens "0": token counts must be positive`, NoElapsedLimit},
		{"fractional tokens", header + "2023-11-16 18:17:04,1.5,3\n", `line 2: ContextTokens "1.5": expected an integer token count`, NoElapsedLimit},
		{"decreasing time", header + row + "2023-11-16 18:17:02,10,2\n", `line 3: TIMESTAMP "2023-11-16 18:17:02": earlier than the previous row`, NoElapsedLimit},
		{"short row", header + row + "2023-11-16 18:17:04\n", "line 3: missing ContextTokens", NoElapsedLimit},
		{"mixed zones", header + row + "2023-11-16 18:17:04+00:00,1,1\n", "line 3: TIMESTAMP \"2023-11-16 18:17:04+00:00\": mixes timestamps", NoElapsedLimit},
		{"bad quote", header + "\"2023-11-16 18:17:04,1,1\n", "trace t.csv line 2:", NoElapsedLimit},
		{"blank header line", "\n" + header + row, "trace t.csv line 1: missing column TIMESTAMP", NoElapsedLimit},
		{"blank header line, no rows", "\n\r\n", "trace t.csv: empty workload trace: no rows after the header", NoElapsedLimit},
		{"not UTF-8", header + row + "2023-11-16 18:17:04,1,1,\xff\n", "trace t.csv line 3: byte 97 is not UTF-8: expected a UTF-8 text", NoElapsedLimit},
		{"quote then digits", header + "2023-11-16 18:17:04,\"1\"x,1\n", `trace t.csv line 2: ContextTokens "1x": expected an integer token count`, NoElapsedLimit},
		{"nothing left", header + row, "no workload rows remain", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadWorkload(strings.NewReader(tt.body), "t.csv", tt.limit)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestReadWorkloadRefusesSpansPast2To53 checks the documented span of a
// trace: every row lies within 2^53 microseconds (285 years) of the first,
// else the first row past it is an error naming the file, the line and
// the timestamp, loaded or streamed, whatever the elapsed-time filter.
func TestReadWorkloadRefusesSpansPast2To53(t *testing.T) {
	header := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const why = "more than 2^53 microseconds (285 years) after the first row"
	tests := []struct {
		name, body string
		limit      float64
		want       string  // the error; empty when the trace is read
		lastS      float64 // the last arrival of a trace read
	}{
		{"exactly 2^53", header + "1970-01-01 00:00:00,1,1\n2255-06-05 23:47:34.740992,1,1\n", NoElapsedLimit, "", 9007199254.740992},
		{"exactly 2^53 with offsets", header + "1970-01-01 01:00:00+01:00,1,1\n2255-06-05 23:47:34.740992Z,1,1\n", NoElapsedLimit, "", 9007199254.740992},
		{"one microsecond past", header + "1970-01-01 00:00:00,1,1\n2255-06-05 23:47:34.740993,1,1\n",
			NoElapsedLimit, `trace t.csv line 3: TIMESTAMP "2255-06-05 23:47:34.740993": ` + why, 0},
		{"python's whole range", header + "0001-01-01 00:00:00,10,2\n9999-12-31 23:59:59,10,2\n",
			NoElapsedLimit, `trace t.csv line 3: TIMESTAMP "9999-12-31 23:59:59": ` + why, 0},
		{"2023 to 2400, the first row past", header + "2023-01-01 00:00:00,10,2\n2023-01-01 00:00:01,10,2\n\n2400-01-01 00:00:00,10,2\n2401-01-01 00:00:00,10,2\n",
			NoElapsedLimit, `trace t.csv line 5: TIMESTAMP "2400-01-01 00:00:00": ` + why, 0},
		{"past the span though filtered", header + "2023-01-01 00:00:00,10,2\n2400-01-01 00:00:00,10,2\n",
			60, `trace t.csv line 3: TIMESTAMP "2400-01-01 00:00:00": ` + why, 0},
		{"with offsets", header + "2023-01-01 00:00:00+00:00,10,2\n2400-01-01 00:00:00-05:00,10,2\n",
			NoElapsedLimit, `trace t.csv line 3: TIMESTAMP "2400-01-01 00:00:00-05:00": ` + why, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loaded, loadErr := LoadWorkload(strings.NewReader(tt.body), "t.csv", tt.limit)
			var streamed []Request
			_, streamErr := ReadWorkload(strings.NewReader(tt.body), "t.csv", tt.limit, func(r Request) error {
				streamed = append(streamed, r)
				return nil
			})
			if tt.want == "" {
				require.NoError(t, loadErr)
				require.NoError(t, streamErr)
				assert.Equal(t, loaded.Requests, streamed)
				last := loaded.Requests[len(loaded.Requests)-1]
				assert.Equal(t, tt.lastS, last.ArrivalTimeS)
				assert.Equal(t, int64(MaxTraceSpanMicros), last.ArrivalMicroseconds())
				return
			}
			for _, err := range []error{loadErr, streamErr} {
				require.EqualError(t, err, tt.want)
				var traceErr *TraceError
				require.ErrorAs(t, err, &traceErr)
				assert.Equal(t, columnTimestamp, traceErr.Column)
			}
		})
	}
}

// FuzzLoadWorkload checks that the trace parser never panics, and that what
// it accepts is a valid, sorted workload.
func FuzzLoadWorkload(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.0319600,3180,8\r\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-W46-4T10:00Z,1,1\n")
	f.Add("GeneratedTokens,TIMESTAMP,ContextTokens\n1,20231116T181703,+1_0\n")
	f.Add("TIMESTAMP\n\"x\"\"y\",1\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01,1,1\n9999-12-31T23:59:59.999999,1,1\n")
	f.Fuzz(func(t *testing.T, body string) {
		w, err := LoadWorkload(strings.NewReader(body), "fuzz.csv", NoElapsedLimit)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if len(w.Requests) == 0 {
			t.Fatal("accepted an empty workload")
		}
		for i, r := range w.Requests { // plant's workload checks: valid, unique IDs, sorted
			if err := r.Validate(); err != nil || r.ID != i || (i > 0 && r.ArrivalTimeS < w.Requests[i-1].ArrivalTimeS) {
				t.Fatalf("accepted an invalid workload: request %d %+v: %v", i, r, err)
			}
		}
		if last := w.Requests[len(w.Requests)-1].ArrivalTimeS; last > MaxTraceSpanMicros/1e6 {
			t.Fatalf("accepted a trace spanning %v s, past 2^53 microseconds", last)
		}
	})
}

func TestWorkloadChecksumFormat(t *testing.T) {
	// sha256 of "0,0.000000000,1,2\n1,0.123456789,3,4" (Python's f"{x:.9f}").
	got := WorkloadChecksum([]Request{{ID: 0, PromptTokens: 1, OutputTokens: 2}, {ID: 1, ArrivalTimeS: 0.1234567891, PromptTokens: 3, OutputTokens: 4}})
	assert.Equal(t, "2b5270e9dc068a8f7e5ec4f73bc23fbf8e00a1521d125211834d8067711b6cc6", got)
}

func TestParseISOTimestampRejectsCPythonQuirks(t *testing.T) {
	// CPython 3.11 accepts these by accident; servesim rejects them.
	for _, text := range []string{"2023-11-16T18:17:03x+01:00", "2023-11-16T18:17:03:5", "2023-11-16T18:17:03 +01:00", "2024-05-10 00:00:00.+00:00"} {
		_, _, err := parseISOTimestamp(text)
		assert.Error(t, err, text)
	}
}

func TestTokenCount(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
		ok   bool
	}{
		{"10", 10, true},
		{"007", 7, true},
		{" 1\t", 1, true},
		{"+1_000", 1000, true},
		{"-3", -3, true},
		{"\u00a0\u0663", 3, true}, // Python's int() takes Unicode spaces and digits
		{"999999999999999999", 999999999999999999, true},
		{"1234567890123456789", 1234567890123456789, true},
		{"99999999999999999999", 0, false},
		{"1__0", 0, false},
		{"_1", 0, false},
		{"+-1", 0, false},
		{"1.0", 0, false},
		{"", 0, false},
		{"x", 0, false},
	} {
		got, err := tokenCount(tc.text)
		if !tc.ok {
			assert.Error(t, err, "%q", tc.text)
			continue
		}
		require.NoError(t, err, "%q", tc.text)
		assert.Equal(t, tc.want, got, "%q", tc.text)
	}
}

func TestDaysInAgreesWithTheTimePackage(t *testing.T) {
	for year := 1; year <= 9999; year++ {
		for month := 1; month <= 12; month++ {
			want := time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
			if got := daysIn(year, month); got != want {
				t.Fatalf("daysIn(%d, %d) = %d, time.Date says %d", year, month, got, want)
			}
		}
	}
}

// TestLoadWorkloadReadsQuotesAsPython reads fields the way the reference's
// csv.DictReader does: a quote that ends quoting lets the field go on, so
// "12"3 is 123 (encoding/csv pulls the rest of the file into the field).
func TestLoadWorkloadReadsQuotesAsPython(t *testing.T) {
	body := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"\"2023-11-16 18:17:03\",\"12\"3,4\n" +
		"2023-11-16 18:17:04,\"5,\"\"\",6\n"
	_, err := LoadWorkload(strings.NewReader(body), "t.csv", NoElapsedLimit)
	require.EqualError(t, err, `trace t.csv line 3: ContextTokens "5,\"": expected an integer token count`)

	w, err := LoadWorkload(strings.NewReader(body[:strings.LastIndex(body[:len(body)-1], "\n")+1]), "t.csv", NoElapsedLimit)
	require.NoError(t, err)
	require.Len(t, w.Requests, 1)
	assert.Equal(t, 123, w.Requests[0].PromptTokens)
}

// TestLoadWorkloadStrayQuoteIsAShortError: one stray quote opens a field
// that runs on over the following rows, as Python reads it, until it
// passes the csv module's field limit (the 2023 code trace with one stray
// quote once gave a 320 KB error line); the error names the line and the
// limit in one short line. A long field within the limit is quoted in at
// most 80 characters.
func TestLoadWorkloadStrayQuoteIsAShortError(t *testing.T) {
	rows := func(b *strings.Builder, bytes int) {
		for i := 0; b.Len() < bytes; i++ {
			fmt.Fprintf(b, "2023-11-16 18:%02d:%02d.0319600,3180,8\n", 18+i/60%40, i%60)
		}
	}
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,\"4808,10\n")
	rows(&b, 320<<10)
	_, err := LoadWorkload(strings.NewReader(b.String()), "code.csv", NoElapsedLimit)
	require.Error(t, err)
	assert.Regexp(t, `^trace code\.csv line \d+: field larger than field limit \(131072\)$`, err.Error())

	b.Reset()
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,\"4808\n")
	rows(&b, 100<<10)
	b.WriteString("\",10\n")
	_, err = LoadWorkload(strings.NewReader(b.String()), "code.csv", NoElapsedLimit)
	require.Error(t, err)
	assert.Regexp(t, `^trace code\.csv line 2: ContextTokens "4808\\n2023-11-16 18:18:00\.0319600,3180,8\\n2023[^"]*"\.\.\. \(\d+ bytes\): expected an integer token count$`, err.Error())
	assert.Less(t, len(err.Error()), 200)
}

// TestCSVErrorNamesTheTraceAndLine: a syntax error of the CSV reader, on the
// plain path and on Python's, reads "trace NAME line N: what".
func TestCSVErrorNamesTheTraceAndLine(t *testing.T) {
	long := strings.Repeat("x", pycompat.CSVFieldLimit+1)
	for _, body := range []string{
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03," + long + ",1\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n\"2023-11-16 18:17:03\"," + long + ",1\n",
	} {
		_, err := LoadWorkload(strings.NewReader(body), "t.csv", NoElapsedLimit)
		require.EqualError(t, err, "trace t.csv line 2: field larger than field limit (131072)")
		var syntax *pycompat.CSVError
		assert.ErrorAs(t, err, &syntax)
	}
	assert.EqualError(t, csvError("t.csv", errors.New("disk gone")), "trace t.csv: disk gone")
}
