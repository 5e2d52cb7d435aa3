package diagnose

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

// TestScanCapsWhatItReads feeds the log reader endless and oversized
// inputs: each must fail with one line naming the log and the line or the
// cap, after reading a bounded number of bytes.
func TestScanCapsWhatItReads(t *testing.T) {
	const row = "a,100,10,1.5,20,12.25,true,0,40,97.5\n"
	opts := ReadOptions{MaxBytes: 1 << 20, MaxLineBytes: 4 << 10}
	tests := []struct {
		name    string
		in      io.Reader
		want    string
		maxRead int64
	}{
		{"/dev/zero", testsupport.Endless("\x00"), "log.csv line 1: contains a NUL byte: expected text", 128 << 10},
		{"/dev/urandom", rand.NewChaCha8([32]byte{7}), "log.csv line ", 128 << 10},
		{"a header, then zeros", io.MultiReader(strings.NewReader(csvHeader), testsupport.Endless("\x00")), "log.csv line 2: contains a NUL byte", 128 << 10},
		{"one endless line", testsupport.Endless("request_id,"), "log.csv line 1: longer than the 4 KiB line cap", 128 << 10},
		{"a quote left open", io.MultiReader(strings.NewReader(csvHeader+"\""), testsupport.Endless("x\n")),
			"log.csv line 2050: malformed CSV: a record longer than the line cap: is a quote left open?", 128 << 10},
		{"endless rows", io.MultiReader(strings.NewReader(csvHeader), testsupport.Endless(row)), "log.csv: larger than the 1 MiB cap", opts.MaxBytes + 1},
		{"endless JSON Lines", testsupport.Endless(`{"request_id": "a", "prompt_tokens": 100, "output_tokens": 10, "queue_wait_ms": 1.5, "prefill_ms": 20, "decode_tpot_ms": 12.25, "preempted": true, "recompute_penalty_ms": 0, "prefix_cached_tokens": 40, "kv_occupancy_pct_at_arrival": 97.5}` + "\n"),
			"log.csv: larger than the 1 MiB cap", opts.MaxBytes + 1},
		{"an endless JSON line", testsupport.Endless(`{"request_id": "`), "log.csv line 1: longer than the 4 KiB line cap", 128 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &testsupport.CountingReader{R: tt.in}
			rows := 0
			_, err := Scan(in, "log.csv", opts, func(Record) error { rows++; return nil })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
			assert.LessOrEqual(t, in.N, tt.maxRead, "bytes read before failing")
		})
	}
}

func TestScanRefusesALargeFileWithoutReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse.csv")
	testsupport.SparseFile(t, path, []byte(csvHeader), 30<<30)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = Scan(f, path, ReadOptions{}, func(Record) error { return nil })
	require.EqualError(t, err, path+": 30 GiB: larger than the 4 GiB cap")
}

func TestScanReadsALogOfExactlyTheCap(t *testing.T) {
	body := csvHeader + "a,100,10,1.5,20,12.25,true,0,40,97.5\n"
	recs, _, err := collect(t, body, ReadOptions{MaxBytes: int64(len(body))})
	require.NoError(t, err)
	assert.Len(t, recs, 1)
	_, _, err = collect(t, body, ReadOptions{MaxBytes: int64(len(body)) - 1})
	assert.EqualError(t, err, "logs: 196 bytes: larger than the 195 bytes cap")
}
