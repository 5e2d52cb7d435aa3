package scenario

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
	"servesim/internal/workload"
)

// loadTrace reads an Azure-format trace with the plant's loader.
func loadTrace(t *testing.T, csv string) []workload.Request {
	t.Helper()
	w, err := workload.LoadWorkload(strings.NewReader(csv), "a.csv", workload.NoElapsedLimit)
	require.NoError(t, err)
	return w.Requests
}

func TestFromPlantTrace(t *testing.T) {
	requests := loadTrace(t, "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"+
		"2023-11-16 18:17:03.9799600,4808,10\r\n"+
		"2023-11-16 18:17:04.0319600,3180,8\r\n"+
		"2023-11-16 18:17:04.0319619,100,1\r\n"+
		"2023-11-16 18:17:04.0319621,2000,7\r\n")
	want := []WorkloadRequest{
		{RequestID: "req-000", ArrivalMS: 0, SharedPrefixTokens: 1024, UniquePromptTokens: 3784, OutputTokens: 10},
		// 52 ms exactly: float seconds would give 51.99999999999...
		{RequestID: "req-001", ArrivalMS: 52, SharedPrefixTokens: 1024, UniquePromptTokens: 2156, OutputTokens: 8},
		// the plant truncates a 7th fractional digit, as Python's datetime
		// does (not 52.0019); a context shorter than the prefix is all shared
		{RequestID: "req-002", ArrivalMS: 52.001, SharedPrefixTokens: 100, UniquePromptTokens: 0, OutputTokens: 1},
		{RequestID: "req-003", ArrivalMS: 52.002, SharedPrefixTokens: 1024, UniquePromptTokens: 976, OutputTokens: 7},
	}
	got, err := FromPlantTrace(requests, 1024)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	got, err = FromPlantTrace(requests, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, got[0].SharedPrefixTokens)
	assert.Equal(t, 4808, got[0].UniquePromptTokens)

	got, err = FromPlantTrace(requests[1:], 0)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0.001, 0.002}, []float64{got[0].ArrivalMS, got[1].ArrivalMS, got[2].ArrivalMS}, "arrivals count from the first request given")
	assert.Equal(t, "req-000", got[0].RequestID)

	_, err = FromPlantTrace(requests, -1)
	require.EqualError(t, err, "-1 shared-prefix tokens: must not be negative")
	_, err = FromPlantTrace(nil, 0)
	require.EqualError(t, err, "an empty trace: need at least one request")
}

// codeTraceHead returns the header and the first rows of the Azure 2023 code trace.
func codeTraceHead(t *testing.T, rows int) []byte {
	t.Helper()
	f, err := os.Open(sharedtest.CodeTrace(t))
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
	requests := loadTrace(t, string(codeTraceHead(t, ref.Cases[0].Rows)))
	require.Len(t, requests, ref.Cases[0].Rows)
	trace, err := FromPlantTrace(requests, 0)
	require.NoError(t, err)
	arrivals := make([]float64, len(trace))
	for i, r := range trace {
		arrivals[i] = r.ArrivalMS
	}
	requireSameBits(t, ref.ArrivalsMS, arrivals, "arrival_ms")
	summaries := 0
	for _, c := range ref.Cases {
		trace, err := FromPlantTrace(requests, c.SharedPrefixTokens)
		require.NoError(t, err)
		opts := BenchmarkOptions{WorkloadName: "AzureLLMInferenceTrace_code.csv", TTFTSLOMilliseconds: c.TTFTSLOMilliseconds, TPOTSLOMilliseconds: c.TPOTSLOMilliseconds, ClosedLoop: c.ClosedLoop}
		for i, p := range BuiltinProfiles() {
			got, err := EvaluateEngineBenchmark(trace, p, opts)
			require.NoError(t, err)
			require.Equal(t, c.Summaries[i], got, "prefix=%d closed=%v profile=%s", c.SharedPrefixTokens, c.ClosedLoop, p.Name)
			summaries++
		}
	}
	t.Logf("%d Azure replay summaries equal to the reference", summaries)
}
