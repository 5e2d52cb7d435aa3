package diagnose

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFile opens a log file the way a command does, "-" being stdin.
func openFile(stdin string) func(string) (io.ReadCloser, string, error) {
	return func(path string) (io.ReadCloser, string, error) {
		if path == "-" {
			return io.NopCloser(strings.NewReader(stdin)), "stdin", nil
		}
		f, err := os.Open(path)
		return f, path, err
	}
}

func TestLogsReadsEveryFileAsOneLog(t *testing.T) {
	path := filepath.Join("testdata", "logs", "kv_thrashing.csv")
	doc, snapshots, err := Logs([]string{path}, openFile(""), "kv", 0, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, snapshots, 1)
	one := snapshots[0]
	assert.Equal(t, one, doc)
	assert.Equal(t, "kv", one.WindowName)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	_, twice, err := Logs([]string{path, "-"}, openFile(string(data)), "kv", 0, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 2*one.RequestCount, twice[0].RequestCount)

	_, _, err = Logs([]string{"-"}, openFile(""), "stdin", 0, DefaultOptions())
	assert.EqualError(t, err, "request logs stdin: no requests: expected a CSV header row followed by rows, or JSON Lines")
	_, _, err = Logs([]string{filepath.Join("testdata", "missing.csv")}, openFile(""), "x", 0, DefaultOptions())
	assert.ErrorContains(t, err, "request log: open testdata/missing.csv")
}
