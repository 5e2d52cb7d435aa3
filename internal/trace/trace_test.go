package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/limits"
	"servesim/internal/workload"
)

// req is a request as a test expects it.
func req(id int, arrivalS float64, prompt, output int) workload.Request {
	return workload.Request{ID: id, ArrivalTimeS: arrivalS, PromptTokens: prompt, OutputTokens: output}
}

// loadFile loads testdata/name.
func loadFile(t *testing.T, name string, maxElapsedS float64, opt Options) (*Trace, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	return Load(f, name, maxElapsedS, opt)
}

func mustColumns(t *testing.T, unit TimeUnit, terms ...string) *Columns {
	c, err := ParseColumns(terms)
	require.NoError(t, err)
	c.Unit = unit
	return &c
}

func TestLoadReadsEveryFormat(t *testing.T) {
	gpt4, err := ParseFilter([]string{"model=GPT-4"})
	require.NoError(t, err)
	api, err := ParseFilter([]string{"log-type=API log"})
	require.NoError(t, err)
	both, err := ParseFilter([]string{"model=GPT-4", "log-type=API log"})
	require.NoError(t, err)
	chatOrGPT4, err := ParseFilter([]string{"model=ChatGPT", "model=GPT-4"})
	require.NoError(t, err)
	gateway := mustColumns(t, Milliseconds, "arrival=arrived_ms", "prompt=prompt", "output=completion")
	tests := []struct {
		name, file  string
		opt         Options
		maxElapsedS float64
		format      Format
		want        []workload.Request
		skipped     map[string]int
		hashIDs     [][]int64
	}{
		{name: "azure 2023", file: "azure2023.csv", format: Azure, want: []workload.Request{
			req(0, 0, 4808, 10), req(1, 0.052, 3180, 8), req(2, 0.052, 110, 27), req(3, 1.52004, 7437, 1)}},
		{name: "azure 2024, offsets and fractions of any length", file: "azure2024.csv", format: Azure, want: []workload.Request{
			req(0, 0, 1024, 157), req(1, 0.00007, 37, 9), req(2, 1.49007, 2048, 1), req(3, 1.49007, 612, 33), req(4, 59.99007, 9, 2)}},
		{name: "azure forced", file: "azure2023.csv", opt: Options{Format: Azure}, maxElapsedS: 0.06, format: Azure, want: []workload.Request{
			req(0, 0, 4808, 10), req(1, 0.052, 3180, 8), req(2, 0.052, 110, 27)}},
		{name: "burstgpt skips failed responses", file: "burstgpt.csv", format: BurstGPT, want: []workload.Request{
			req(0, 0, 512, 20), req(1, 38, 1200, 250), req(2, 117, 400, 300), req(3, 1127, 1300, 480), req(4, 4567.25, 1310, 260)},
			skipped: map[string]int{SkipFailedResponse: 2}},
		{name: "burstgpt filtered by model", file: "burstgpt.csv", opt: Options{Filter: gpt4}, format: BurstGPT,
			want: []workload.Request{req(0, 0, 400, 300), req(1, 1010, 1300, 480)}, skipped: map[string]int{SkipFiltered: 4, SkipFailedResponse: 1}},
		{name: "burstgpt filtered by log type", file: "burstgpt.csv", opt: Options{Filter: api, Format: BurstGPT}, format: BurstGPT,
			want: []workload.Request{req(0, 0, 1300, 480), req(1, 3440.25, 1310, 260)}, skipped: map[string]int{SkipFiltered: 4, SkipFailedResponse: 1}},
		{name: "burstgpt filtered by both", file: "burstgpt.csv", opt: Options{Filter: both}, format: BurstGPT,
			want: []workload.Request{req(0, 0, 1300, 480)}, skipped: map[string]int{SkipFiltered: 5, SkipFailedResponse: 1}},
		{name: "burstgpt filter with two models", file: "burstgpt.csv", opt: Options{Filter: chatOrGPT4}, format: BurstGPT, want: []workload.Request{
			req(0, 0, 512, 20), req(1, 38, 1200, 250), req(2, 117, 400, 300), req(3, 1127, 1300, 480), req(4, 4567.25, 1310, 260)},
			skipped: map[string]int{SkipFailedResponse: 2}},
		{name: "burstgpt within an elapsed limit", file: "burstgpt.csv", maxElapsedS: 100, format: BurstGPT,
			want: []workload.Request{req(0, 0, 512, 20), req(1, 38, 1200, 250)}, skipped: map[string]int{SkipFailedResponse: 2}},
		{name: "mooncake", file: "mooncake.jsonl", format: Mooncake, want: []workload.Request{
			req(0, 0, 6000, 40), req(1, 0, 5500, 30), req(2, 25, 6000, 40), req(3, 31.2505, 500, 1)},
			hashIDs: [][]int64{
				{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, {10, 11, 12, 13, 14, 15, 16, 30, 31, 32, 33},
				{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, {40}}},
		{name: "mooncake within an elapsed limit", file: "mooncake.jsonl", maxElapsedS: 30, format: Mooncake, want: []workload.Request{
			req(0, 0, 6000, 40), req(1, 0, 5500, 30), req(2, 25, 6000, 40)},
			hashIDs: [][]int64{
				{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, {10, 11, 12, 13, 14, 15, 16, 30, 31, 32, 33},
				{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}}},
		{name: "csv log by named columns, a quoted field", file: "gateway.csv", opt: Options{Columns: gateway}, format: CSV,
			want: []workload.Request{req(0, 0, 100, 20), req(1, 0.2505, 1000, 5), req(2, 1, 8, 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxElapsedS := tt.maxElapsedS
			if maxElapsedS == 0 {
				maxElapsedS = workload.NoElapsedLimit
			}
			got, err := loadFile(t, tt.file, maxElapsedS, tt.opt)
			require.NoError(t, err)
			assert.Equal(t, tt.format, got.Format)
			assert.Equal(t, tt.want, got.Requests)
			assert.Equal(t, tt.skipped, got.Skipped)
			assert.Equal(t, tt.file, got.Source)
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			assert.Equal(t, sha256Hex(data), got.SHA256, "the hash of the whole file")
			for i := range got.Requests {
				if tt.hashIDs == nil {
					assert.Nil(t, got.HashIDs(i))
				} else {
					assert.Equal(t, tt.hashIDs[i], got.HashIDs(i), "request %d", i)
				}
			}
		})
	}
}

func TestLoadReadsVariantsOfEachFormat(t *testing.T) {
	seconds := mustColumns(t, "", "arrival=t", "prompt=p", "output=o")
	iso := mustColumns(t, ISO, "arrival=t", "prompt=p", "output=o")
	micros := mustColumns(t, Microseconds, "arrival=t", "prompt=p", "output=o")
	tests := []struct {
		name, text string
		opt        Options
		want       []workload.Request
	}{
		{"blank lines and CRLF before a BurstGPT header", "\r\n\nTimestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n1,a,2,3,5,b\r\n\r\n2.5,a,4,5,9,b",
			Options{}, []workload.Request{req(0, 0, 2, 3), req(1, 1.5, 4, 5)}},
		{"BurstGPT columns in another order, extra columns", "Log Type,Response tokens,x,Request tokens,Timestamp\nb,3,?,2,10\n",
			Options{}, []workload.Request{req(0, 0, 2, 3)}},
		{"a repeated column name means its last column", "Timestamp,Request tokens,Response tokens,Response tokens\n1,2,0,3\n",
			Options{}, []workload.Request{req(0, 0, 2, 3)}},
		{"spaces around numbers", "t,p,o\n 1 ,\t2, 3\n2e0,+4,5\n", Options{Columns: seconds}, []workload.Request{req(0, 0, 2, 3), req(1, 1, 4, 5)}},
		{"negative and fractional seconds, rounded to microseconds", "t,p,o\n-1.0000004,1,1\n.5,1,1\n", Options{Columns: seconds},
			[]workload.Request{req(0, 0, 1, 1), req(1, 1.5, 1, 1)}},
		{"microseconds", "t,p,o\n1700000000000000,1,1\n1700000000000001,1,1\n", Options{Columns: micros},
			[]workload.Request{req(0, 0, 1, 1), req(1, 0.000001, 1, 1)}},
		{"ISO times with offsets", "t,p,o\n2024-05-10 02:00:00+02:00,1,1\n2024-05-10T00:00:01.25Z,1,1\n", Options{Columns: iso},
			[]workload.Request{req(0, 0, 1, 1), req(1, 1.25, 1, 1)}},
		{"quoted fields across lines", "t,note,p,o\n1,\"a\nb\",2,3\n2,\"\"\"\",4,5\n", Options{Columns: mustColumns(t, "", "arrival=t", "prompt=p", "output=o")},
			[]workload.Request{req(0, 0, 2, 3), req(1, 1, 4, 5)}},
		{"mooncake: keys in any order, escaped, repeated; blank lines; no hash ids", "\n {\"output_length\":1,\"input_length\":2,\"timestamp\":5,\"hash_ids\":[]}\r\n\t\n{\"\\u0074imestamp\":6.5,\"input_length\":9,\"input_length\":3,\"output_length\":4}",
			Options{}, []workload.Request{req(0, 0, 2, 1), req(1, 0.0015, 3, 4)}},
		{"mooncake: exponents and negative times", "{\"timestamp\":-1e3,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":0.0E0,\"input_length\":1,\"output_length\":1}\n",
			Options{}, []workload.Request{req(0, 0, 1, 1), req(1, 1, 1, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(strings.NewReader(tt.text), "t", workload.NoElapsedLimit, tt.opt)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Requests)
		})
	}
}

func TestLoadRejectsBadInput(t *testing.T) {
	gpt4, err := ParseFilter([]string{"model=GPT-4"})
	require.NoError(t, err)
	iso := mustColumns(t, ISO, "arrival=t", "prompt=p", "output=o")
	seconds := mustColumns(t, Seconds, "arrival=t", "prompt=p", "output=o")
	const burst = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	tests := []struct {
		name, text string
		opt        Options
		want       string
	}{
		{"no known format", "a,b,c\n1,2,3\n", Options{},
			"trace t line 1: not a trace format servesim knows: tried azure (header TIMESTAMP,ContextTokens,GeneratedTokens), burstgpt (header Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type) and mooncake (JSON Lines with timestamp, input_length, output_length); name the columns of another CSV log (format csv)"},
		{"no known format after blank lines", "\n\nhello\n", Options{}, "trace t line 3: not a trace format"},
		{"empty, read as azure", "", Options{}, "trace t: empty workload trace: expected a header TIMESTAMP,ContextTokens,GeneratedTokens and rows"},
		{"blank, read as azure", "\n\r\n", Options{}, "trace t: empty workload trace"},
		{"an azure header missing a column", "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03,1\n", Options{}, "trace t line 1: missing column GeneratedTokens"},
		{"a burstgpt header missing a column", "Timestamp,Model,Request tokens\n1,a,1\n", Options{},
			`trace t line 1: missing column "Response tokens": a burstgpt trace has the columns Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`},
		{"header only", burst, Options{}, "trace t: no rows: expected at least one request"},
		{"every row skipped", burst + "1,a,0,0,0,b\n2,a,5,0,5,b\n", Options{}, "trace t: no request kept: all 2 rows were skipped (failed_response 2)"},
		{"every row filtered", burst + "1,a,1,1,2,b\n", Options{Filter: gpt4}, "trace t: no request kept: all 1 rows were skipped (filtered 1)"},
		{"burstgpt negative count", burst + "1,a,1,1,2,b\n2,a,4,-3,1,b\n", Options{},
			`trace t line 3: Response tokens "-3": token counts must not be negative`},
		{"burstgpt negative request count of a failed row", burst + "1,a,-1,0,0,b\n", Options{},
			`trace t line 2: Request tokens "-1": token counts must not be negative`},
		{"burstgpt zero prompt of an answered request", burst + "1,a,0,4,4,b\n", Options{},
			`trace t line 2: Request tokens "0": token counts must be positive`},
		{"burstgpt count not an integer", burst + "1,a,1.0,4,5,b\n", Options{},
			`trace t line 2: Request tokens "1.0": expected an integer token count`},
		{"burstgpt count past int64", burst + "1,a,9223372036854775808,4,5,b\n", Options{},
			`Request tokens "9223372036854775808": expected an integer token count`},
		{"burstgpt timestamp not a number", burst + "1,a,1,1,2,b\nsoon,a,1,1,2,b\n", Options{},
			`trace t line 3: Timestamp "soon": expected a number of seconds`},
		{"burstgpt timestamp infinite", burst + "inf,a,1,1,2,b\n", Options{}, `Timestamp "inf": expected a number of seconds`},
		{"burstgpt timestamp out of range", burst + "1e300,a,1,1,2,b\n", Options{}, `Timestamp "1e300": out of range`},
		{"burstgpt unsorted", burst + "10,a,1,1,2,b\n\n5,a,1,1,2,b\n", Options{},
			`trace t line 4: Timestamp "5": earlier than the previous row: the trace must be sorted by time`},
		{"burstgpt unsorted failed row", burst + "10,a,1,1,2,b\n5,a,0,0,0,b\n", Options{}, "trace t line 3: Timestamp"},
		{"burstgpt short row", burst + "1,a,1\n", Options{}, "trace t line 2: missing Response tokens: expected 6 fields as in the header"},
		{"burstgpt short row, filtered column", burst + "1,a,1\n", Options{Filter: gpt4}, "trace t line 2: missing Response tokens"},
		{"burstgpt forced on another header", "Timestamp,Model\n1,a\n", Options{Format: BurstGPT},
			`trace t line 1: missing column "Request tokens": a burstgpt trace has the columns Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`},
		{"burstgpt filter on a missing column", "Timestamp,Request tokens,Response tokens\n1,1,1\n", Options{Filter: gpt4},
			`trace t line 1: missing column "Model"`},
		{"burstgpt bare quote", burst + "1,a\"b,1,1,2,b\n", Options{}, `trace t line 2: bare " in non-quoted-field`},
		{"burstgpt quote left open", burst + "1,\"a,1,1,2,b\n2,a,1,1,2,b\n", Options{}, `trace t line 2: extraneous or missing " in quoted-field`},
		{"error after a quoted field across lines", burst + "1,\"a\nb\",1,1,2,b\n2,a,x,1,2,b\n", Options{},
			`trace t line 4: Request tokens "x": expected an integer token count`},
		{"filter on a mooncake trace", `{"timestamp":1,"input_length":1,"output_length":1}`, Options{Filter: gpt4},
			"trace t: a filter on model or log type applies to burstgpt traces, and this is a mooncake trace"},
		{"mooncake non-integer length", "{\"timestamp\":1,\"input_length\":1,\"output_length\":1}\n{\"timestamp\": 2, \"input_length\": 12.5, \"output_length\": 3}\n", Options{},
			`trace t line 2: input_length "12.5": expected an integer token count`},
		{"mooncake length as a string", `{"timestamp":1,"input_length":1,"output_length":"3"}`, Options{},
			`trace t line 1: output_length "\"3\"": expected an integer token count`},
		{"mooncake length in exponent form", `{"timestamp":1,"input_length":1e3,"output_length":3}`, Options{},
			`trace t line 1: input_length "1e3": expected an integer token count`},
		{"mooncake zero length", `{"timestamp":1,"input_length":0,"output_length":3}`, Options{},
			`trace t line 1: input_length "0": token counts must be positive`},
		{"mooncake missing key", `{"timestamp":1,"input_length":1}`, Options{}, "trace t line 1: missing output_length"},
		{"mooncake timestamp null", `{"timestamp":null,"input_length":1,"output_length":1}`, Options{},
			`trace t line 1: timestamp "null": expected a number of milliseconds`},
		{"mooncake timestamp out of range", `{"timestamp":1e400,"input_length":1,"output_length":1}`, Options{},
			`trace t line 1: timestamp "1e400": out of range`},
		{"mooncake hash ids not integers", `{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":[1,2.5]}`, Options{},
			`trace t line 1: hash_ids "[1,2.5]": expected an array of integers`},
		{"mooncake hash ids not an array", `{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":7}`, Options{},
			`trace t line 1: hash_ids "7": expected an array of integers`},
		{"mooncake invalid JSON", "{\"timestamp\":1,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":1,}\n", Options{},
			"trace t line 2: invalid JSON at byte 16: expected a string key"},
		{"mooncake trailing text", `{"timestamp":1,"input_length":1,"output_length":1} x`, Options{},
			"trace t line 1: invalid JSON at byte 52: expected the end of the line after the object"},
		{"mooncake not an object", "{\"timestamp\":1,\"input_length\":1,\"output_length\":1}\n[1]\n", Options{},
			"trace t line 2: invalid JSON at byte 1: expected an object"},
		{"mooncake unsorted", "{\"timestamp\":5,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":4.999,\"input_length\":1,\"output_length\":1}\n", Options{},
			`trace t line 2: timestamp "4.999": earlier than the previous row`},
		{"mooncake forced on a CSV", "a,b\n", Options{Format: Mooncake}, "trace t line 1: invalid JSON at byte 1: expected an object"},
		{"azure forced on a mooncake trace", `{"timestamp":1}`, Options{Format: Azure}, "trace t line 1: missing column TIMESTAMP"},
		{"azure reader's own errors", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,0,1\n", Options{},
			`trace t line 2: ContextTokens "0": token counts must be positive`},
		{"csv log missing column", "t,p\n1,2\n", Options{Columns: seconds},
			`trace t line 1: missing column "o": the columns named are arrival=t, prompt=p, output=o`},
		{"csv log zero output", "t,p,o\n1,2,0\n", Options{Columns: seconds}, `trace t line 2: o "0": token counts must be positive`},
		{"csv log ISO times mixing offsets", "t,p,o\n2024-05-10 00:00:00+00:00,1,1\n2024-05-10 00:00:01,1,1\n", Options{Columns: iso},
			`trace t line 3: t "2024-05-10 00:00:01": mixes times with and without a UTC offset`},
		{"csv log spanning more than 285 years", "t,p,o\n0001-01-01,1,1\n1000-01-01,1,1\n", Options{Columns: iso},
			`trace t line 3: t "1000-01-01": more than 2^53 microseconds (285 years) after the first row`},
		{"mooncake spanning more than 285 years", "{\"timestamp\":-9e12,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":9e12,\"input_length\":1,\"output_length\":1}", Options{},
			`trace t line 2: timestamp "9e12": more than 2^53 microseconds (285 years) after the first row`},
		{"csv log bad ISO time", "t,p,o\n2024-05-10 00:00:00.+00:00,1,1\n", Options{Columns: iso},
			`trace t line 2: t "2024-05-10 00:00:00.+00:00": expected an ISO 8601 date-time`},
		{"a NUL byte", burst + "1,a,1,1,2,b\n2,a\x00,1,1,2,b\n", Options{}, "trace t line 3: contains a NUL byte: expected text"},
		{"a NUL byte in the first line", "TIME\x00STAMP\n", Options{}, "trace t line 1: contains a NUL byte: expected text"},
		{"a long field is shortened", burst + strings.Repeat("9", 100) + "x,a,1,1,2,b\n", Options{},
			`trace t line 2: Timestamp "` + strings.Repeat("9", limits.MaxQuotedChars) + `"... (101 bytes): expected a number of seconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.text), "t", workload.NoElapsedLimit, tt.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestLoadKeepsTheInputCaps(t *testing.T) {
	caps := readCaps{maxBytes: 200, maxLine: 80}
	long := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,a,1,1,2," + strings.Repeat("b", 90) + "\n"
	tests := []struct {
		name string
		opt  Options
		text string
		want string
	}{
		{"a long line", Options{}, long, "trace t line 2: longer than the 80 bytes line cap"},
		{"a long JSON line", Options{}, `{"timestamp":1,"input_length":1,"output_length":1,"x":"` + strings.Repeat("b", 90) + `"}`,
			"trace t line 1: longer than the 80 bytes line cap"},
		{"a long Azure line", Options{Format: Azure}, "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("9", 90) + "\n",
			"trace t line 2: longer than the 80 bytes line cap"},
		{"too many bytes", Options{}, "Timestamp,Request tokens,Response tokens\n" + strings.Repeat("1,1,1\n", 40), "trace t: 281 bytes: larger than the 200 bytes cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(strings.NewReader(tt.text), "t", workload.NoElapsedLimit, tt.opt, caps)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
	// A stream of unknown size is stopped at the cap as well, in every format.
	for _, format := range []Format{"", Azure} {
		body := "Timestamp,Request tokens,Response tokens\n"
		if format == Azure {
			body = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
		}
		stream := io.MultiReader(strings.NewReader(body + strings.Repeat("1,1,1\n", 40)))
		_, err := load(stream, "t", workload.NoElapsedLimit, Options{Format: format}, caps)
		assert.EqualError(t, err, "trace t: larger than the 200 bytes cap", "format %q", format)
	}
}

// sha256Hex is the SHA-256 of data in hex.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func TestOptionsCheck(t *testing.T) {
	gpt4, err := ParseFilter([]string{"model=GPT-4"})
	require.NoError(t, err)
	cols := mustColumns(t, Seconds, "arrival=a", "prompt=b", "output=c")
	tests := []struct {
		opt  Options
		want *OptionError
	}{
		{Options{}, nil},
		{Options{Filter: gpt4}, nil},
		{Options{Filter: gpt4, Format: BurstGPT}, nil},
		{Options{Columns: cols}, nil},
		{Options{Columns: cols, Format: CSV}, nil},
		{Options{Filter: gpt4, Format: Mooncake}, &OptionError{OptionFilter, "applies to burstgpt traces, not mooncake"}},
		{Options{Filter: gpt4, Columns: cols}, &OptionError{OptionFilter, "applies to burstgpt traces, not csv"}},
		{Options{Columns: cols, Format: Azure}, &OptionError{OptionColumns, "names the columns of a csv log, not of a azure trace"}},
		{Options{Format: CSV}, &OptionError{OptionColumns, "is required for a csv log: name its arrival, prompt and output columns"}},
	}
	for _, tt := range tests {
		err := tt.opt.Check()
		if tt.want == nil {
			assert.NoError(t, err, "%+v", tt.opt)
			continue
		}
		assert.Equal(t, tt.want, err, "%+v", tt.opt)
		_, err = Load(strings.NewReader("x"), "t", workload.NoElapsedLimit, tt.opt)
		assert.Equal(t, tt.want, err, "Load checks the options first")
	}
}

func TestParseFilterAndColumns(t *testing.T) {
	f, err := ParseFilter([]string{"model=GPT-4", "log-type=API log", "model=a=b", "model="})
	require.NoError(t, err)
	assert.Equal(t, Filter{Models: []string{"GPT-4", "a=b", ""}, LogTypes: []string{"API log"}}, f)
	for term, want := range map[string]string{
		"Model=GPT-4": `filter term "Model=GPT-4": unknown key "Model": expected model or log-type`,
		"gpt":         `filter term "gpt": expected KEY=VALUE with KEY model or log-type`,
	} {
		_, err := ParseFilter([]string{term})
		assert.EqualError(t, err, want)
	}

	c, err := ParseColumns([]string{"output=out put", "arrival=a", "prompt=p=q"})
	require.NoError(t, err)
	assert.Equal(t, Columns{Arrival: "a", Prompt: "p=q", Output: "out put", Unit: Seconds}, c)
	for terms, want := range map[string]string{
		"arrival=a,prompt=p":           "no output=COL: name the arrival, prompt and output columns",
		"arrival=a,prompt=p,output=":   `column term "output=": expected a column name after =`,
		"arrival=a,arrival=b":          `column term "arrival=b": arrival is named twice`,
		"time=a,prompt=p,output=o":     `column term "time=a": expected arrival=COL, prompt=COL, output=COL or session=COL`,
		"arrival,prompt=p,output=o":    `column term "arrival": expected arrival=COL, prompt=COL, output=COL or session=COL`,
		"arrival=a,prompt=p,output=o,": `column term "": expected arrival=COL, prompt=COL, output=COL or session=COL`,
	} {
		_, err := ParseColumns(strings.Split(terms, ","))
		assert.EqualError(t, err, want, terms)
	}

	for _, name := range []string{"azure", "burstgpt", "mooncake", "csv"} {
		f, err := ParseFormat(name)
		require.NoError(t, err)
		assert.Equal(t, name, string(f))
	}
	_, err = ParseFormat("parquet")
	assert.EqualError(t, err, `unknown trace format "parquet": expected azure, burstgpt, mooncake or csv`)
	_, err = ParseTimeUnit("min")
	assert.EqualError(t, err, `unknown time unit "min": expected s, ms, us or iso`)
}

func TestLoadStopsAtTheRequestCap(t *testing.T) {
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("2023-11-16 18:17:03.9799600,10,5\n", 5)
	tests := []struct {
		name string
		most int
		want string // "" when the trace loads
	}{
		{"under the cap", 5, ""},
		{"over a cap left by other traces", 4, "trace t.csv: more than 4 requests, what is left of the 50000000 servesim holds at once after the traces read before it"},
		{"the default cap", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(strings.NewReader(csv), "t.csv", workload.NoElapsedLimit, Options{MaxRequests: tt.most})
			if tt.want == "" {
				require.NoError(t, err)
				assert.Len(t, got.Requests, 5)
				return
			}
			var tooMany *TooManyRequestsError
			require.ErrorAs(t, err, &tooMany)
			assert.EqualError(t, err, tt.want)
		})
	}
	full := &TooManyRequestsError{Trace: "big.csv", Most: workload.MaxHeldRequests}
	assert.Equal(t, "trace big.csv: more than 50000000 requests, the most servesim holds at once (cut it with --max-elapsed, or split it)", full.Error())
}
