package diagnose

import (
	"bytes"
	"strings"
	"testing"
)

// checkRecords fails when a reader hands out a request that the seed's
// validation rejects.
func checkRecords(t *testing.T) func(Record) error {
	return func(r Record) error {
		if err := r.Log.Validate(); err != nil {
			t.Fatalf("line %d: reader returned an invalid request: %v", r.Line, err)
		}
		return nil
	}
}

// FuzzScanCSV: no input panics the CSV reader, every request it returns is
// valid, and its CSV syntax agrees with encoding/csv.
func FuzzScanCSV(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("arrival_s,"+csvHeader+"1e9,a,1,1,0,0,0,0,0,0,0\n"), true)
	f.Add([]byte("timestamp,"+csvHeader+"2023-11-16 18:17:03.9799600,a,1,1,0,0,0,1,0,0,100\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, arrival bool) {
		_, _ = ScanCSV(bytes.NewReader(data), "fuzz", ReadOptions{Arrival: arrival}, checkRecords(t))
		_, _ = Scan(bytes.NewReader(data), "fuzz", ReadOptions{Arrival: arrival}, checkRecords(t))
		want, wantErr := csvRecords(data)
		got, gotErr := scannerRecords(data)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("encoding/csv error %v, csvScanner error %v", wantErr, gotErr)
		}
		if wantErr == nil && !equalRecords(want, got) {
			t.Fatalf("encoding/csv read %q, csvScanner read %q", want, got)
		}
	})
}

func equalRecords(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") || len(a[i]) != len(b[i]) {
			return false
		}
	}
	return true
}

// FuzzScanJSONLines: no input panics the JSON Lines reader and every
// request it returns is valid.
func FuzzScanJSONLines(f *testing.F) {
	row := `{"request_id": "a", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": true, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5, "arrival_s": 3}`
	f.Add([]byte(row+"\n"+row), false)
	f.Add([]byte(row+"\n\n"+row+"\n"), true)
	f.Add([]byte(strings.ReplaceAll(row, "100", `"1e2"`)), false)
	f.Add([]byte(strings.Replace(row, `"arrival_s": 3`, `"timestamp": "2023-11-16T18:17:03Z"`, 1)), true)
	f.Add([]byte(`{"a": [}`), false)
	f.Add([]byte("{}\n[]\nnull\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, arrival bool) {
		_, _ = ScanJSONLines(bytes.NewReader(data), "fuzz", ReadOptions{Arrival: arrival}, checkRecords(t))
		_, _ = Scan(bytes.NewReader(data), "fuzz", ReadOptions{Arrival: arrival}, checkRecords(t))
	})
}
