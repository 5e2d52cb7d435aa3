package sweeprun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// serviceConfig is config() with the service flags at their defaults and
// the service models given.
func serviceConfig(models ...string) Config {
	cfg := config()
	cfg.ServiceModels = models
	cfg.Service = runparams.Service{GPU: cards.DefaultGPU, ModelCard: cards.DefaultModel, GPUMemoryUtilization: plant.DefaultGPUMemoryUtilization}
	return cfg
}

// planned is the sweep of cfg, checked and planned whole.
func planned(t *testing.T, cfg Config) *Sweep {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Plan(1, 1, sweep.DefaultMaxCells))
	return s
}

// TestASweepOfTheReferenceModelKeepsItsIdentity: without --service-model,
// or with the reference's alone, a sweep has no service axis and the
// grid_sha256 it had before the service models (digests computed by the
// sweep before they came: they must never change, or --resume and sweep
// merge refuse the outputs written before).
func TestASweepOfTheReferenceModelKeepsItsIdentity(t *testing.T) {
	t.Parallel()
	kvAxis := map[string][]string{"kv-capacity": {"65536", "131072"}}
	tests := []struct {
		name   string
		models []string
		plant  map[string][]string
		want   string
	}{
		{"no flag", nil, nil, "68e89187be446272f6dd9a4e9845434d00ec2dbaded0c60aa7a0f5399ab96c1c"},
		{"reference", []string{plant.ServiceReference}, nil, "68e89187be446272f6dd9a4e9845434d00ec2dbaded0c60aa7a0f5399ab96c1c"},
		{"no flag, a kv-capacity axis", nil, kvAxis, "ca294ef7c609ca7818aaf3a1b0a7975484531ca417842b32a8debceb450a0c55"},
		{"reference, a kv-capacity axis", []string{plant.ServiceReference}, kvAxis, "ca294ef7c609ca7818aaf3a1b0a7975484531ca417842b32a8debceb450a0c55"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := serviceConfig(tt.models...)
			if tt.plant != nil {
				cfg.PlantAxes = tt.plant
			}
			s := planned(t, cfg)
			assert.False(t, s.grid.Has(AxisServiceModel))
			assert.Equal(t, tt.want, s.identify(s.load()).digest)
			for _, kv := range sweep.CellAxes(s.grid, s.Shard().Cell(0), axisKey) {
				assert.NotEqual(t, plant.FieldServiceModel, kv.Key)
			}
		})
	}
}

// TestTheServiceAxis: more than one service model, or the batched one,
// make an axis after normalize, written service_model; the axis and the
// batched model's cards enter the grid's identity.
func TestTheServiceAxis(t *testing.T) {
	t.Parallel()
	plain := planned(t, serviceConfig())
	plainID := plain.identify(plain.load()).digest
	tests := []struct {
		name   string
		models []string
		cells  int
	}{
		{"both", []string{plant.ServiceReference, plant.ServiceBatched}, 4},
		{"batched", []string{plant.ServiceBatched}, 2},
		{"reference twice", []string{plant.ServiceReference, plant.ServiceReference}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := planned(t, serviceConfig(tt.models...))
			var names []string
			for _, a := range s.Shard().Axes {
				names = append(names, a.Name)
			}
			assert.Equal(t, []string{"profile", "trace", "scheduler", "controller", "normalize", "service-model"}, names)
			assert.Equal(t, tt.cells, s.Shard().Len())
			axes := sweep.CellAxes(s.grid, s.Shard().Cell(0), axisKey)
			assert.Equal(t, jsonout.Member{Key: plant.FieldServiceModel, Value: tt.models[0]}, axes[len(axes)-1])
			id := s.identify(s.load()).digest
			assert.NotEqual(t, plainID, id)

			h100 := serviceConfig(tt.models...)
			h100.Service.GPU = "H100"
			o := planned(t, h100)
			if s.batched() {
				assert.NotEqual(t, id, o.identify(o.load()).digest, "other cards: another grid")
			} else {
				assert.Equal(t, id, o.identify(o.load()).digest, "no batched run: the cards do not matter")
			}
		})
	}
}

// TestNewRefusesAnUnknownServiceModel names the setting and the models.
func TestNewRefusesAnUnknownServiceModel(t *testing.T) {
	t.Parallel()
	_, err := New(serviceConfig(plant.ServiceReference, "vllm"))
	assert.EqualError(t, err, `service-model "vllm": expected reference or batched`)
}

