package capacity

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

func TestExpandEvaluations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"cap-1.jsonl", "cap-2.jsonl", "odd[1].jsonl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	files, err := expandEvaluations([]string{filepath.Join(dir, "cap-*.jsonl"), filepath.Join(dir, "odd[1].jsonl"), "plain.jsonl"})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "cap-1.jsonl"), filepath.Join(dir, "cap-2.jsonl"), filepath.Join(dir, "odd[1].jsonl"), "plain.jsonl"}, files,
		"a pattern expanded, a file whose name looks like one taken as it is, a plain name kept for the reader to report")

	_, err = expandEvaluations([]string{filepath.Join(dir, "none-*.jsonl")})
	assert.EqualError(t, err, "evaluations "+filepath.Join(dir, "none-*.jsonl")+": no file matches")
	assert.EqualError(t, flagged(err), "--evaluations "+filepath.Join(dir, "none-*.jsonl")+": no file matches")
	var late *runparams.LateUsageError
	assert.NotErrorAs(t, err, &late, "bad input, not a usage error")

	_, err = expandEvaluations([]string{"[x"})
	require.ErrorAs(t, err, &late)
	assert.Equal(t, 2, late.ExitCode())
	assert.EqualError(t, err, `evaluations "[x": not a glob pattern (syntax error in pattern)`)
	assert.EqualError(t, flagged(err), `--evaluations "[x": not a glob pattern (syntax error in pattern)`)
	assert.ErrorAs(t, flagged(err), &late, "named, still a usage error")
}

func TestCount(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "1 file", count(1, "file"))
	assert.Equal(t, "0 files", count(0, "file"))
	assert.Equal(t, "3 records", count(3, "record"))
}

// flagged is err with the settings it names written as servesim's flags,
// as the command words them (runparams.Named).
func flagged(err error) error {
	return runparams.Named(err, func(s runparams.Setting) string { return "--" + string(s) })
}

func config() Config {
	return Config{
		MaxElapsedS: 60, Attainment: 0.5, Router: "round-robin", RouterSeed: 1, Controllers: []string{"max"},
		Scheduler: "chunked", MaxReplicas: 4, Jobs: 1, Plant: plant.NewPlant(nil),
		Engine: runparams.Engine{Preemption: "none"}, Version: "test",
	}
}

func TestLoadNamesThePlantFlag(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.Plant.TimeStepS = -1
	_, err := Load(cfg)
	assert.ErrorContains(t, err, "plant: time-step: ")
	assert.ErrorContains(t, flagged(err), "plant: --time-step: ")
}

// TestRunAndShardAgree runs the search of a minute of the embedded trace,
// and the one shard of its sizes: the document's evaluations are the
// shard's records.
func TestRunAndShardAgree(t *testing.T) {
	t.Parallel()
	study, err := Load(config())
	require.NoError(t, err)
	doc, err := study.Run(context.Background(), nil, Progress{})
	require.NoError(t, err)
	require.NotNil(t, doc.Replicas)
	assert.Equal(t, "test", doc.Provenance.ServesimVersion)

	shard, err := Load(config())
	require.NoError(t, err)
	var out bytes.Buffer
	var stderr bytes.Buffer
	err = shard.RunShard(context.Background(), 1, 1, "", "", Progress{Stderr: runparams.Warner{Writer: &stderr}}, func(write func(w io.Writer) error) error { return write(&out) })
	require.NoError(t, err)
	assert.Equal(t, 3, bytes.Count(out.Bytes(), []byte("\n")), "sizes 1, 2 and 4")
	assert.Empty(t, stderr.String())
}

// TestShardRecordsCarryTheEnergyTotals: each record a shard writes holds
// the energy totals of the document's evaluation of its size, and the run
// given the records writes the plain run's document.
func TestShardRecordsCarryTheEnergyTotals(t *testing.T) {
	t.Parallel()
	study, err := Load(config())
	require.NoError(t, err)
	plain, err := study.Run(context.Background(), nil, Progress{})
	require.NoError(t, err)

	shard, err := Load(config())
	require.NoError(t, err)
	var out bytes.Buffer
	err = shard.RunShard(context.Background(), 1, 1, "", "", Progress{Stderr: runparams.Warner{Writer: io.Discard}}, func(write func(w io.Writer) error) error { return write(&out) })
	require.NoError(t, err)
	records := 0
	for line := range bytes.Lines(out.Bytes()) {
		r, err := ParseEvaluationRecord(bytes.TrimSuffix(line, []byte("\n")))
		require.NoError(t, err, "%s", line)
		got := r.Evaluation()
		for _, e := range plain.Evaluations {
			if e.Replicas == got.Replicas {
				records++
				assert.Positive(t, got.EnergyKWh)
				assert.Equal(t, e.EnergyPerRequestJ, got.EnergyPerRequestJ, "%d replicas", e.Replicas)
				assert.Equal(t, e.EnergyPer1kRequestsKJ, got.EnergyPer1kRequestsKJ, "%d replicas", e.Replicas)
				assert.Equal(t, e.EnergyKWh, got.EnergyKWh, "%d replicas", e.Replicas)
				assert.Equal(t, e.MeanPowerW, got.MeanPowerW, "%d replicas", e.Replicas)
			}
		}
	}
	assert.Equal(t, len(plain.Evaluations), records, "every size the search used is in the grid")

	path := filepath.Join(t.TempDir(), "shard.jsonl")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	final, err := Load(config())
	require.NoError(t, err)
	got, err := final.Run(context.Background(), []string{path}, Progress{Stderr: runparams.Warner{Writer: io.Discard}})
	require.NoError(t, err)
	want, err := jsonout.Chunks(plain)
	require.NoError(t, err)
	have, err := jsonout.Chunks(got)
	require.NoError(t, err)
	assert.Equal(t, string(bytes.Join(want, nil)), string(bytes.Join(have, nil)))
	assert.Contains(t, string(bytes.Join(have, nil)), `"energy_kwh"`)
}
