package diagnose

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchRows is the size of the benchmark's request log.
const benchRows = 1_000_000

// syntheticCSV writes n request-log rows with varied, valid values.
func syntheticCSV(n int) []byte {
	return syntheticLog(n, false)
}

// syntheticLog writes n request-log rows with varied, valid values, with
// an arrival_s column (100 requests a second) when timed.
func syntheticLog(n int, timed bool) []byte {
	var buf bytes.Buffer
	if timed {
		buf.WriteString("arrival_s,")
	}
	buf.WriteString("request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival\n")
	for i := range n {
		if timed {
			fmt.Fprintf(&buf, "%.2f,", float64(i)*0.01)
		}
		prompt := 64 + (i*7919)%8000
		preempted := i%97 == 0
		recompute := 0.0
		if preempted {
			recompute = float64(i%5000) * 2.5
		}
		fmt.Fprintf(&buf, "req-%07d,%d,%d,%.2f,%.2f,%.3f,%t,%.1f,%d,%.1f\n",
			i, prompt, 1+(i*31)%700, float64((i*13)%4000)*0.75, 20+float64(prompt)*0.04,
			12+float64(i%17)*0.25, preempted, recompute, (prompt*(i%5))/4, 50+float64(i%500)*0.1)
	}
	return buf.Bytes()
}

// BenchmarkDiagnoseCSV reads a one-million-row CSV log and diagnoses it.
func BenchmarkDiagnoseCSV(b *testing.B) {
	data := syntheticCSV(benchRows)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		acc := NewAccumulator(0)
		_, err := Scan(bytes.NewReader(data), "bench.csv", ReadOptions{}, func(r Record) error { return acc.Add(r.Log) })
		if err != nil {
			b.Fatal(err)
		}
		s, err := acc.Snapshot("bench", DefaultOptions())
		if err != nil || s.RequestCount != benchRows {
			b.Fatal(err, s.RequestCount)
		}
	}
}

// BenchmarkDiagnoseLog reads a one-million-row CSV log with arrival times
// as the command does (Logs) and diagnoses it with its evidence: the whole
// log, and by minute.
func BenchmarkDiagnoseLog(b *testing.B) {
	data := syntheticLog(benchRows, true)
	open := func(string) (io.ReadCloser, string, error) {
		return io.NopCloser(bytes.NewReader(data)), "bench.csv", nil
	}
	for _, byWindowS := range []float64{0, 60} {
		b.Run(fmt.Sprintf("by-window=%g", byWindowS), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_, diagnoses, err := Logs([]string{"bench.csv"}, open, "bench", byWindowS, DefaultOptions())
				if err != nil || len(diagnoses) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHotPathAllocations guards the per-request cost: adding a request to
// a sized accumulator allocates nothing, and reading a CSV row allocates
// only its request id.
func TestHotPathAllocations(t *testing.T) {
	const rows = 2000
	logs := SimulateWorkloadLogs(98.5, false)
	acc := NewAccumulator((rows + 1) * len(logs)) // AllocsPerRun adds a warm-up run
	allocs := testing.AllocsPerRun(rows, func() {
		for _, r := range logs {
			if err := acc.Add(r); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Accumulator.Add: %v allocations per %d requests, want 0", allocs, len(logs))
	}

	data := syntheticCSV(rows)
	allocs = testing.AllocsPerRun(5, func() {
		if _, err := ScanCSV(bytes.NewReader(data), "x", ReadOptions{}, func(Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if perRow := allocs / rows; perRow > 1.05 {
		t.Errorf("ScanCSV: %.2f allocations per row, want about 1 (the request id)", perRow)
	}
}
