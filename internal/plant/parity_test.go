package plant

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
	"servesim/internal/shared"
)

var update = flag.Bool("update", false, "rewrite golden files")

// referenceRunsEnv names a folder of run_plant.py outputs that -update turns
// into the compact parity golden files (see testdata/README.md).
const referenceRunsEnv = "SERVESIM_REFERENCE_RUNS"

// goldenRun is one reference run in compact form: the configuration, every
// metric, the sampled trajectory and every request's times.
type goldenRun struct {
	Name        string   `json:"name"`
	Profile     string   `json:"profile"`
	Scheduler   string   `json:"scheduler"`
	Controller  string   `json:"controller"`
	MaxElapsedS *float64 `json:"max_elapsed_s"`
	Normalize   *float64 `json:"normalize"`
	Stride      int      `json:"stride"`
	// Plant holds the plant parameters changed from the defaults, by
	// their JSON names.
	Plant            map[string]float64    `json:"plant,omitempty"`
	Dilation         *float64              `json:"dilation"`
	ControllerName   string                `json:"controller_name"`
	SchedulerName    string                `json:"scheduler_name"`
	ProfileStatus    string                `json:"profile_status"`
	WorkloadChecksum string                `json:"workload_checksum"`
	Metrics          map[string]*float64   `json:"metrics"`
	Summary          map[string]any        `json:"summary"`
	Trajectory       map[string][]*float64 `json:"trajectory"`
	Phase            []string              `json:"phase"`
	PlanLengths      [2]int                `json:"plan_lengths"`
	// SampleEvery keeps every SampleEvery-th trajectory sample and the last.
	SampleEvery int `json:"sample_every"`
	// Requests holds, per request, the steps whose start is its prefill
	// start and whose ends are its first token and completion: the times
	// are t[k] with t[0] = 0 and t[k+1] = t[k] + time step, exactly as the
	// reference forms them (checked when the file is written); -1 is null.
	Requests [3][]int `json:"requests"`
}

// stepTimes returns the reference's step start times t[0..n].
func stepTimes(n int, dt float64) []float64 {
	times := make([]float64, n+1)
	for k := 1; k <= n; k++ {
		times[k] = times[k-1] + dt
	}
	return times
}

// keptSamples lists the sample indices a golden run keeps out of n.
func keptSamples(n, every int) []int {
	var kept []int
	for i := 0; i < n; i += every {
		kept = append(kept, i)
	}
	if n > 0 && kept[len(kept)-1] != n-1 {
		kept = append(kept, n-1)
	}
	return kept
}

// trajectoryKeys are the numeric trajectory columns of as_dict.
var trajectoryKeys = []string{
	"time_s", "prefill_queue", "decode_active", "completed_requests", "kv_tokens",
	"temperature_c", "power_w", "requested_clock_mhz", "realized_clock_mhz", "energy_j",
}

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
func withParameters(t *testing.T, p Plant, params map[string]float64) Plant {
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
	trace := shared.CodeTrace(t)
	if *update {
		for _, set := range parityTraceSets {
			writeParityGolden(t, set.golden, set.prefix)
		}
	}
	worst := parityDiff{}
	runs := 0
	for _, set := range parityTraceSets {
		for _, golden := range readParityGolden(t, set.golden) {
			t.Run(golden.Name, func(t *testing.T) {
				d := checkParity(t, golden, trace)
				runs++
				if d.rel > worst.rel {
					worst = d
				}
			})
		}
	}
	t.Logf("parity: %d runs, largest relative difference %.3g (%s)", runs, worst.rel, worst.where)
}

// parityDiff is the largest difference seen and where.
type parityDiff struct {
	rel   float64
	where string
}

// observe records |got-want| relative to max(1, |want|) and fails beyond 1e-9.
func (d *parityDiff) observe(t *testing.T, where string, want *float64, got float64) {
	t.Helper()
	d.observeAt(t, where, -1, want, got)
}

