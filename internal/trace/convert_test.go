package trace

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
	"servesim/internal/testsupport"
	"servesim/internal/workload"
)

func TestConvertWritesTheCanonicalForms(t *testing.T) {
	tests := []struct {
		file   string
		opt    Options
		format Format
		want   string
	}{
		{"mooncake.jsonl", Options{}, Azure, `TIMESTAMP,ContextTokens,GeneratedTokens
1970-01-01 00:00:00.000000,6000,40
1970-01-01 00:00:00.000000,5500,30
1970-01-01 00:00:25.000000,6000,40
1970-01-01 00:00:31.250500,500,1
`},
		{"mooncake.jsonl", Options{}, Mooncake, `{"timestamp": 0, "input_length": 6000, "output_length": 40, "hash_ids": [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]}
{"timestamp": 0, "input_length": 5500, "output_length": 30, "hash_ids": [10, 11, 12, 13, 14, 15, 16, 30, 31, 32, 33]}
{"timestamp": 25000, "input_length": 6000, "output_length": 40, "hash_ids": [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]}
{"timestamp": 31250.5, "input_length": 500, "output_length": 1, "hash_ids": [40]}
`},
		{"azure2024.csv", Options{}, Mooncake, `{"timestamp": 0, "input_length": 1024, "output_length": 157, "hash_ids": []}
{"timestamp": 0.07, "input_length": 37, "output_length": 9, "hash_ids": []}
{"timestamp": 1490.07, "input_length": 2048, "output_length": 1, "hash_ids": []}
{"timestamp": 1490.07, "input_length": 612, "output_length": 33, "hash_ids": []}
{"timestamp": 59990.07, "input_length": 9, "output_length": 2, "hash_ids": []}
`},
		{"burstgpt.csv", Options{}, Azure, `TIMESTAMP,ContextTokens,GeneratedTokens
1970-01-01 00:00:00.000000,512,20
1970-01-01 00:00:38.000000,1200,250
1970-01-01 00:01:57.000000,400,300
1970-01-01 00:18:47.000000,1300,480
1970-01-01 01:16:07.250000,1310,260
`},
	}
	for _, tt := range tests {
		t.Run(tt.file+" to "+string(tt.format), func(t *testing.T) {
			tr, err := loadFile(t, tt.file, workload.NoElapsedLimit, tt.opt)
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, Convert(&buf, tr, tt.format))
			assert.Equal(t, tt.want, buf.String())
			roundTrip(t, tr)
		})
	}
}

func TestConvertAzureToAzureReproducesTheRequests(t *testing.T) {
	for _, file := range []string{"azure2023.csv", "azure2024.csv"} {
		tr, err := loadFile(t, file, workload.NoElapsedLimit, Options{})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, WriteAzure(&buf, tr))
		back, err := Load(&buf, "back", workload.NoElapsedLimit, Options{})
		require.NoError(t, err)
		assert.Equal(t, Azure, back.Format)
		assert.Equal(t, tr.Requests, back.Requests)
		assert.Equal(t, workload.WorkloadChecksum(tr.Requests), workload.WorkloadChecksum(back.Requests))
	}
}

func TestConvertReportsWriteErrorsAndUnknownFormats(t *testing.T) {
	tr, err := loadFile(t, "burstgpt.csv", workload.NoElapsedLimit, Options{})
	require.NoError(t, err)
	for _, format := range ConvertFormats {
		assert.EqualError(t, Convert(&testsupport.FailingWriter{Err: errors.New("disk full")}, tr, format), "disk full")
	}
	assert.EqualError(t, Convert(&bytes.Buffer{}, tr, BurstGPT), `cannot convert to "burstgpt": expected azure or mooncake`)
}

