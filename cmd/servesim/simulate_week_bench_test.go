//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/workload"
)

// weekSizes are the traces of BenchmarkSimulateWeek: about a million and
// ten million requests of the synthetic week, and the whole week
// (plant.WeekRequests, skipped with -short).
var weekSizes = []struct {
	name     string
	fraction float64 // of the week
}{
	{"requests=1M", 1e6 / workload.WeekRequests},
	{"requests=10M", 1e7 / workload.WeekRequests},
	{"week", 1},
}

// BenchmarkSimulateWeek runs the real servesim binary (the test binary,
// which testscript puts on PATH as servesim) on the synthetic week written
// in the Azure 2024 form (plant.WeekTraceLike, seed 1, in a temporary
// folder): one replica (stretched as weekRuns says), chunked prefill, the
// maximum clock, --summary, under each service model. It reports the whole process's wall time (s/run), peak
// resident memory (peak-RSS-MB) and that per request (RSS-B/request). The
// issue's goal for the week: under 60 s and 1.5 GB on two cores.
func BenchmarkSimulateWeek(b *testing.B) {
	onEachWeek(b, func(b *testing.B, bin, path string) {
		for _, run := range weekRuns {
			b.Run(run.model, func(b *testing.B) { simulateWeek(b, bin, path, run.model, run.normalize) })
		}
	})
}

// onEachWeek runs bench as a sub-benchmark of b for each of weekSizes,
// with the servesim binary on PATH and the synthetic week of that size
// (plant.WeekTraceLike, seed 1) written in the Azure 2024 form to a
// temporary folder; the whole week is skipped with -short.
func onEachWeek(b *testing.B, bench func(b *testing.B, bin, path string)) {
	for _, size := range weekSizes {
		b.Run(size.name, func(b *testing.B) {
			if testing.Short() && size.fraction == 1 {
				b.Skip("skipped with -short: a 1.1 GB trace of 27.3 million requests")
			}
			week := workload.WeekTraceLike(1)
			week.DurationS *= size.fraction
			path := filepath.Join(b.TempDir(), "week.csv")
			f, err := os.Create(path)
			require.NoError(b, err)
			require.NoError(b, week.WriteCSV2024(f))
			require.NoError(b, f.Close())
			bin, err := exec.LookPath("servesim")
			require.NoError(b, err)
			bench(b, bin, path)
		})
	}
}

// weekRuns are the service models of BenchmarkSimulateWeek and the load
// each runs the week at: 0.7 of the proxy's isolated maximum-clock service
// (--normalize) for the reference's; under the batched model (L4 and
// Qwen2.5-7B-Instruct cards) that load outgrows the GPU (its prefill,
// about 3,100 tokens/s at the proxy's governed clock, against the proxy's
// 9,500: the queue grows to 330,000 requests over a million), so it runs
// at 0.3, a stable operating point (peak queue 64, mean TTFT 3.1 s).
var weekRuns = []struct {
	model     string
	normalize string
}{{plant.ServiceReference, "0.7"}, {plant.ServiceBatched, "0.3"}}

// simulateWeek is one BenchmarkSimulateWeek run of the trace at path under
// the service model at the load normalize.
func simulateWeek(b *testing.B, bin, path, model, normalize string) {
	var doc struct {
		Provenance provenanceCount `json:"provenance"`
		Metrics    struct {
			Unfinished float64 `json:"unfinished_requests_at_end"`
		} `json:"metrics"`
	}
	runWeek(b, bin, []string{"simulate", "--trace", path, "--normalize", normalize, "--summary",
		"--max-sim-time", "1e9", "--max-steps", "2e10", "--service-model", model},
		&doc, &doc.Provenance, func() { require.Zero(b, doc.Metrics.Unfinished) })
}

// provenanceCount is what the week benchmarks read of a document's
// provenance block.
type provenanceCount struct {
	RequestsLoaded int `json:"requests_loaded"`
}

// runWeek runs the servesim binary bin with args once per b.Loop, decodes
// each document into doc (its provenance block into prov) and checks it
// with check, then reports the whole process's wall time (s/run), peak
// resident memory (peak-RSS-MB, and per request: RSS-B/request) and the
// requests loaded.
func runWeek(b *testing.B, bin string, args []string, doc any, prov *provenanceCount, check func()) {
	var peakRSS int64
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(b, cmd.Run(), stderr.String())
		require.NoError(b, json.Unmarshal(stdout.Bytes(), doc))
		check()
		peakRSS = max(peakRSS, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss*1024)
	}
	requests := prov.RequestsLoaded
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(peakRSS)/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(peakRSS)/float64(requests), "RSS-B/request")
	b.ReportMetric(float64(requests), "requests")
}

// BenchmarkSimulateAutoscaleWeek runs the real servesim binary (as
// BenchmarkSimulateWeek does, on the same synthetic weeks) through an
// elastic fleet: `simulate --autoscale queue:target=4` from 8 replicas,
// between 4 and 64, with the default cold starts and scale interval,
// --summary, under each router kind: round-robin (state-free) and
// least-outstanding (it reads every ready replica's state at each
// arrival). It reports the whole process's wall time (s/run), peak
// resident memory (peak-RSS-MB, and per request), the replicas started
// and the GPU-hours. The goal for the week: under 2 minutes and
// 2.5 GB on two cores.
func BenchmarkSimulateAutoscaleWeek(b *testing.B) {
	onEachWeek(b, func(b *testing.B, bin, path string) {
		for _, router := range []string{"round-robin", "least-outstanding"} {
			b.Run("router="+router, func(b *testing.B) { autoscaleWeek(b, bin, path, router) })
		}
	})
}

// autoscaleWeek is one BenchmarkSimulateAutoscaleWeek run of the trace at
// path behind router.
func autoscaleWeek(b *testing.B, bin, path, router string) {
	var doc struct {
		Provenance provenanceCount `json:"provenance"`
		Autoscale  struct {
			ReplicasStarted int     `json:"replicas_started"`
			PeakReady       int     `json:"peak_ready"`
			GPUHours        float64 `json:"gpu_hours"`
		} `json:"autoscale"`
	}
	runWeek(b, bin, []string{"simulate", "--trace", path, "--summary", "--router", router,
		"--replicas", "8", "--autoscale", "queue:target=4", "--min-replicas", "4", "--max-replicas", "64",
		"--max-sim-time", "1e6", "--max-steps", "2e10"},
		&doc, &doc.Provenance, func() { require.Positive(b, doc.Autoscale.ReplicasStarted) })
	b.ReportMetric(float64(doc.Autoscale.ReplicasStarted), "replicas-started")
	b.ReportMetric(float64(doc.Autoscale.PeakReady), "peak-ready")
	b.ReportMetric(doc.Autoscale.GPUHours, "GPU-hours")
}