// observeAt is observe for element i of a column (no index when i < 0); the
// label is formatted only when needed.
func (d *parityDiff) observeAt(t *testing.T, column string, i int, want *float64, got float64) {
	t.Helper()
	label := func() string {
		if i < 0 {
			return column
		}
		return fmt.Sprintf("%s[%d]", column, i)
	}
	if want == nil {
		if !math.IsNaN(got) {
			require.Failf(t, "parity", "%s: want null, got %v", label(), got)
		}
		return
	}
	rel := math.Abs(got-*want) / math.Max(1, math.Abs(*want))
	if !(rel <= 1e-9) {
		require.Failf(t, "parity", "%s: got %v, reference %v (relative %.3g)", label(), got, *want, rel)
	}
	if rel > d.rel {
		d.rel, d.where = rel, label()
	}
}

func checkParity(t *testing.T, g goldenRun, trace string) parityDiff {
	prof, err := profile.Load(shared.Reference(t, "data", g.Profile, "l4_profile.csv"))
	require.NoError(t, err)
	f, err := os.Open(trace)
	require.NoError(t, err)
	defer f.Close()
	limit := NoElapsedLimit
	if g.MaxElapsedS != nil {
		limit = *g.MaxElapsedS
	}
	w, err := LoadWorkload(f, trace, limit)
	require.NoError(t, err)
	requests := w.Requests
	var d parityDiff
	if g.Normalize != nil {
		var dilation float64
		requests, dilation, err = NormalizeOfferedLoad(requests, prof, *g.Normalize)
		require.NoError(t, err)
		d.observe(t, "dilation", g.Dilation, dilation)
	}
	sched, err := NewScheduler(g.Scheduler)
	require.NoError(t, err)
	ctrl, err := NewController(g.Controller)
	require.NoError(t, err)
	p := withParameters(t, NewPlant(prof), g.Plant)
	res, err := Simulate(requests, p, sched, ctrl, Options{Stride: g.Stride})
	require.NoError(t, err)

	require.Equal(t, g.ControllerName, res.ControllerName)
	require.Equal(t, g.SchedulerName, res.SchedulerName)
	require.Equal(t, g.ProfileStatus, res.ProfileStatus)
	require.Equal(t, g.WorkloadChecksum, res.WorkloadChecksum)
	metrics := metricsMap(t, res.Metrics)
	require.Len(t, metrics, len(g.Metrics))
	for name, want := range g.Metrics {
		got, ok := metrics[name]
		require.Truef(t, ok, "metric %s missing", name)
		d.observe(t, "metrics."+name, want, got)
	}
	require.Equal(t, g.PlanLengths[0], res.Len(), "sampled steps")
	kept := keptSamples(res.Len(), g.SampleEvery)
	columns := map[string]func(i int) float64{
		"time_s":              func(i int) float64 { return res.TimeS[i] },
		"prefill_queue":       func(i int) float64 { return float64(res.PrefillQueue[i]) },
		"decode_active":       func(i int) float64 { return float64(res.DecodeActive[i]) },
		"completed_requests":  func(i int) float64 { return float64(res.CompletedRequests[i]) },
		"kv_tokens":           func(i int) float64 { return res.KVTokens[i] },
		"temperature_c":       func(i int) float64 { return res.TemperatureC[i] },
		"power_w":             func(i int) float64 { return res.PowerW[i] },
		"requested_clock_mhz": func(i int) float64 { return res.RequestedClockMHz[i] },
		"realized_clock_mhz":  func(i int) float64 { return res.RealizedClockMHz[i] },
		"energy_j":            func(i int) float64 { return res.EnergyJ[i] },
	}
	for _, key := range trajectoryKeys {
		want := g.Trajectory[key]
		require.Len(t, want, len(kept), key)
		for j, w := range want {
			d.observeAt(t, key, kept[j], w, columns[key](kept[j]))
		}
	}
	require.Len(t, g.Phase, len(kept))
	for j, phase := range g.Phase {
		require.Equal(t, phase, string(res.Phase[kept[j]]), "phase[%d]", kept[j])
	}
	require.Equal(t, g.PlanLengths, [2]int{len(res.PlannedClockMHz), len(res.PlannedClockStartTimeS)})
	times := stepTimes(res.Steps, p.TimeStepS)
	for k, label := range []string{"prefill_start_s", "first_token_time_s", "completion_time_s"} {
		require.Len(t, g.Requests[k], len(res.Requests))
		for i, step := range g.Requests[k] {
			r := res.Requests[i]
			got := [3]float64{r.PrefillStartS, r.FirstTokenTimeS, r.CompletionTimeS}[k]
			var want *float64
			if step >= 0 {
				want = &times[step]
			}
			d.observeAt(t, "requests."+label, i, want, got)
		}
	}
	summary := res.Summary()
	require.Equal(t, g.Summary["controller"], summary.Controller)
	require.Equal(t, g.Summary["scheduler"], summary.Scheduler)
	return d
}

