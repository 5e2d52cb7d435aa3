package trace

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/shared"
)

func TestConvertWritesTheCanonicalForms(t *testing.T) {
	tests := []struct {
		file   string
		opt    Options
		format Format
		want   string
	}{
		{"mooncake.jsonl", Options{}, Azure, `TIMESTAMP,ContextTokens,GeneratedTokens
1970-01-01 00:00:00.000000,6955,52
1970-01-01 00:00:00.000000,6472,26
1970-01-01 00:00:27.482000,6955,52
1970-01-01 00:00:30.535500,511,1
`},
		{"mooncake.jsonl", Options{}, Mooncake, `{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]}
{"timestamp": 0, "input_length": 6472, "output_length": 26, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 60, 61, 62, 63]}
{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]}
{"timestamp": 30535.5, "input_length": 511, "output_length": 1, "hash_ids": [64]}
`},
		{"azure2024.csv", Options{}, Mooncake, `{"timestamp": 0, "input_length": 1024, "output_length": 157, "hash_ids": []}
{"timestamp": 0.07, "input_length": 37, "output_length": 9, "hash_ids": []}
{"timestamp": 1490.07, "input_length": 2048, "output_length": 1, "hash_ids": []}
{"timestamp": 1490.07, "input_length": 612, "output_length": 33, "hash_ids": []}
{"timestamp": 59990.07, "input_length": 9, "output_length": 2, "hash_ids": []}
`},
		{"burstgpt.csv", Options{}, Azure, `TIMESTAMP,ContextTokens,GeneratedTokens
1970-01-01 00:00:00.000000,472,18
1970-01-01 00:00:40.000000,1087,230
1970-01-01 00:01:53.000000,417,276
1970-01-01 00:18:44.000000,1305,477
1970-01-01 01:16:09.250000,1306,267
`},
	}
	for _, tt := range tests {
		t.Run(tt.file+" to "+string(tt.format), func(t *testing.T) {
			tr, err := loadFile(t, tt.file, plant.NoElapsedLimit, tt.opt)
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
		tr, err := loadFile(t, file, plant.NoElapsedLimit, Options{})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, WriteAzure(&buf, tr))
		back, err := Load(&buf, "back", plant.NoElapsedLimit, Options{})
		require.NoError(t, err)
		assert.Equal(t, Azure, back.Format)
		assert.Equal(t, withoutTimestamps(tr.Requests), withoutTimestamps(back.Requests))
		assert.Equal(t, plant.WorkloadChecksum(tr.Requests), plant.WorkloadChecksum(back.Requests))
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestConvertReportsWriteErrorsAndUnknownFormats(t *testing.T) {
	tr, err := loadFile(t, "burstgpt.csv", plant.NoElapsedLimit, Options{})
	require.NoError(t, err)
	for _, format := range ConvertFormats {
		assert.EqualError(t, Convert(failingWriter{}, tr, format), "disk full")
	}
	assert.EqualError(t, Convert(&bytes.Buffer{}, tr, BurstGPT), `cannot convert to "burstgpt": expected azure or mooncake`)
}

func TestAppendMillis(t *testing.T) {
	for us, want := range map[int64]string{0: "0", 1: "0.001", 1500: "1.5", 2000: "2", 1234567: "1234.567", 10: "0.01", 604800000000: "604800000"} {
		assert.Equal(t, want, string(appendMillis(nil, us)), "%d", us)
	}
}

// TestTheAzure2023TracesReadAndConvert reads the shared Azure 2023 traces
// with detection (exactly as plant.LoadWorkload reads them) and converts
// them both ways: the workload checksum is kept.
func TestTheAzure2023TracesReadAndConvert(t *testing.T) {
	for _, path := range []string{shared.CodeTrace(t), shared.ConvTrace(t)} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		want, err := plant.LoadWorkload(bytes.NewReader(data), path, plant.NoElapsedLimit)
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		got, err := Load(f, path, plant.NoElapsedLimit, Options{})
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, Azure, got.Format)
		assert.Equal(t, want, got.Workload)
		checksum := plant.WorkloadChecksum(want.Requests)
		for _, format := range ConvertFormats {
			var buf bytes.Buffer
			require.NoError(t, Convert(&buf, got, format))
			back, err := Load(&buf, "converted", plant.NoElapsedLimit, Options{})
			require.NoError(t, err)
			assert.Equal(t, format, back.Format)
			assert.Equal(t, checksum, plant.WorkloadChecksum(back.Requests), "%s to %s", path, format)
		}
	}
}
