package workload

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/limits"
	"servesim/internal/testsupport"
)

// TestLoadWorkloadCapsWhatItReads feeds the trace reader endless and
// oversized inputs: each must fail with one line naming the trace and the
// cap or the line, after reading a bounded number of bytes.
func TestLoadWorkloadCapsWhatItReads(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	caps := traceCaps{maxBytes: 1 << 20, maxLine: 4 << 10}
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789+/\n" // no NUL, short lines, not a trace
	tests := []struct {
		name     string
		in       io.Reader
		want     string
		maxRead  int64 // bytes the reader may consume before failing
		tooLarge bool
	}{
		{"/dev/zero", testsupport.Endless("\x00"), "trace t.csv line 1: contains a NUL byte: expected text", 64 << 10, false},
		{"/dev/urandom", rand.NewChaCha8([32]byte{1}), "trace t.csv line ", 64 << 10, false},
		{"text that is not a trace", testsupport.Endless(letters), "trace t.csv line 1: missing column TIMESTAMP", 64 << 10, false},
		{"a header, then zeros", io.MultiReader(strings.NewReader(header), testsupport.Endless("\x00")), "trace t.csv line 2: contains a NUL byte", 64 << 10, false},
		{"a header, then one endless line", io.MultiReader(strings.NewReader(header), testsupport.Endless("1,")), "trace t.csv line 2: longer than the 4 KiB line cap", 64 << 10, false},
		{"a header, then endless rows", io.MultiReader(strings.NewReader(header), testsupport.Endless("2023-11-16 18:17:03.9799600,10,2\n")),
			"trace t.csv: larger than the 1 MiB cap", caps.maxBytes + 1, true},
		{"a header line longer than the line cap", testsupport.Endless("TIMESTAMP,"), "trace t.csv line 1: longer than the 4 KiB line cap", 64 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &testsupport.CountingReader{R: tt.in}
			_, err := loadWorkload(in, "t.csv", NoElapsedLimit, caps)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
			assert.LessOrEqual(t, in.N, tt.maxRead, "bytes read before failing")
			var tooLarge *limits.TooLargeError
			assert.Equal(t, tt.tooLarge, errors.As(err, &tooLarge))
		})
	}
}

func TestLoadWorkloadChecksTheHeaderBeforeReadingTheRest(t *testing.T) {
	// 8 MiB of text after a wrong header: only the first chunk is read.
	body := "time,prompt,output\n" + strings.Repeat("2023-11-16 18:17:03,10,2\n", 8<<20/25)
	in := &testsupport.CountingReader{R: strings.NewReader(body)}
	_, err := LoadWorkload(struct{ io.Reader }{in}, "t.csv", NoElapsedLimit)
	require.EqualError(t, err, "trace t.csv line 1: missing column TIMESTAMP: trace must contain Azure columns ContextTokens, GeneratedTokens, TIMESTAMP")
	assert.LessOrEqual(t, in.N, int64(64<<10))

	// A header that needs the quoting rules is checked by the full parse.
	w, err := LoadWorkload(strings.NewReader("\"TIMESTAMP\",ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n"), "q.csv", NoElapsedLimit)
	require.NoError(t, err)
	assert.Len(t, w.Requests, 1)
	// A blank first line is the header, as csv.DictReader reads it (its
	// fieldnames are []).
	_, err = LoadWorkload(strings.NewReader("\r\n\nTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n"), "b.csv", NoElapsedLimit)
	assert.ErrorContains(t, err, "trace b.csv line 1: missing column TIMESTAMP")
}

func TestLoadWorkloadRefusesALargeFileWithoutReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse.csv")
	testsupport.SparseFile(t, path, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"), 30<<30)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = LoadWorkload(f, path, NoElapsedLimit)
	require.EqualError(t, err, "trace "+path+": 30 GiB: larger than the 4 GiB cap")
	offset, err := f.Seek(0, io.SeekCurrent)
	require.NoError(t, err)
	assert.Zero(t, offset, "nothing read")
}

func TestLoadWorkloadAcceptsATraceOfExactlyTheCap(t *testing.T) {
	body := []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n")
	w, err := loadWorkload(bytes.NewReader(body), "t.csv", NoElapsedLimit, traceCaps{maxBytes: int64(len(body)), maxLine: 40})
	require.NoError(t, err)
	assert.Len(t, w.Requests, 1)
	_, err = loadWorkload(bytes.NewReader(body), "t.csv", NoElapsedLimit, traceCaps{maxBytes: int64(len(body)) - 1, maxLine: 40})
	assert.EqualError(t, err, "trace t.csv: 65 bytes: larger than the 64 bytes cap")
}
