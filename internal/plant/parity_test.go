package plant_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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

// goldenRun is one reference run in compact form.
type goldenRun = paritytest.Golden

// runName reads the configuration out of a run_matrix.py file name.
var runName = regexp.MustCompile(`^(code_first300s|code_full_norm0\.8_sim14400|code_full_norm0\.8|code_full)__(l4_proxy|l4_synthetic)__(static|continuous|chunked)__(.+)\.json$`)

// parameterRun is a first-five-minutes run with plant parameters changed
// from the defaults, exercising thermal downshift, the power governor, KV
// limits, the active-request cap, another time step and an early stop.
type parameterRun struct {
	profile, scheduler, controller string
	plant                          map[string]float64
}

// parameterRuns are the runs of parity_plant_parameters.json.gz, by file
// name (see testdata/README.md for the run_plant.py commands).
var parameterRuns = map[string]parameterRun{
	"params__thermal40":       {"l4_proxy", "chunked", "reactive", map[string]float64{"thermal_limit_c": 40}},
	"params__thermal45_max":   {"l4_synthetic", "continuous", "max", map[string]float64{"thermal_limit_c": 45}},
	"params__kv20000_active4": {"l4_proxy", "static", "max", map[string]float64{"kv_capacity_tokens": 20000, "maximum_active_requests": 4}},
	"params__power50":         {"l4_synthetic", "continuous", "max", map[string]float64{"power_limit_w": 50}},
	"params__step005":         {"l4_synthetic", "chunked", "sampled-reactive:0.5", map[string]float64{"time_step_s": 0.05, "reporting_horizon_s": 30, "maximum_simulation_time_s": 600}},
	"params__active2_kv9000":  {"l4_synthetic", "chunked", "reactive", map[string]float64{"maximum_active_requests": 2, "kv_capacity_tokens": 9000}},
	"params__kv6000":          {"l4_proxy", "continuous", "fixed:1125", map[string]float64{"kv_capacity_tokens": 6000}},
	"params__short":           {"l4_proxy", "static", "min", map[string]float64{"maximum_simulation_time_s": 100, "reporting_horizon_s": 100}},
}

// withParameters returns p with the named parameters changed.
func withParameters(t *testing.T, p plant.Plant, params map[string]float64) plant.Plant {
	for name, v := range params {
		switch name {
		case "time_step_s":
			p.TimeStepS = v
		case "kv_capacity_tokens":
			p.KVCapacityTokens = v
		case "maximum_active_requests":
			p.MaxActiveRequests = int(v)
		case "power_limit_w":
			p.PowerLimitW = v
		case "thermal_limit_c":
			p.ThermalLimitC = v
		case "reporting_horizon_s":
			p.ReportingHorizonS = v
		case "maximum_simulation_time_s":
			p.MaxSimulationTimeS = v
		default:
			t.Fatalf("unknown plant parameter %s", name)
		}
	}
	return p
}

// parityTraceSets are the golden files and the reference runs they hold.
var parityTraceSets = []struct {
	golden string
	prefix string
}{
	{"parity_code_first300s.json.gz", "code_first300s__"},
	{"parity_code_full_norm0.8.json.gz", "code_full_norm0.8__"},
	{"parity_code_full.json.gz", "code_full__"},
	{"parity_plant_parameters.json.gz", "params__"},
	{"parity_code_full_norm0.8_sim14400.json.gz", "code_full_norm0.8_sim14400__"},
}

func TestParityWithReference(t *testing.T) {
	trace := sharedtest.CodeTrace(t)
	if testsupport.Updating() {
		for _, set := range parityTraceSets {
			writeParityGolden(t, set.golden, set.prefix)
		}
	}
	var worst paritytest.Diff
	runs := 0
	for _, set := range parityTraceSets {
		for _, golden := range readParityGolden(t, set.golden) {
			t.Run(golden.Name, func(t *testing.T) {
				worst.Merge(checkParity(t, golden, trace))
				runs++
			})
		}
	}
	t.Logf("parity: %d runs, largest relative difference %.3g (%s)", runs, worst.Rel, worst.Where)
}

