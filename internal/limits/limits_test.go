package limits

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 512: "512 bytes", KiB: "1 KiB", 1536: "1.5 KiB", 16 * MiB: "16 MiB",
		4 * GiB: "4 GiB", 30 * GiB: "30 GiB", 30*GiB + 1: "30.0 GiB",
	} {
		assert.Equal(t, want, FormatBytes(n), "%d", n)
	}
}

func TestTextStopsAtTheFirstBoundCrossed(t *testing.T) {
	tests := []struct {
		name string
		in   io.Reader
		want error
	}{
		{"zeros", testsupport.Endless("\x00"), &LineError{Line: 1, Reason: "contains a NUL byte: expected text"}},
		{"a NUL on line 3", strings.NewReader("a\nb\nc\x00\n"), &LineError{Line: 3, Reason: "contains a NUL byte: expected text"}},
		{"an overlong line 2", strings.NewReader("short\n" + strings.Repeat("x", 17) + "\n"), &LineError{Line: 2, Reason: "longer than the 16 bytes line cap"}},
		{"a stream past the cap", io.LimitReader(strings.NewReader(strings.Repeat("0123456789\n", 10)), 65), &TooLargeError{Size: -1, Cap: 64}},
		{"a known size past the cap", bytes.NewReader(make([]byte, 100)), &TooLargeError{Size: 100, Cap: 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := io.ReadAll(NewText(tt.in, 64, 16))
			assert.Equal(t, tt.want, err)
		})
	}
}

func TestTextPassesTextWithinTheBounds(t *testing.T) {
	for _, body := range []string{"", "a", "0123456789abcdef\n", strings.Repeat("0123456789abcde\n", 4)} {
		got, err := io.ReadAll(NewText(io.MultiReader(strings.NewReader(body)), 64, 16))
		require.NoError(t, err, "%q", body)
		assert.Equal(t, body, string(got))
	}
	// Line numbers run across reads of any size.
	in := NewText(iotestOneByte{strings.NewReader("a\nb\n\nc\x00")}, 64, 16)
	_, err := io.ReadAll(in)
	assert.Equal(t, &LineError{Line: 4, Reason: "contains a NUL byte: expected text"}, err)
}

// iotestOneByte reads one byte at a time.
type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestReadAll(t *testing.T) {
	data, err := ReadAll(strings.NewReader("12345678"), 8)
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(data))

	_, err = ReadAll(testsupport.Endless("\x00"), 1<<20)
	assert.Equal(t, &TooLargeError{Size: -1, Cap: 1 << 20}, err)

	path := filepath.Join(t.TempDir(), "sparse")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Truncate(path, 30*GiB))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = ReadAll(f, 16*MiB)
	assert.EqualError(t, err, "30 GiB: larger than the 16 MiB cap")
	var tooLarge *TooLargeError
	assert.True(t, errors.As(err, &tooLarge))
}

// FuzzText checks the reader against a direct reading of the bounds: any
// input, any read pattern, any caps.
func FuzzText(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\n"), int64(9), int64(3), uint8(2))
	f.Add([]byte("a\x00"), int64(100), int64(100), uint8(1))
	f.Add([]byte(strings.Repeat("x", 40)), int64(30), int64(100), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, maxBytes, maxLine int64, chunk uint8) {
		if maxBytes < 0 || maxLine < 0 {
			return
		}
		n := max(1, int(chunk))
		got, err := io.ReadAll(NewText(chunked{struct{ io.Reader }{bytes.NewReader(data)}, n}, maxBytes, maxLine))
		want := expectedTextError(data, maxBytes, maxLine)
		if (err == nil) != (want == nil) {
			t.Fatalf("error %v, want %v", err, want)
		}
		if err == nil {
			if !bytes.Equal(got, data) {
				t.Fatal("data changed")
			}
			return
		}
		if int64(len(got)) > maxBytes {
			t.Fatalf("passed %d bytes past the cap %d", len(got), maxBytes)
		}
	})
}

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// expectedTextError is the first bound data crosses, or nil.
func expectedTextError(data []byte, maxBytes, maxLine int64) error {
	var lineLen int64
	for i, b := range data {
		if int64(i) >= maxBytes {
			return &TooLargeError{Size: -1, Cap: maxBytes}
		}
		switch {
		case b == 0:
			return errors.New("NUL")
		case b == '\n':
			lineLen = 0
		default:
			if lineLen++; lineLen > maxLine {
				return errors.New("line")
			}
		}
	}
	return nil
}

func TestQuoteCutsALongField(t *testing.T) {
	assert.Equal(t, `"4808"`, Quote("4808"))
	assert.Equal(t, `""`, Quote(""))
	exact := strings.Repeat("é", MaxQuotedChars)
	assert.Equal(t, strconv.Quote(exact), Quote(exact))
	long := "\"" + strings.Repeat("2023-11-16 18:17:03.9799600,4808,10\n", 9000)
	got := Quote(long)
	assert.Equal(t, strconv.Quote(long[:MaxQuotedChars])+"... (324001 bytes)", got)
	assert.Less(t, len(got), 2*MaxQuotedChars)
	oneOver := strings.Repeat("é", MaxQuotedChars-1) + "xy"
	assert.Equal(t, strconv.Quote(strings.Repeat("é", MaxQuotedChars-1)+"x")+"... (160 bytes)", Quote(oneOver), "characters, not bytes")
}

func TestOneLine(t *testing.T) {
	assert.Equal(t, "a b c", OneLine(" a\nb\r\n\tc "))
	assert.Equal(t, "", OneLine("\n"))
}
