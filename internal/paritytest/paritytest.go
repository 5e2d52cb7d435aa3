// Package paritytest holds what the parity tests of packages plant and
// fleet share: the compact golden form of a reference run, its conversion
// from the reference's as_dict output, and the comparison of a
// plant.Result with it to 1e-9 relative. It is imported by tests only.
package paritytest

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// ReferenceRunsEnv names a folder of reference outputs that -update turns
// into compact golden files.
const ReferenceRunsEnv = "SERVESIM_REFERENCE_RUNS"

// Golden is one reference run in compact form: the configuration, every
// metric, the sampled trajectory and every request's times.
type Golden struct {
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

// StepTimes returns the reference's step start times t[0..n].
func StepTimes(n int, dt float64) []float64 {
	times := make([]float64, n+1)
	for k := 1; k <= n; k++ {
		times[k] = times[k-1] + dt
	}
	return times
}

// KeptSamples lists the sample indices a golden run keeps out of n.
func KeptSamples(n, every int) []int {
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

// requestTimes are the request record times a golden run keeps, as steps.
var requestTimes = []string{"prefill_start_s", "first_token_time_s", "completion_time_s"}

// Diff is the largest relative difference seen and where.
type Diff struct {
	Rel   float64
	Where string
}

// Merge keeps the larger of d and other.
func (d *Diff) Merge(other Diff) {
	if other.Rel > d.Rel {
		*d = other
	}
}

// Observe records |got-want| relative to max(1, |want|) and fails beyond
// 1e-9; a nil want is null and needs NaN.
func (d *Diff) Observe(t testing.TB, where string, want *float64, got float64) {
	t.Helper()
	d.ObserveAt(t, where, -1, want, got)
}

// ObserveAt is Observe for element i of a column (no index when i < 0);
// the label is formatted only when needed.
func (d *Diff) ObserveAt(t testing.TB, column string, i int, want *float64, got float64) {
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
	if rel > d.Rel {
		d.Rel, d.Where = rel, label()
	}
}

// Compare checks res, a run with g's stride, against the reference run g:
// names, checksum, every metric, the kept trajectory samples and phases,
// the plan columns' lengths and every request's times (on the grid of
// time step dt). records are res's request records (res.Requests, or a
// fleet's records of the replica).
func Compare(t testing.TB, g Golden, res *plant.Result, records []plant.RequestRecord, dt float64) Diff {
	t.Helper()
	var d Diff
	require.Equal(t, g.ControllerName, res.ControllerName)
	require.Equal(t, g.SchedulerName, res.SchedulerName)
	require.Equal(t, g.ProfileStatus, res.ProfileStatus)
	require.Equal(t, g.WorkloadChecksum, res.WorkloadChecksum)
	metrics := MetricsMap(res.Metrics)
	require.Len(t, metrics, len(g.Metrics))
	for name, want := range g.Metrics {
		got, ok := metrics[name]
		require.Truef(t, ok, "metric %s missing", name)
		d.Observe(t, "metrics."+name, want, got)
	}
	require.Equal(t, g.PlanLengths[0], res.Len(), "sampled steps")
	kept := KeptSamples(res.Len(), g.SampleEvery)
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
			d.ObserveAt(t, key, kept[j], w, columns[key](kept[j]))
		}
	}
	require.Len(t, g.Phase, len(kept))
	for j, phase := range g.Phase {
		require.Equal(t, phase, string(res.Phase[kept[j]]), "phase[%d]", kept[j])
	}
	require.Equal(t, g.PlanLengths, [2]int{len(res.PlannedClockMHz), len(res.PlannedClockStartTimeS)})
	times := StepTimes(res.Steps, dt)
	for k, label := range requestTimes {
		require.Len(t, g.Requests[k], len(records))
		for i, step := range g.Requests[k] {
			r := records[i]
			got := [3]float64{r.PrefillStartS, r.FirstTokenTimeS, r.CompletionTimeS}[k]
			var want *float64
			if step >= 0 {
				want = &times[step]
			}
			d.ObserveAt(t, "requests."+label, i, want, got)
		}
	}
	summary := res.Summary()
	require.Equal(t, g.Summary["controller"], summary.Controller)
	require.Equal(t, g.Summary["scheduler"], summary.Scheduler)
	return d
}

// MetricsMap returns the metrics by their JSON names.
func MetricsMap(m plant.Metrics) map[string]float64 {
	out := map[string]float64{}
	v := reflect.ValueOf(m)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		out[name] = v.Field(i).Float()
	}
	return out
}

// ReadGzipJSON decodes the gzip-compressed JSON file path into v.
func ReadGzipJSON(t testing.TB, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "golden file missing: run the reference and go test -update (testdata/README.md)")
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(zr).Decode(v))
}

// WriteGzipJSON writes v as gzip-compressed JSON to path.
func WriteGzipJSON(t testing.TB, path string, v any) {
	t.Helper()
	out, err := os.Create(path)
	require.NoError(t, err)
	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(zw).Encode(v))
	require.NoError(t, zw.Close())
	require.NoError(t, out.Close())
}

// ReferenceRun is one run as the reference's harness prints it: result_summary,
// the dilation of normalize_offered_load and as_dict(stride).
type ReferenceRun struct {
	Summary  map[string]any             `json:"summary"`
	Dilation *float64                   `json:"dilation"`
	Result   map[string]json.RawMessage `json:"result"`
}

// Convert fills g's result part (names, checksum, metrics, summary,
// dilation, kept trajectory samples and phases, plan lengths, request
// steps) from the reference run raw, keeping every g.SampleEvery-th
// sample. p's time step and MaxSimulationTimeS give the step grid; a
// request time off it fails. where names the run in failures.
func Convert(t testing.TB, g *Golden, raw ReferenceRun, p plant.Plant, where string) {
	t.Helper()
	g.Summary = raw.Summary
	g.Dilation = raw.Dilation
	g.Trajectory = map[string][]*float64{}
	decode := func(key string, dst any) {
		require.NoError(t, json.Unmarshal(raw.Result[key], dst), "%s: %s", where, key)
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
	kept := KeptSamples(len(plans), g.SampleEvery)
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
	times := StepTimes(int(p.MaxSimulationTimeS/p.TimeStepS)+10, p.TimeStepS)
	index := make(map[float64]int, len(times))
	for k, v := range times {
		index[v] = k
	}
	for _, r := range records {
		for k, label := range requestTimes {
			step := -1
			if v := r[label]; v != nil {
				var ok bool
				step, ok = index[*v]
				require.Truef(t, ok, "%s %s %v is not a step time", where, label, *v)
			}
			g.Requests[k] = append(g.Requests[k], step)
		}
	}
}