func checkParity(t *testing.T, g goldenRun, trace string) paritytest.Diff {
	prof, err := profile.Load(sharedtest.Reference(t, "data", g.Profile, "l4_profile.csv"))
	require.NoError(t, err)
	f, err := os.Open(trace)
	require.NoError(t, err)
	defer f.Close()
	limit := plant.NoElapsedLimit
	if g.MaxElapsedS != nil {
		limit = *g.MaxElapsedS
	}
	w, err := plant.LoadWorkload(f, trace, limit)
	require.NoError(t, err)
	requests := w.Requests
	var d paritytest.Diff
	if g.Normalize != nil {
		var dilation float64
		requests, dilation, err = plant.NormalizeOfferedLoad(requests, prof, *g.Normalize)
		require.NoError(t, err)
		d.Observe(t, "dilation", g.Dilation, dilation)
	}
	sched, err := plant.NewScheduler(g.Scheduler)
	require.NoError(t, err)
	ctrl, err := plant.NewController(g.Controller)
	require.NoError(t, err)
	p := withParameters(t, plant.NewPlant(prof), g.Plant)
	res, err := plant.Simulate(requests, p, sched, ctrl, plant.Options{Stride: g.Stride})
	require.NoError(t, err)

	d.Merge(paritytest.Compare(t, g, res, res.Requests, p.TimeStepS))
	return d
}

func readParityGolden(t *testing.T, name string) []goldenRun {
	t.Helper()
	var runs []goldenRun
	paritytest.ReadGzipJSON(t, filepath.Join("testdata", name), &runs)
	require.NotEmpty(t, runs)
	return runs
}

// writeParityGolden converts the run_plant.py outputs named prefix* in the
// folder $SERVESIM_REFERENCE_RUNS into the compact golden file name.
func writeParityGolden(t *testing.T, name, prefix string) {
	dir := os.Getenv(paritytest.ReferenceRunsEnv)
	require.NotEmpty(t, dir, "-update needs %s: a folder of run_plant.py outputs", paritytest.ReferenceRunsEnv)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var runs []goldenRun
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		m := runName.FindStringSubmatch(e.Name())
		if run, ok := parameterRuns[strings.TrimSuffix(e.Name(), ".json")]; ok {
			m = []string{e.Name(), "code_first300s", run.profile, run.scheduler, run.controller}
		}
		if m == nil {
			continue
		}
		runs = append(runs, convertReferenceRun(t, filepath.Join(dir, e.Name()), m))
	}
	if len(runs) == 0 {
		t.Logf("no %s* runs in %s: keeping testdata/%s", prefix, dir, name)
		return
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	paritytest.WriteGzipJSON(t, filepath.Join("testdata", name), runs)
}

func convertReferenceRun(t *testing.T, path string, m []string) goldenRun {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var raw paritytest.ReferenceRun
	require.NoError(t, json.Unmarshal(data, &raw), path)
	g := goldenRun{
		Name:       strings.TrimSuffix(filepath.Base(path), ".json"),
		Profile:    m[2],
		Scheduler:  m[3],
		Controller: strings.Replace(m[4], "_", ":", 1),
		Stride:     50, // run_matrix.py and run.sh use --stride 50
	}
	if run, ok := parameterRuns[g.Name]; ok {
		g.Controller = run.controller
		g.Plant = run.plant
	}
	switch m[1] {
	case "code_first300s":
		v := 300.0
		g.MaxElapsedS = &v
	case "code_full_norm0.8":
		v := 0.8
		g.Normalize = &v
	case "code_full_norm0.8_sim14400":
		v := 0.8
		g.Normalize = &v
		g.Plant = map[string]float64{"maximum_simulation_time_s": 14400}
	}
	g.SampleEvery = 1
	if m[1] != "code_first300s" {
		g.SampleEvery = 10 // whole-trace runs: every 500th step and the last
	}
	paritytest.Convert(t, &g, raw, withParameters(t, plant.NewPlant(nil), g.Plant), path)
	return g
}
