package scenario

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/shared"
)

func TestReadAzureTrace(t *testing.T) {
	const crlf = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n" +
		"2023-11-16 18:17:03.9799600,4808,10\r\n" +
		"2023-11-16 18:17:04.0319600,3180,8\r\n" +
		"2023-11-16 18:17:04.0319601,100,1\r\n"
	want := []WorkloadRequest{
		{RequestID: "req-000", ArrivalMS: 0, SharedPrefixTokens: 1024, UniquePromptTokens: 3784, OutputTokens: 10},
		// 52 ms exactly: float seconds would give 51.99999999999...
		{RequestID: "req-001", ArrivalMS: 52, SharedPrefixTokens: 1024, UniquePromptTokens: 2156, OutputTokens: 8},
		// one 100 ns tick later; a context shorter than the prefix is all shared
		{RequestID: "req-002", ArrivalMS: 52.0001, SharedPrefixTokens: 100, UniquePromptTokens: 0, OutputTokens: 1},
	}
	got, err := ReadAzureTrace(strings.NewReader(crlf), "a.csv", 1024)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	lf := strings.ReplaceAll(crlf, "\r\n", "\n")
	got, err = ReadAzureTrace(strings.NewReader(lf), "a.csv", 1024)
	require.NoError(t, err)
	assert.Equal(t, want, got, "LF and CRLF give the same trace")

	reordered := "\ufeffGeneratedTokens,Extra,TIMESTAMP,ContextTokens\n10,x,2023-11-16T18:17:03.97996Z,4808\n8,y,2023-11-16 18:17:04.03196,3180\n"
	got, err = ReadAzureTrace(strings.NewReader(reordered), "a.csv", 1024)
	require.NoError(t, err)
	assert.Equal(t, want[:2], got, "column order, extra columns, a BOM, T and Z do not matter")

	got, err = ReadAzureTrace(strings.NewReader(crlf), "a.csv", 0)
	require.NoError(t, err)
	assert.Equal(t, 0, got[0].SharedPrefixTokens)
	assert.Equal(t, 4808, got[0].UniquePromptTokens)
}

func TestReadAzureTraceErrors(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const first = "2023-11-16 18:17:03.9799600,4808,10\n"
	tests := []struct {
		name, input, want string
	}{
		{"negative output", header + first + "2023-11-16 18:17:04.0,10,-3\n", `trace a.csv line 3: GeneratedTokens "-3": token counts must be positive`},
		{"zero context", header + first + "2023-11-16 18:17:04.0,0,3\n", `trace a.csv line 3: ContextTokens "0": token counts must be positive`},
		{"fractional tokens", header + "2023-11-16 18:17:04.0,1.5,3\n", `trace a.csv line 2: ContextTokens "1.5": expected a whole number of tokens`},
		{"bad timestamp", header + "16/11/2023 18:17,1,3\n", `trace a.csv line 2: TIMESTAMP "16/11/2023 18:17": expected a date and time like 2023-11-16 18:17:03.9799600`},
		{"before the first row", header + first + "2023-11-16 18:17:03.9799599,1,1\n", `trace a.csv line 3: TIMESTAMP "2023-11-16 18:17:03.9799599": earlier than the first row's 2023-11-16 18:17:03.97996: arrivals are measured from the first row`},
		{"missing column", "TIMESTAMP,ContextTokens\n" + "2023-11-16 18:17:03,1\n", `trace a.csv line 1: missing column GeneratedTokens: expected a header with TIMESTAMP,ContextTokens,GeneratedTokens`},
		{"repeated column", "TIMESTAMP,ContextTokens,GeneratedTokens,TIMESTAMP\n", `trace a.csv line 1: column TIMESTAMP appears twice`},
		{"wrong field count", header + first + "2023-11-16 18:17:04,1\n", `trace a.csv line 3: wrong number of fields`},
		{"header only", header, `trace a.csv: no requests after the header`},
		{"empty", "", `trace a.csv: empty file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadAzureTrace(strings.NewReader(tt.input), "a.csv", 0)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := ReadAzureTrace(strings.NewReader(header+first), "a.csv", -1)
	require.EqualError(t, err, "trace a.csv: -1 shared-prefix tokens: must not be negative")
}

// codeTraceHead returns the header and the first rows of the Azure 2023 code trace.
func codeTraceHead(t *testing.T, rows int) []byte {
	t.Helper()
	f, err := os.Open(shared.CodeTrace(t))
	require.NoError(t, err)
	defer f.Close()
	var head bytes.Buffer
	sc := bufio.NewScanner(f)
	for i := 0; i <= rows && sc.Scan(); i++ {
		head.Write(sc.Bytes())
		head.WriteString("\r\n")
	}
	require.NoError(t, sc.Err())
	return head.Bytes()
}

func TestAzureReplayMatchesReference(t *testing.T) {
	rc := loadReferenceCases(t)
	ref := rc.AzureCodeFirst200
	require.NotEmpty(t, ref.Cases)
	head := codeTraceHead(t, ref.Cases[0].Rows)
	trace, err := ReadAzureTrace(bytes.NewReader(head), "code.csv", 0)
	require.NoError(t, err)
	arrivals := make([]float64, len(trace))
	for i, r := range trace {
		arrivals[i] = r.ArrivalMS
	}
	requireSameBits(t, ref.ArrivalsMS, arrivals, "arrival_ms")
	summaries := 0
	for _, c := range ref.Cases {
		trace, err := ReadAzureTrace(bytes.NewReader(head), "code.csv", c.SharedPrefixTokens)
		require.NoError(t, err)
		opts := BenchmarkOptions{WorkloadName: "AzureLLMInferenceTrace_code.csv", TTFTSLOMS: c.TTFTSLOMS, TPOTSLOMS: c.TPOTSLOMS, ClosedLoop: c.ClosedLoop}
		for i, p := range BuiltinProfiles() {
			got, err := EvaluateEngineBenchmark(trace, p, opts)
			require.NoError(t, err)
			require.Equal(t, c.Summaries[i], got, "prefix=%d closed=%v profile=%s", c.SharedPrefixTokens, c.ClosedLoop, p.Name)
			summaries++
		}
	}
	t.Logf("%d Azure replay summaries equal to the reference", summaries)
}

// FuzzReadAzureTrace checks that any input either fails with a one-line
// error or yields a usable workload.
func FuzzReadAzureTrace(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.0319600,3180,8\r\n", 512)
	f.Add("GeneratedTokens,TIMESTAMP,ContextTokens\n1,2023-11-16T18:17:03Z,1\n", 0)
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n\"2023-11-16 18:17:03\",\"1\",2\n", 3)
	f.Fuzz(func(t *testing.T, input string, prefix int) {
		trace, err := ReadAzureTrace(strings.NewReader(input), "fuzz.csv", prefix)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if len(trace) == 0 || trace[0].ArrivalMS != 0 {
			t.Fatalf("a trace must start at 0: %+v", trace)
		}
		for _, r := range trace {
			if !(r.ArrivalMS >= 0) || math.IsInf(r.ArrivalMS, 0) || r.OutputTokens < 1 ||
				r.SharedPrefixTokens < 0 || r.UniquePromptTokens < 0 || r.SharedPrefixTokens > prefix {
				t.Fatalf("bad request %+v", r)
			}
		}
		if _, err := EvaluateEngineBenchmark(trace, BuiltinProfiles()[0], DefaultBenchmarkOptions()); err != nil {
			t.Fatalf("accepted a trace the replay rejects: %v", err)
		}
	})
}