// TestBatchedCellsEqualSimulate: each cell of a mixed sweep is the
// simulate --summary run of its service model, number for number (the
// batched one on the cards' KV capacity, preempting by recomputation).
func TestBatchedCellsEqualSimulate(t *testing.T) {
	t.Parallel()
	cfg := serviceConfig(plant.ServiceReference, plant.ServiceBatched)
	cfg.MaxElapsedS = 60
	cfg.Controllers = []string{"max"}
	runs := sweepRecords(t, cfg)
	require.Len(t, runs, 2)
	for i, model := range cfg.ServiceModels {
		rec := runs[i]
		require.Equal(t, "null", string(rec["error"]), model)
		assert.JSONEq(t, `"`+model+`"`, string(rec[plant.FieldServiceModel]), model)
		sim := simulateDocument(t, cfg, "max", model)
		for _, key := range []string{"metrics", "summary", "slo"} {
			assert.JSONEq(t, string(sim[key]), string(rec[key]), "%s: %s", model, key)
		}
	}
	assert.NotEqual(t, string(runs[0]["summary"]), string(runs[1]["summary"]), "the models serve differently")
}

// TestAKVCapacityAxisWinsOverTheCards: a batched cell of a sweep with
// --kv-capacity runs on its value, not on the cards' KV capacity.
func TestAKVCapacityAxisWinsOverTheCards(t *testing.T) {
	t.Parallel()
	peakKV := func(rec map[string]json.RawMessage) float64 {
		var summary struct {
			PeakKVTokens float64 `json:"peak_kv_tokens"`
		}
		require.NoError(t, json.Unmarshal(rec["summary"], &summary))
		return summary.PeakKVTokens
	}
	cfg := serviceConfig(plant.ServiceBatched)
	cfg.MaxElapsedS = 60
	cfg.Controllers = []string{"max"}
	fromCards := sweepRecords(t, cfg)
	require.Len(t, fromCards, 1)
	const small = 2048
	require.Greater(t, peakKV(fromCards[0]), float64(small), "the cards' KV cache holds more than the axis value")
	cfg.PlantAxes = map[string][]string{"kv-capacity": {"2048"}}
	axis := sweepRecords(t, cfg)
	require.Len(t, axis, 1)
	assert.Equal(t, "null", string(axis[0]["error"]))
	assert.LessOrEqual(t, peakKV(axis[0]), float64(small))
}

// TestCardsThatDoNotReadFailOnlyTheBatchedRuns: a model card file that is
// not a card fails the batched runs; the reference's run.
func TestCardsThatDoNotReadFailOnlyTheBatchedRuns(t *testing.T) {
	t.Parallel()
	card := filepath.Join(t.TempDir(), "model.json")
	require.NoError(t, os.WriteFile(card, []byte("{not json"), 0o644))
	cfg := serviceConfig(plant.ServiceReference, plant.ServiceBatched)
	cfg.Controllers = []string{"max"}
	cfg.Service.ModelCard = card
	s := planned(t, cfg)
	out, err := write(t, s, Output{Format: sweep.FormatJSONL, Jobs: 2})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "1 of 2 runs failed (see their records' error); the first, cell 1: model card "+card+": "), err.Error())
	lines := strings.Split(string(out), "\n")
	assert.Contains(t, lines[0], `"service_model":"reference"`)
	assert.Contains(t, lines[0], `"error":null`)
	assert.Contains(t, lines[1], `"service_model":"batched"`)
	assert.Contains(t, lines[1], "model.json")
}

// TestResumeRefusesOtherCards: the records of a sweep on other cards are
// of another grid.
func TestResumeRefusesOtherCards(t *testing.T) {
	t.Parallel()
	cfg := serviceConfig(plant.ServiceReference, plant.ServiceBatched)
	whole, err := write(t, planned(t, cfg), Output{Format: sweep.FormatJSONL, Jobs: 2})
	require.NoError(t, err)
	partial := filepath.Join(t.TempDir(), "out.jsonl.partial")
	require.NoError(t, os.WriteFile(partial, []byte(strings.SplitAfter(string(whole), "\n")[0]), 0o644))

	resumed, err := write(t, planned(t, cfg), Output{Format: sweep.FormatJSONL, Jobs: 1, Resume: partial})
	require.NoError(t, err)
	assert.Equal(t, string(whole), string(resumed))

	cfg.Service.GPU = "A100-80GB"
	_, err = write(t, planned(t, cfg), Output{Format: sweep.FormatJSONL, Jobs: 1, Resume: partial})
	assert.ErrorContains(t, err, "the record is of another grid")
}
