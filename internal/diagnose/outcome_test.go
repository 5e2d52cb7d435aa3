package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogsOutcomeNamesTheWindowAfterItsInput reads a sample log as a file
// and as stdin: the snapshot is named after the file's base name, or
// stdin, and the table and figure are the snapshot's.
func TestLogsOutcomeNamesTheWindowAfterItsInput(t *testing.T) {
	t.Parallel()
	logs, err := filepath.Glob("testdata/logs/*.csv")
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	data, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	for _, tt := range []struct {
		files  []string
		window string
		want   string
	}{
		{logs[:1], "", filepath.Base(logs[0])},
		{[]string{"-"}, "", "stdin"},
		{[]string{"-"}, "spike", "spike"},
	} {
		out, err := LogsOutcome(tt.files, strings.NewReader(string(data)), tt.window, 0, DefaultOptions())
		require.NoError(t, err, tt.files)
		assert.Contains(t, out.Table(), tt.want)
		assert.Equal(t, tt.want, out.Document.(Diagnosis).WindowName)
	}
	_, err = LogsOutcome([]string{"testdata/missing.csv"}, nil, "", 0, DefaultOptions())
	assert.ErrorContains(t, err, "testdata/missing.csv")
}

func TestDemoOutcomeIsTheDemo(t *testing.T) {
	t.Parallel()
	out, err := DemoOutcome(DefaultOptions())
	require.NoError(t, err)
	report, err := Demo(DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, report, out.Document)
	assert.Equal(t, report.Table(), out.Table())
}
