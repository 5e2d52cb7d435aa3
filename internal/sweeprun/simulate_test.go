package sweeprun

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/simrun"
	"servesim/internal/sweep"
)

// simulateDocument is the document of the simulate --summary run of one
// sweep cell (its controller and service model), members by key as
// written.
func simulateDocument(t *testing.T, cfg Config, controller, serviceModel string) map[string]json.RawMessage {
	t.Helper()
	service := cfg.Service
	service.Kind = serviceModel
	r, err := simrun.Run(context.Background(), simrun.Config{
		MaxElapsedS: cfg.MaxElapsedS, Scheduler: cfg.Schedulers[0], Controller: controller, Stride: 1, Summary: true,
		SLO: cfg.SLO, Plant: plant.NewPlant(nil), MaxSteps: cfg.MaxSteps, ExecTimeoutS: cfg.ExecTimeoutS,
		Engine: cfg.Engine, Service: service, Version: cfg.Version, Stderr: flaggedStderr(io.Discard),
	})
	require.NoError(t, err)
	line, err := jsonout.AppendLine(nil, r.Document())
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &doc))
	return doc
}

// sweepRecords runs the sweep of cfg and returns its run records, members
// by key as written.
func sweepRecords(t *testing.T, cfg Config) []map[string]json.RawMessage {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Plan(1, 1, sweep.DefaultMaxCells))
	out, err := write(t, s, Output{Format: sweep.FormatJSONL, Jobs: 2})
	require.NoError(t, err)
	var runs []map[string]json.RawMessage
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var rec map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &rec))
		if string(rec["kind"]) == `"run"` {
			runs = append(runs, rec)
		}
	}
	return runs
}

// TestCellsEqualSimulateUnderSLOFlags: with --ttft-slo, --tpot-slo and
// --e2e-slo every cell is the simulate --summary run given the same flags,
// number for number: its metrics (violation rates judged by the flags),
// its summary, its slo block and, for mpc (whose objective the flags
// set), its mpc_diagnostics; mpc_diagnostics is null for the others.
func TestCellsEqualSimulateUnderSLOFlags(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.MaxElapsedS = 60
	cfg.Controllers = []string{"max", "race-to-idle", "mpc"}
	cfg.SLO = plant.SLO{TTFTSeconds: 0.4, TPOTSeconds: 0.02, E2ESeconds: 2}
	runs := sweepRecords(t, cfg)
	require.Len(t, runs, len(cfg.Controllers))
	for i, controller := range cfg.Controllers {
		sim := simulateDocument(t, cfg, controller, plant.ServiceReference)
		rec := runs[i]
		require.Equal(t, "null", string(rec["error"]), controller)
		for _, key := range []string{"metrics", "summary", "slo"} {
			assert.JSONEq(t, string(sim[key]), string(rec[key]), "%s: %s", controller, key)
		}
		if controller == "mpc" {
			require.NotNil(t, sim["mpc_diagnostics"])
			assert.JSONEq(t, string(sim["mpc_diagnostics"]), string(rec["mpc_diagnostics"]), "mpc: mpc_diagnostics")
		} else {
			assert.Equal(t, "null", string(rec["mpc_diagnostics"]), controller)
		}
		assert.JSONEq(t, "0.4", string(rec["ttft_slo_s"]), controller)
		assert.JSONEq(t, "0.02", string(rec["tpot_slo_s"]), controller)
	}
	var slo plant.SLOReport
	require.NoError(t, json.Unmarshal(runs[2]["slo"], &slo))
	assert.Equal(t, 2.0, *slo.E2ESLOSeconds, "the e2e objective reaches the run")

	// The flags change what the runs are judged by, and mpc's objective.
	cfg.SLO = plant.SLO{}
	plain := sweepRecords(t, cfg)
	assert.NotEqual(t, string(plain[0]["metrics"]), string(runs[0]["metrics"]), "max: violation rates judged by the flags")
	assert.NotEqual(t, string(plain[2]["metrics"]), string(runs[2]["metrics"]), "mpc: tuned to the flags' objectives")
	assert.JSONEq(t, string(simulateDocument(t, cfg, "mpc", plant.ServiceReference)["slo"]), string(plain[2]["slo"]), "without flags: the profile's SLOs, as simulate")
}

// TestNewChecksTheSLOsAsSimulate: an objective set without flags obeys
// the SLO flags' one rule and message.
func TestNewChecksTheSLOsAsSimulate(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.SLO = plant.SLO{E2ESeconds: -1}
	_, err := New(cfg)
	assert.EqualError(t, err, "e2e-slo -1: expected a finite positive number of seconds")
	cfg.SLO = plant.SLO{TTFTSeconds: 1}
	_, err = New(cfg)
	assert.NoError(t, err)
}