// TestConvertWritesSpansUpTo2To53InOrder converts traces whose arrivals
// reach the documented span, 2^53 microseconds (285 years), or go past it:
// the first are written sorted and read back as they were, the others are
// refused before a byte is written (time.Duration overflowed past 292
// years, writing an unsorted trace).
func TestConvertWritesSpansUpTo2To53InOrder(t *testing.T) {
	const span = workload.MaxTraceSpanMicros
	traceOf := func(us ...int64) *Trace {
		requests := make([]workload.Request, len(us))
		for i, x := range us {
			requests[i] = workload.Request{ID: i, ArrivalTimeS: float64(x) / 1e6, PromptTokens: 10, OutputTokens: 2}
		}
		return &Trace{Workload: workload.Workload{Requests: requests, Source: "wide.csv"}, Format: Azure}
	}
	tests := []struct {
		name string
		tr   *Trace
		want string // the error, for both formats; empty when written
	}{
		{"the whole span", traceOf(0, 1, span-1, span), ""},
		{"past the span (2^53+1 microseconds is no float64)", traceOf(0, span+2),
			"trace wide.csv: request 1 arrives at 9007199254.740993 s: expected 0 to 2^53 microseconds (285 years) after the first request"},
		{"2023 to 2400", traceOf(0, 1_000_000, 11_676_096_000_000_000),
			"trace wide.csv: request 2 arrives at 11676096000 s: expected 0 to 2^53 microseconds (285 years) after the first request"},
		{"the saturated span of an int64 of nanoseconds", traceOf(0, math.MaxInt64/1000),
			"trace wide.csv: request 1 arrives at 9223372036.854776 s: expected 0 to 2^53 microseconds (285 years) after the first request"},
		{"a negative arrival", traceOf(-1, 0),
			"trace wide.csv: request 0 arrives at -0.000001 s: expected 0 to 2^53 microseconds (285 years) after the first request"},
	}
	for _, tt := range tests {
		for _, format := range ConvertFormats {
			t.Run(tt.name+" to "+string(format), func(t *testing.T) {
				var buf bytes.Buffer
				err := Convert(&buf, tt.tr, format)
				if tt.want != "" {
					require.EqualError(t, err, tt.want)
					assert.Zero(t, buf.Len(), "nothing is written")
					return
				}
				require.NoError(t, err)
				back, err := Load(&buf, "back", workload.NoElapsedLimit, Options{})
				require.NoError(t, err, buf.String())
				assert.Equal(t, format, back.Format)
				assert.Equal(t, tt.tr.Requests, back.Requests)
			})
		}
	}
}

func TestAppendMillis(t *testing.T) {
	for us, want := range map[int64]string{0: "0", 1: "0.001", 1500: "1.5", 2000: "2", 1234567: "1234.567", 10: "0.01", 604800000000: "604800000"} {
		assert.Equal(t, want, string(appendMillis(nil, us)), "%d", us)
	}
}

// TestTheAzure2023TracesReadAndConvert reads the shared Azure 2023 traces
// with detection (exactly as workload.LoadWorkload reads them) and converts
// them both ways: the workload checksum is kept.
func TestTheAzure2023TracesReadAndConvert(t *testing.T) {
	for _, path := range []string{sharedtest.CodeTrace(t), sharedtest.ConvTrace(t)} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		want, err := workload.LoadWorkload(bytes.NewReader(data), path, workload.NoElapsedLimit)
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		got, err := Load(f, path, workload.NoElapsedLimit, Options{})
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, Azure, got.Format)
		assert.Equal(t, want, got.Workload)
		checksum := workload.WorkloadChecksum(want.Requests)
		for _, format := range ConvertFormats {
			var buf bytes.Buffer
			require.NoError(t, Convert(&buf, got, format))
			back, err := Load(&buf, "converted", workload.NoElapsedLimit, Options{})
			require.NoError(t, err)
			assert.Equal(t, format, back.Format)
			assert.Equal(t, checksum, workload.WorkloadChecksum(back.Requests), "%s to %s", path, format)
		}
	}
}
