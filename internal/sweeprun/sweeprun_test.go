package sweeprun

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// dashed names a setting as servesim's flag.
func dashed(s runparams.Setting) string { return "--" + string(s) }

// flagged is err with the settings it names written as servesim's flags,
// as the command words them (runparams.Named).
func flagged(err error) error { return runparams.Named(err, dashed) }

// flaggedStderr is w as servesim hands it to a sweep: its warnings name
// the settings as flags.
func flaggedStderr(w io.Writer) runparams.Warner { return runparams.Warner{Writer: w, Name: dashed} }

// config is a small sweep of the embedded profile and trace: 30 s of
// arrivals, two controllers.
func config() Config {
	return Config{
		Profiles: []string{runparams.Embedded}, Traces: []string{runparams.Embedded},
		Schedulers: []string{"chunked"}, Controllers: []string{"max", "min"}, Normalize: []string{"none"},
		PlantAxes: map[string][]string{}, MaxElapsedS: 30, MaxSteps: plant.DefaultMaxSteps,
		ExecTimeoutS: 1, Engine: runparams.Engine{Preemption: "none"}, Version: "test",
	}
}

func TestNewOrdersTheAxesAndParsesEveryValue(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.PlantAxes = map[string][]string{"power-limit": {"55", "64.8"}, "max-active": {"32"}}
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Plan(2, 2, sweep.DefaultMaxCells))
	var names []string
	for _, a := range s.Shard().Axes {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{"profile", "trace", "scheduler", "controller", "normalize", "max-active", "power-limit"}, names,
		"plant axes in the order of runparams.Params, whatever the map's")
	assert.Equal(t, 2, s.Shard().Len())
	assert.Equal(t, []any{55.0, 64.8}, s.grid.Values("power-limit"))
}

func TestNewNamesTheFlagOfABadValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no value", func(c *Config) { c.Schedulers = nil }, "--scheduler: expected at least one value"},
		{"empty path", func(c *Config) { c.Traces = []string{""} }, "--trace: expected a path or embedded, got an empty value"},
		{"scheduler", func(c *Config) { c.Schedulers = []string{"fifo"} }, "--scheduler: "},
		{"controller", func(c *Config) { c.Controllers = []string{"fixed:abc"} }, "--controller: "},
		{"normalize", func(c *Config) { c.Normalize = []string{"1"} }, `--normalize "1": expected none or a utilization strictly between 0 and 1`},
		{"plant number", func(c *Config) { c.PlantAxes["power-limit"] = []string{"lots"} }, `--power-limit "lots": expected a positive number of W`},
		{"plant rule", func(c *Config) { c.PlantAxes["time-step"] = []string{"-1"} }, "--time-step -1: "},
		{"work", func(c *Config) { c.PlantAxes["max-sim-time"] = []string{"100"}; c.MaxSteps = 1000 }, "= 1001 simulation steps: more than --max-steps 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config()
			tt.edit(&cfg)
			_, err := New(cfg)
			assert.ErrorContains(t, flagged(err), tt.want)
		})
	}
}

func TestPlanNamesTheAxesOfAGridPastTheLimit(t *testing.T) {
	t.Parallel()
	s, err := New(config())
	require.NoError(t, err)
	err = s.Plan(1, 1, 1)
	assert.EqualError(t, err, "sweep: the grid of profile x trace x scheduler x controller x normalize = 1 x 1 x 1 x 2 x 1 = 2 cells: "+
		"more than max-cells 1 (raise max-cells or run it in shards with shard I/N)")
	assert.EqualError(t, flagged(err), "sweep: the grid of --profile x --trace x --scheduler x --controller x --normalize = 1 x 1 x 1 x 2 x 1 = 2 cells: "+
		"more than --max-cells 1 (raise --max-cells or run it in shards with --shard I/N)")
	assert.NoError(t, s.Plan(1, 2, 1), "a shard of one cell")
}

// write runs the sweep s to a buffer, and returns its error.
func write(t *testing.T, s *Sweep, out Output) ([]byte, error) {
	t.Helper()
	out.Stderr = flaggedStderr(io.Discard)
	var buf bytes.Buffer
	err := s.Run(context.Background(), out, func(write func(io.Writer) error) error { return write(&buf) })
	return buf.Bytes(), err
}

// TestResumeCopiesTheRecordsAndChecksTheirGrid resumes from the first
// record of a sweep: the output is the whole sweep's; a record of another
// grid is refused.
func TestResumeCopiesTheRecordsAndChecksTheirGrid(t *testing.T) {
	t.Parallel()
	s, err := New(config())
	require.NoError(t, err)
	require.NoError(t, s.Plan(1, 1, sweep.DefaultMaxCells))
	whole, err := write(t, s, Output{Format: sweep.FormatJSONL, Jobs: 2})
	require.NoError(t, err)
	lines := strings.SplitAfter(string(whole), "\n")
	require.Len(t, lines, 4, "two runs, the Pareto record and nothing after the last newline")

	partial := filepath.Join(t.TempDir(), "out.jsonl.partial")
	require.NoError(t, os.WriteFile(partial, []byte(lines[0]), 0o644))
	resumed, err := write(t, s, Output{Format: sweep.FormatJSONL, Jobs: 1, Resume: partial})
	require.NoError(t, err)
	assert.Equal(t, string(whole), string(resumed))

	other := config()
	other.MaxSteps = 1e8
	o, err := New(other)
	require.NoError(t, err)
	require.NoError(t, o.Plan(1, 1, sweep.DefaultMaxCells))
	_, err = write(t, o, Output{Format: sweep.FormatJSONL, Jobs: 1, Resume: partial})
	assert.ErrorContains(t, flagged(err), "--resume "+partial)
	assert.ErrorContains(t, flagged(err), "the record is of another grid")
	assert.ErrorContains(t, flagged(err), "or another --max-elapsed, --max-steps, --exec-timeout, --ttft-slo, --tpot-slo, --e2e-slo, engine flag")
}

// TestAFailedInputFailsOnlyItsRuns gives a profile that does not load:
// its runs carry the error, the others run.
func TestAFailedInputFailsOnlyItsRuns(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.Profiles = []string{runparams.Embedded, filepath.Join(t.TempDir(), "missing.csv")}
	cfg.Controllers = []string{"max"}
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Plan(1, 1, sweep.DefaultMaxCells))
	out, err := write(t, s, Output{Format: sweep.FormatJSONL, Jobs: 2})
	missing := cfg.Profiles[1]
	assert.EqualError(t, err, "1 of 2 runs failed (see their records' error); the first, cell 1: profile "+missing+": cannot read the profile: does not exist",
		"the count names the first failed run and its error")
	assert.Contains(t, string(out), "missing.csv")
}
