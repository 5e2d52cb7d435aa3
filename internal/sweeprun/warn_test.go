package sweeprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/simrun"
	"servesim/internal/sweep"
)

// runStderr runs the sweep of cfg and returns its JSON Lines output and
// what it wrote on stderr.
func runStderr(t *testing.T, cfg Config) (string, string) {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Plan(1, 1, sweep.DefaultMaxCells))
	var out, errOut bytes.Buffer
	err = s.Run(context.Background(), Output{Format: sweep.FormatJSONL, Jobs: 2, Stderr: flaggedStderr(&errOut)},
		func(write func(io.Writer) error) error { return write(&out) })
	require.NoError(t, err)
	return out.String(), errOut.String()
}

// simulateWarning is what simulate --summary says on stderr of the run of
// cfg's first cell with --max-sim-time maxSimTime.
func simulateWarning(t *testing.T, cfg Config, maxSimTime float64) string {
	t.Helper()
	p := plant.NewPlant(nil)
	p.MaxSimulationTimeS = maxSimTime
	var errOut bytes.Buffer
	_, err := simrun.Run(context.Background(), simrun.Config{
		MaxElapsedS: cfg.MaxElapsedS, Scheduler: cfg.Schedulers[0], Controller: cfg.Controllers[0], Stride: 1, Summary: true,
		Plant: p, MaxSteps: cfg.MaxSteps, ExecTimeoutS: cfg.ExecTimeoutS, Engine: cfg.Engine, Version: cfg.Version, Stderr: flaggedStderr(&errOut),
	})
	require.NoError(t, err)
	return errOut.String()
}

// TestSweepWarnsOfRunsCutShortByMaxSimTime: the embedded trace's first
// 30 s of arrivals (39 requests) under --max-sim-time 10 leave 30 of them
// unfinished in every run. The sweep says so once per trace and
// --normalize (and --max-sim-time, an axis), naming its cells and the
// --max-sim-time that covers the trace in simulate's words; a sweep whose
// runs finish says nothing.
func TestSweepWarnsOfRunsCutShortByMaxSimTime(t *testing.T) {
	t.Parallel()
	const why = "30 of 39 requests could not complete in each of its 2 runs (cells %s): arrivals run to 30.0 s, past --max-sim-time 10; " +
		"--max-sim-time 60 covers them (the last arrival plus 10%%, rounded up to a minute)\n"
	tests := []struct {
		name       string
		maxSimTime []string
		normalize  []string
		want       []string
	}{
		{"every run finishes", nil, []string{"none"}, nil},
		{"the covering value", []string{"60"}, []string{"none"}, nil},
		{"every run cut short", []string{"10"}, []string{"none"},
			[]string{"servesim: sweep: --trace embedded --normalize none --max-sim-time 10: " + fmt.Sprintf(why, "0-1")}},
		{"one line per trace and normalize", []string{"10", "60"}, []string{"none", "0.9"}, []string{
			"servesim: sweep: --trace embedded --normalize none --max-sim-time 10: " + fmt.Sprintf(why, "0, 4"),
			"servesim: sweep: --trace embedded --normalize 0.9 --max-sim-time 10: " + fmt.Sprintf(why, "2, 6"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config()
			cfg.Normalize = tt.normalize
			if tt.maxSimTime != nil {
				cfg.PlantAxes["max-sim-time"] = tt.maxSimTime
			}
			out, errOut := runStderr(t, cfg)
			var cut []string
			for line := range strings.Lines(errOut) {
				if !strings.Contains(line, "--normalize left the arrivals") { // 0.9 is above the trace's own load
					cut = append(cut, line)
				}
			}
			assert.Equal(t, tt.want, cut)
			for line := range strings.Lines(out) {
				var rec struct {
					Kind    string
					Metrics *struct {
						Unfinished *float64 `json:"unfinished_requests_at_end"`
					}
					MaxSimTime float64 `json:"maximum_simulation_time_s"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				if rec.Kind != "run" {
					continue
				}
				require.NotNil(t, rec.Metrics.Unfinished, "every record carries its unfinished count")
				if rec.MaxSimTime == 10 {
					assert.Equal(t, 30.0, *rec.Metrics.Unfinished, line)
				} else {
					assert.Zero(t, *rec.Metrics.Unfinished, line)
				}
			}
		})
	}
}

// TestSweepWarnsInSimulatesWords: a cell cut short is explained, and its
// --max-sim-time suggested, as simulate explains the same run.
func TestSweepWarnsInSimulatesWords(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.Controllers = []string{"max"}
	cfg.PlantAxes["max-sim-time"] = []string{"10"}
	_, errOut := runStderr(t, cfg)
	simulate := simulateWarning(t, cfg, 10)
	require.NotEmpty(t, simulate)
	_, sweepWhy, _ := strings.Cut(errOut, "could not complete in its run (cell 0): ")
	_, simulateWhy, _ := strings.Cut(simulate, "could not complete: ")
	assert.Equal(t, simulateWhy, sweepWhy)
	assert.Equal(t, "servesim: sweep: --trace embedded --normalize none --max-sim-time 10: 30 of 39 requests could not complete in its run (cell 0): "+simulateWhy, errOut)
}

// TestCutShortWarning writes the warning of groups of runs as many cells
// make them: the fewest and most requests left, the cells listed up to a
// bound, the latest arrival's --max-sim-time.
func TestCutShortWarning(t *testing.T) {
	t.Parallel()
	many := []sweep.CellRange{}
	for c := 0; c < 1000; c += 5 {
		many = sweep.AddCells(many, c, c)
	}
	tests := []struct {
		name  string
		group cutGroup
		want  string
	}{
		{"some of the runs", cutGroup{key: cutKey{trace: "a.csv", normalize: "0.5", maxSimTimeS: 3600}, runs: 6, cut: sweep.AddCells(nil, 3, 3),
			maxUnfinished: 812, minUnfinished: 812, requests: 1000, last: 5400},
			"servesim: sweep: --trace a.csv --normalize 0.5: 812 of 1000 requests could not complete in 1 of its 6 runs (cell 3): " +
				"arrivals run to 5400.0 s, past --max-sim-time 3600; --max-sim-time 5940 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
		{"a thousand cells", cutGroup{key: cutKey{trace: "a.csv", normalize: "none", maxSimTimeS: 3600}, runs: 400, cut: many,
			maxUnfinished: 900, minUnfinished: 12, requests: 1000, last: 5838.2},
			"servesim: sweep: --trace a.csv --normalize none: 12 to 900 of 1000 requests could not complete in 200 of its 400 runs " +
				"(cells 0, 5, 10, 15, 20, 25, 30, 35, 40, 45, and 190 more ranges): " +
				"arrivals run to 5838.2 s, past --max-sim-time 3600; --max-sim-time 6480 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
		{"no run cut short", cutGroup{key: cutKey{trace: "a.csv", normalize: "none", maxSimTimeS: 3600}, runs: 4}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			(&cutShort{groups: map[cutKey]*cutGroup{tt.group.key: &tt.group}}).warn(flaggedStderr(&b))
			assert.Equal(t, tt.want, b.String())
		})
	}
}
