//go:build linux

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCapacityOverTimeWeek runs the real servesim binary (the test
// binary, which testscript puts on PATH as servesim) as `capacity
// --over-time 3600` on the synthetic week of BenchmarkSimulateWeek
// (plant.WeekTraceLike, seed 1, in the Azure 2024 form, in a temporary
// folder; weekSizes: about a million and ten million requests, and the
// whole week, skipped with -short): the embedded proxy, round-robin, a 5 s
// TTFT and 0.2 s TPOT at 99%, --max-sim-time 1e6 so that every fleet
// drains the week, all cores. It reports the whole process's wall time
// (s/run), peak resident memory (peak-RSS-MB, and per request), the
// windows, the static answer and both in replica-hours. The goal
// for the week: under 10 minutes and 2.5 GB.
func BenchmarkCapacityOverTimeWeek(b *testing.B) {
	onEachWeek(b, capacityOverTimeWeek)
}

// capacityOverTimeWeek is one BenchmarkCapacityOverTimeWeek run of the
// trace at path.
func capacityOverTimeWeek(b *testing.B, bin, path string) {
	var doc struct {
		Plan struct {
			Windows      []json.RawMessage `json:"windows"`
			PeakReplicas int               `json:"peak_replicas"`
			ReplicaHours float64           `json:"replica_hours"`
		} `json:"plan"`
		Static struct {
			Replicas *int `json:"replicas"`
		} `json:"static"`
		StaticReplicaHours *float64        `json:"static_replica_hours"`
		Provenance         provenanceCount `json:"provenance"`
	}
	runWeek(b, bin, []string{"capacity", "--trace", path, "--over-time", "3600", "--max-sim-time", "1e6",
		"--ttft-slo", "5", "--tpot-slo", "0.2", "--quiet"},
		&doc, &doc.Provenance, func() { require.NotNil(b, doc.Static.Replicas) })
	b.ReportMetric(float64(len(doc.Plan.Windows)), "windows")
	b.ReportMetric(float64(*doc.Static.Replicas), "static-replicas")
	b.ReportMetric(float64(doc.Plan.PeakReplicas), "plan-peak-replicas")
	b.ReportMetric(*doc.StaticReplicaHours, "static-replica-hours")
	b.ReportMetric(doc.Plan.ReplicaHours, "plan-replica-hours")
}
