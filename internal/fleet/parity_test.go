package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/paritytest"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/sharedtest"
	"servesim/internal/testsupport"
)

// parityGolden is the golden file of the round-robin fleet runs.
const parityGolden = "parity_round_robin.json.gz"

// fleetRun is the configuration of one reference fleet run.
type fleetRun struct {
	profile, scheduler, controller string
	replicas                       int
	maxElapsedS                    float64 // 0: the whole trace
	plant                          map[string]float64
}

// fleetRuns are the reference runs by file name (testdata/README.md lists
// the commands that make them): round-robin fleets on the Azure 2023 code
// trace, whose replica k runs the reference's simulate on requests k, k+N,
// k+2N, ... with their fleet-time arrivals.
var fleetRuns = map[string]fleetRun{
	"first300s_rr2":           {"l4_proxy", "chunked", "reactive", 2, 300, nil},
	"first300s_rr3":           {"l4_synthetic", "static", "max", 3, 300, nil},
	"first300s_rr4":           {"l4_proxy", "continuous", "sampled-reactive:1.0", 4, 300, nil},
	"first300s_rr5":           {"l4_proxy", "chunked", "fixed:660", 5, 300, nil},
	"first300s_rr3_sim200":    {"l4_synthetic", "chunked", "reactive", 3, 300, map[string]float64{"maximum_simulation_time_s": 200}},
	"first300s_rr3_thermal45": {"l4_proxy", "static", "max", 3, 300, map[string]float64{"thermal_limit_c": 45}},
	"first300s_rr6_kv20000":   {"l4_proxy", "continuous", "reactive", 6, 300, map[string]float64{"kv_capacity_tokens": 20000, "maximum_active_requests": 4}},
	"full_rr4":                {"l4_proxy", "chunked", "max", 4, 0, nil},
	"full_rr8":                {"l4_proxy", "chunked", "reactive", 8, 0, nil},
	"full_rr16":               {"l4_synthetic", "continuous", "sampled-reactive:1.0", 16, 0, nil},
}

// fleetGolden is one reference fleet run: a golden run per replica.
type fleetGolden struct {
	Name     string              `json:"name"`
	Replicas []paritytest.Golden `json:"replicas"`
}

// parityPlant is the plant of a run, with its parameters.
func parityPlant(t testing.TB, prof *profile.Profile, params map[string]float64) plant.Plant {
	p := plant.NewPlant(prof)
	for name, v := range params {
		switch name {
		case "maximum_simulation_time_s":
			p.MaxSimulationTimeS = v
		case "thermal_limit_c":
			p.ThermalLimitC = v
		case "kv_capacity_tokens":
			p.KVCapacityTokens = v
		case "maximum_active_requests":
			p.MaxActiveRequests = int(v)
		default:
			t.Fatalf("unknown plant parameter %s", name)
		}
	}
	return p
}

// TestParityWithReference checks every replica of the round-robin fleets,
// simulated both in parallel and in lock-step, against the reference's
// simulate on its sub-list: metrics, trajectory and request records to
// 1e-9 relative.
func TestParityWithReference(t *testing.T) {
	trace := sharedtest.CodeTrace(t)
	if testsupport.Updating() {
		writeFleetGolden(t)
	}
	var goldens []fleetGolden
	paritytest.ReadGzipJSON(t, filepath.Join("testdata", parityGolden), &goldens)
	require.Len(t, goldens, len(fleetRuns))
	var worst paritytest.Diff
	runs := 0
	for _, golden := range goldens {
		run, ok := fleetRuns[golden.Name]
		require.True(t, ok, golden.Name)
		requests := loadCodeTrace(t, trace, run.maxElapsedS)
		prof, err := profile.Load(sharedtest.Reference(t, "data", run.profile, "l4_profile.csv"))
		require.NoError(t, err)
		cfg := Config{
			Plant:   parityPlant(t, nil, run.plant),
			Groups:  []Group{{Replicas: run.replicas, Profile: prof, Scheduler: run.scheduler, Controller: run.controller}},
			Options: plant.Options{Stride: 50},
		}
		require.Len(t, golden.Replicas, run.replicas)
		for _, engine := range []struct {
			name   string
			router Router
		}{{"parallel", &RoundRobin{}}, {"lockstep", lockStepped{&RoundRobin{}}}} {
			t.Run(golden.Name+"/"+engine.name, func(t *testing.T) {
				cfg.Router = engine.router
				res, err := Simulate(requests, cfg)
				require.NoError(t, err)
				for k, g := range golden.Replicas {
					rep := res.Replicas[k]
					worst.Merge(paritytest.Compare(t, g, rep.Result, replicaRecords(res, k), cfg.Plant.TimeStepS))
					runs++
				}
			})
		}
	}
	t.Logf("parity: %d replica runs, largest relative difference %.3g (%s)", runs, worst.Rel, worst.Where)
}

// replicaRecords returns the records of the requests routed to replica k,
// in arrival order.
func replicaRecords(res *Result, k int) []plant.RequestRecord {
	var out []plant.RequestRecord
	for i, r := range res.Requests {
		if res.Assignment[i] == k {
			out = append(out, r)
		}
	}
	return out
}

// loadCodeTrace reads the code trace, its first maxElapsedS seconds (0:
// all of it).
func loadCodeTrace(t testing.TB, path string, maxElapsedS float64) []plant.Request {
	t.Helper()
	limit := plant.NoElapsedLimit
	if maxElapsedS > 0 {
		limit = maxElapsedS
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	w, err := plant.LoadWorkload(f, "code", limit)
	require.NoError(t, err)
	return w.Requests
}

// writeFleetGolden converts the reference fleet runs in the folder
// $SERVESIM_REFERENCE_RUNS (one JSON file per run: {"replicas": N, "runs":
// [one run_plant.py document per replica]}) into the golden file.
func writeFleetGolden(t *testing.T) {
	dir := os.Getenv(paritytest.ReferenceRunsEnv)
	require.NotEmpty(t, dir, "-update needs %s: a folder of reference fleet runs", paritytest.ReferenceRunsEnv)
	var goldens []fleetGolden
	for name, run := range fleetRuns {
		path := filepath.Join(dir, name+".json")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var raw struct {
			Replicas int                       `json:"replicas"`
			Runs     []paritytest.ReferenceRun `json:"runs"`
		}
		require.NoError(t, json.Unmarshal(data, &raw), path)
		require.Equal(t, run.replicas, raw.Replicas, path)
		fg := fleetGolden{Name: name}
		for k, ref := range raw.Runs {
			g := paritytest.Golden{
				Name:        fmt.Sprintf("%s/replica%d", name, k),
				Profile:     run.profile,
				Scheduler:   run.scheduler,
				Controller:  run.controller,
				Stride:      50,
				Plant:       run.plant,
				SampleEvery: 1,
			}
			if run.maxElapsedS > 0 {
				v := run.maxElapsedS
				g.MaxElapsedS = &v
			} else {
				g.SampleEvery = 10 // whole-trace runs: every 500th step and the last
			}
			paritytest.Convert(t, &g, ref, parityPlant(t, nil, run.plant), path)
			fg.Replicas = append(fg.Replicas, g)
		}
		goldens = append(goldens, fg)
	}
	sort.Slice(goldens, func(i, j int) bool { return strings.Compare(goldens[i].Name, goldens[j].Name) < 0 })
	paritytest.WriteGzipJSON(t, filepath.Join("testdata", parityGolden), goldens)
}
