package trace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// readSource reads s once, collecting its requests.
func readSource(s *Source) ([]workload.Request, workload.Workload, error) {
	var requests []workload.Request
	w, err := s.Read(func(r workload.Request) error {
		requests = append(requests, r)
		return nil
	})
	return requests, w, err
}

// TestSourceReadsAsLoad: a Source hands over the requests Load returns, in
// order, and the same identity, at every pass.
func TestSourceReadsAsLoad(t *testing.T) {
	gpt4, err := ParseFilter([]string{"model=GPT-4"})
	require.NoError(t, err)
	tests := []struct {
		file        string
		opt         Options
		maxElapsedS float64
	}{
		{"azure2023.csv", Options{}, workload.NoElapsedLimit},
		{"azure2024.csv", Options{}, 1.5},
		{"burstgpt.csv", Options{Filter: gpt4}, workload.NoElapsedLimit},
		{"mooncake.jsonl", Options{}, 30},
		{"gateway.csv", Options{Columns: mustColumns(t, Milliseconds, "arrival=arrived_ms", "prompt=prompt", "output=completion")}, workload.NoElapsedLimit},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			loaded, err := loadFile(t, tt.file, tt.maxElapsedS, tt.opt)
			require.NoError(t, err)
			path := filepath.Join("testdata", tt.file)
			s := &Source{Path: path, MaxElapsedS: tt.maxElapsedS, Options: tt.opt}
			assert.Equal(t, path, s.Name())
			assert.True(t, s.Reopenable())
			for pass := range 2 {
				requests, w, err := readSource(s)
				require.NoError(t, err)
				assert.Equal(t, loaded.Requests, requests, "pass %d", pass)
				assert.Nil(t, w.Requests)
				assert.Equal(t, loaded.SHA256, w.SHA256)
				assert.Equal(t, loaded.Skipped, w.Skipped)
				assert.Equal(t, path, w.Source)
			}
			assert.Positive(t, s.Estimate())
		})
	}
}

// TestSourceReadsStandardInputOnce: "-" is standard input, which can be
// read once and has no estimate.
func TestSourceReadsStandardInputOnce(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "burstgpt.csv"))
	require.NoError(t, err)
	s := &Source{Path: "-", Stdin: strings.NewReader(string(data)), MaxElapsedS: workload.NoElapsedLimit}
	assert.Equal(t, "stdin", s.Name())
	assert.False(t, s.Reopenable())
	assert.Zero(t, s.Estimate())
	requests, w, err := readSource(s)
	require.NoError(t, err)
	assert.Len(t, requests, 5)
	assert.Equal(t, "stdin", w.Source)
	_, _, err = readSource(s)
	assert.EqualError(t, err, "trace stdin: standard input can be read only once")
}

// TestSourceStopsAtTheSinksError: Read returns the first error emit
// returns, without reading on.
func TestSourceStopsAtTheSinksError(t *testing.T) {
	for _, file := range []string{"azure2023.csv", "burstgpt.csv", "mooncake.jsonl"} {
		stop := errors.New("stop")
		emitted := 0
		_, err := (&Source{Path: filepath.Join("testdata", file), MaxElapsedS: workload.NoElapsedLimit}).Read(func(workload.Request) error {
			emitted++
			return stop
		})
		assert.ErrorIs(t, err, stop, file)
		assert.Equal(t, 1, emitted, file)
	}
}

// TestSourceErrors: a file that cannot be opened, or a bad row, is the
// error Load gives.
func TestSourceErrors(t *testing.T) {
	_, _, err := readSource(&Source{Path: filepath.Join("testdata", "missing.csv"), MaxElapsedS: workload.NoElapsedLimit})
	assert.ErrorContains(t, err, "trace testdata/missing.csv: open testdata/missing.csv: no such file or directory")
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 1.5}\n"), 0o600))
	_, _, err = readSource(&Source{Path: path, MaxElapsedS: workload.NoElapsedLimit})
	assert.ErrorContains(t, err, `line 1: output_length "1.5": expected an integer token count`)
}
