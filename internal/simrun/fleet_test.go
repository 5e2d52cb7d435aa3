package simrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/fleet"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// TestFleetSummaryStreamsTheSameDocument runs fleets on a trace file with
// --summary, streamed, and with the records kept for a request log, which
// loads the trace whole: the documents and the warnings are the same.
func TestFleetSummaryStreamsTheSameDocument(t *testing.T) {
	trace := plant.CodeTraceLike(2, 1200)
	path := filepath.Join(t.TempDir(), "trace.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, trace.WriteCSV2024(f))
	require.NoError(t, f.Close())
	for _, router := range fleet.RouterNames {
		if fleet.NeedsPrefixCache(router) {
			continue // it needs the prefix cache, which is never streamed
		}
		for _, normalize := range []float64{0, 0.8} {
			for _, jobs := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/normalize=%g/jobs=%d", router, normalize, jobs), func(t *testing.T) {
					run := func(requests bool) (string, string) {
						var stderr bytes.Buffer
						cfg := Config{
							TracePath: path, MaxElapsedS: plant.NoElapsedLimit, Normalize: normalize,
							Scheduler: "chunked", Controller: "reactive", Stride: 1, Summary: true,
							Plant: plant.NewPlant(nil), Requests: requests, Version: "test", Stderr: runparams.Warner{Writer: &stderr},
							Fleet: Fleet{Enabled: true, Replicas: 3, Router: router, RouterSeed: 5, Jobs: jobs},
						}
						cfg.Plant.MaxSimulationTimeS = 1500 // the later arrivals are cut: a warning
						res, err := Run(context.Background(), cfg)
						require.NoError(t, err)
						doc, err := json.Marshal(res.Document())
						require.NoError(t, err)
						return string(doc), stderr.String()
					}
					streamedDoc, streamedErr := run(false)
					heldDoc, heldErr := run(true)
					require.Equal(t, heldDoc, streamedDoc)
					require.Equal(t, heldErr, streamedErr)
				})
			}
		}
	}
}

