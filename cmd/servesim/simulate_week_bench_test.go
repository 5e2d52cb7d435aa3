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
)

// weekSizes are the traces of BenchmarkSimulateWeek: about a million and
// ten million requests of the synthetic week, and the whole week
// (plant.WeekRequests, skipped with -short).
var weekSizes = []struct {
	name     string
	fraction float64 // of the week
}{
	{"requests=1M", 1e6 / plant.WeekRequests},
	{"requests=10M", 1e7 / plant.WeekRequests},
	{"week", 1},
}

// BenchmarkSimulateWeek runs the real servesim binary (the test binary,
// which testscript puts on PATH as servesim) on the synthetic week written
// in the Azure 2024 form (plant.WeekTraceLike, seed 1, in a temporary
// folder): one replica stretched to 70% load, chunked prefill, the maximum
// clock, --summary, under each service model. It reports the whole process's wall time (s/run), peak
// resident memory (peak-RSS-MB) and that per request (RSS-B/request). The
// issue's goal for the week: under 60 s and 1.5 GB on two cores.
func BenchmarkSimulateWeek(b *testing.B) {
	for _, size := range weekSizes {
		b.Run(size.name, func(b *testing.B) {
			if testing.Short() && size.fraction == 1 {
				b.Skip("skipped with -short: a 1.1 GB trace of 27.3 million requests")
			}
			week := plant.WeekTraceLike(1)
			week.DurationS *= size.fraction
			path := filepath.Join(b.TempDir(), "week.csv")
			f, err := os.Create(path)
			require.NoError(b, err)
			require.NoError(b, week.WriteCSV2024(f))
			require.NoError(b, f.Close())
			bin, err := exec.LookPath("servesim")
			require.NoError(b, err)
			for _, model := range plant.ServiceModelNames {
				b.Run(model, func(b *testing.B) { simulateWeek(b, bin, path, model) })
			}
		})
	}
}

// simulateWeek is one BenchmarkSimulateWeek run of the trace at path under
// the service model.
func simulateWeek(b *testing.B, bin, path, model string) {
	var peakRSS int64
	var requests int
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "simulate", "--trace", path, "--normalize", "0.7", "--summary",
			"--max-sim-time", "1e9", "--max-steps", "2e10", "--service-model", model)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(b, cmd.Run(), stderr.String())
		var doc struct {
			Provenance struct {
				RequestsLoaded int `json:"requests_loaded"`
			} `json:"provenance"`
			Metrics struct {
				Unfinished float64 `json:"unfinished_requests_at_end"`
			} `json:"metrics"`
		}
		require.NoError(b, json.Unmarshal(stdout.Bytes(), &doc))
		require.Zero(b, doc.Metrics.Unfinished)
		requests = doc.Provenance.RequestsLoaded
		peakRSS = max(peakRSS, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss*1024)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(peakRSS)/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(peakRSS)/float64(requests), "RSS-B/request")
	b.ReportMetric(float64(requests), "requests")
}