// metricsMap returns the metrics by their JSON names.
func metricsMap(t *testing.T, m Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	v := reflect.ValueOf(m)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		out[name] = v.Field(i).Float()
	}
	return out
}

func readParityGolden(t *testing.T, name string) []goldenRun {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err, "golden file missing: run the reference and go test -update (testdata/README.md)")
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var runs []goldenRun
	require.NoError(t, json.NewDecoder(zr).Decode(&runs))
	require.NotEmpty(t, runs)
	return runs
}

// writeParityGolden converts the run_plant.py outputs named prefix* in the
// folder $SERVESIM_REFERENCE_RUNS into the compact golden file name.
func writeParityGolden(t *testing.T, name, prefix string) {
	dir := os.Getenv(referenceRunsEnv)
	require.NotEmpty(t, dir, "-update needs %s: a folder of run_plant.py outputs", referenceRunsEnv)
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
	out, err := os.Create(filepath.Join("testdata", name))
	require.NoError(t, err)
	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(zw).Encode(runs))
	require.NoError(t, zw.Close())
	require.NoError(t, out.Close())
}

func convertReferenceRun(t *testing.T, path string, m []string) goldenRun {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var raw struct {
		Summary  map[string]any `json:"summary"`
		Dilation *float64       `json:"dilation"`
		Result   map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal(data, &raw), path)
	g := goldenRun{
		Name:       strings.TrimSuffix(filepath.Base(path), ".json"),
		Profile:    m[2],
		Scheduler:  m[3],
		Controller: strings.Replace(m[4], "_", ":", 1),
		Stride:     50, // run_matrix.py and run.sh use --stride 50
		Dilation:   raw.Dilation,
		Summary:    raw.Summary,
		Trajectory: map[string][]*float64{},
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
	decode := func(key string, dst any) {
		require.NoError(t, json.Unmarshal(raw.Result[key], dst), key)
	}
	decode("controller_name", &g.ControllerName)
	decode("scheduler_name", &g.SchedulerName)
	decode("profile_status", &g.ProfileStatus)
	decode("workload_checksum", &g.WorkloadChecksum)
	decode("metrics", &g.Metrics)
	var plans []json.RawMessage
	var starts []json.RawMessage
	decode("planned_clock_mhz", &plans)
	decode("planned_clock_start_time_s", &starts)
	g.PlanLengths = [2]int{len(plans), len(starts)}
	g.SampleEvery = 1
	if m[1] != "code_first300s" {
		g.SampleEvery = 10 // whole-trace runs: every 500th step and the last
	}
	kept := keptSamples(len(plans), g.SampleEvery)
	var phases []string
	decode("phase", &phases)
	for _, i := range kept {
		g.Phase = append(g.Phase, phases[i])
	}
	for _, key := range trajectoryKeys {
		var column []*float64
		decode(key, &column)
		for _, i := range kept {
			g.Trajectory[key] = append(g.Trajectory[key], column[i])
		}
	}
	var records []map[string]*float64
	decode("requests", &records)
	configured := withParameters(t, NewPlant(nil), g.Plant)
	times := stepTimes(int(configured.MaxSimulationTimeS/configured.TimeStepS)+10, configured.TimeStepS)
	index := make(map[float64]int, len(times))
	for k, v := range times {
		index[v] = k
	}
	for _, r := range records {
		for k, label := range []string{"prefill_start_s", "first_token_time_s", "completion_time_s"} {
			step := -1
			if v := r[label]; v != nil {
				var ok bool
				step, ok = index[*v]
				require.Truef(t, ok, "%s %s %v is not a step time", path, label, *v)
			}
			g.Requests[k] = append(g.Requests[k], step)
		}
	}
	return g
}