// TestElasticFleetSummaryStreamsTheSameDocument runs elastic fleets on a
// trace file with --summary, streamed (the router takes the requests as
// the grid reaches them, the replicas summarize), and with the records
// kept for a request log, which loads the trace whole: under each policy,
// router and service model, with cold starts, a power budget and requests
// left waiting at the router when the run is cut, the documents and the
// warnings are the same.
func TestElasticFleetSummaryStreamsTheSameDocument(t *testing.T) {
	trace := plant.CodeTraceLike(2, 1200)
	path := filepath.Join(t.TempDir(), "trace.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, trace.WriteCSV2024(f))
	require.NoError(t, f.Close())
	policies := []struct {
		policy     string
		powerLimit float64
	}{
		{"static", 0},
		{"queue:target=2,down=60", 0},
		{"utilization:target=0.05,down=30", 150},
	}
	for _, p := range policies {
		// The routers a plain trace serves streamed (prefix-aware needs the
		// prefix cache, session a session column: both load the trace).
		for _, router := range []string{fleet.RoundRobinName, fleet.RandomName, fleet.LeastOutstandingName, fleet.LeastTokensName} {
			for _, service := range []string{plant.ServiceReference, plant.ServiceBatched} {
				t.Run(fmt.Sprintf("%s/%s/%s", p.policy, router, service), func(t *testing.T) {
					run := func(requests bool) (string, string) {
						var stderr bytes.Buffer
						cfg := Config{
							TracePath: path, MaxElapsedS: plant.NoElapsedLimit,
							Scheduler: "chunked", Controller: "reactive", Stride: 1, Summary: true,
							Plant: plant.NewPlant(nil), Requests: requests, Version: "test", Stderr: runparams.Warner{Writer: &stderr},
							Fleet: Fleet{Enabled: true, Replicas: 2, Router: router, RouterSeed: 5, Scale: Scale{
								Policy: p.policy, MinReplicas: 1, MaxReplicas: 6, IntervalS: 15,
								ProvisionS: 20, LoadS: 10, PowerLimitW: p.powerLimit, PowerBudget: fleet.BudgetEqual,
								GPUCostPerHour: 1, EnergyPricePerKWh: 0.1,
							}},
						}
						cfg.Service = runparams.Service{Kind: service, GPU: cards.DefaultGPU, ModelCard: cards.DefaultModel,
							GPUMemoryUtilization: plant.DefaultGPUMemoryUtilization}
						cfg.Plant.MaxSimulationTimeS = 1150 // the later arrivals are cut: a warning
						require.NoError(t, cfg.Fleet.Scale.Check(cfg.Fleet.Replicas, nil))
						res, err := Run(context.Background(), cfg)
						require.NoError(t, err)
						doc, err := jsonout.AppendLine(nil, res.Document())
						require.NoError(t, err)
						return string(doc), stderr.String()
					}
					streamedDoc, streamedErr := run(false)
					heldDoc, heldErr := run(true)
					require.Equal(t, heldDoc, streamedDoc)
					require.Equal(t, heldErr, streamedErr)
					var doc struct {
						Autoscale struct {
							ReplicasStarted int `json:"replicas_started"`
						} `json:"autoscale"`
					}
					require.NoError(t, json.Unmarshal([]byte(streamedDoc), &doc))
					if p.policy != "static" {
						require.Greater(t, doc.Autoscale.ReplicasStarted, 2, "the policy scaled the fleet")
					}
				})
			}
		}
	}
}

// TestFleetPrefixCacheUsesHashIDs runs a Mooncake trace whose requests
// share hash ids with the prefix cache on one GPU and on fleets (the
// records kept or not): a fleet takes the trace's hash ids (prefix_source
// hash_ids, a hit rate above 0) as one GPU does, and a fleet of one
// replica, which is sent every request, hits the cache as one GPU does.
func TestFleetPrefixCacheUsesHashIDs(t *testing.T) {
	var lines bytes.Buffer
	for i := range 12 {
		// Every request shares its first eight blocks (128 tokens of 16)
		// with the others, then has two of its own.
		fmt.Fprintf(&lines, `{"timestamp": %d, "input_length": 160, "output_length": 4, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8, %d, %d]}`+"\n",
			i*2000, 100+2*i, 101+2*i)
	}
	path := filepath.Join(t.TempDir(), "mooncake.jsonl")
	require.NoError(t, os.WriteFile(path, lines.Bytes(), 0o644))
	run := func(t *testing.T, fleetCfg Fleet, requests bool) *plant.EngineReport {
		cfg := Config{
			TracePath: path, MaxElapsedS: plant.NoElapsedLimit,
			Scheduler: "chunked", Controller: "reactive", Stride: 1, Summary: true,
			Plant: plant.NewPlant(nil), Requests: requests, Version: "test", Stderr: runparams.Warner{Writer: io.Discard},
			Fleet: fleetCfg,
		}
		cfg.Engine.PrefixCache = true
		res, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		if res.fleet != nil {
			require.NotNil(t, res.fleet.Engine)
			return res.fleet.Engine
		}
		require.NotNil(t, res.plant.Engine)
		return res.plant.Engine
	}
	gpu := run(t, Fleet{}, false)
	require.Equal(t, "hash_ids", gpu.PrefixSource)
	require.Greater(t, gpu.PrefixCacheHitRate, 0.5)
	for _, tc := range []struct {
		name  string
		fleet Fleet
		same  bool // every request on one replica: the one GPU's hit rate
	}{
		{"one replica, router given", Fleet{Enabled: true, Replicas: 1, Router: fleet.RoundRobinName}, true},
		{"three replicas, round-robin", Fleet{Enabled: true, Replicas: 3, Router: fleet.RoundRobinName}, false},
		{"three replicas, least-outstanding", Fleet{Enabled: true, Replicas: 3, Router: fleet.LeastOutstandingName}, false},
	} {
		for _, requests := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/requests=%v", tc.name, requests), func(t *testing.T) {
				got := run(t, tc.fleet, requests)
				require.Equal(t, "hash_ids", got.PrefixSource)
				require.Greater(t, got.PrefixCacheHitRate, 0.0)
				if tc.same {
					require.InDelta(t, gpu.PrefixCacheHitRate, got.PrefixCacheHitRate, 1e-12)
					require.Equal(t, gpu.PrefixCachedTokens, got.PrefixCachedTokens)
				}
			})
		}
	}
}
