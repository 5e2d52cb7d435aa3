package trace

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"servesim/internal/limits"
	"servesim/internal/workload"
)

// readCaps are the bounds a trace is read within.
type readCaps struct{ maxBytes, maxLine int64 }

// defaultCaps are plant's trace caps, the same for every format.
var defaultCaps = readCaps{workload.MaxTraceBytes, workload.MaxTraceLineBytes}

// bufferBytes is the size of the read buffer; detection looks at most this
// far for the first line.
const bufferBytes = 64 << 10

// input is a trace being read: the bytes within the caps, buffered so that
// detection can look at the first line before a reader takes them, and
// hashed as they are read.
type input struct {
	br      *bufio.Reader
	hash    hash.Hash
	hashing bool  // whether bytes read are hashed (workload.ReadWorkload hashes its own)
	size    int64 // the size of the source when known before reading, else -1
	line    int   // lines returned by nextLine so far
	long    []byte
}

// newInput reads r within caps.
func newInput(r io.Reader, caps readCaps) *input {
	in := &input{hash: sha256.New(), hashing: true, size: -1}
	if size, known := limits.KnownSize(r); known {
		in.size = size
	}
	in.br = bufio.NewReaderSize(hashingReader{limits.NewText(r, caps.maxBytes, caps.maxLine), in}, bufferBytes)
	return in
}

// hashingReader feeds what it reads to its input's hash.
type hashingReader struct {
	r  io.Reader
	in *input
}

func (h hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.in.hashing {
		h.in.hash.Write(p[:n])
	}
	return n, err
}

// sum is the SHA-256 in hex of the bytes read.
func (in *input) sum() string { return hex.EncodeToString(in.hash.Sum(nil)) }

// sized is the rest of the input for workload.ReadWorkload, which hashes it
// itself and refuses a source whose size is known to exceed its cap before
// reading it.
func (in *input) sized() io.Reader {
	in.hashing = false
	if in.size < 0 {
		return in.br
	}
	return sizedReader{in.br, int(in.size)}
}

// sizedReader is a reader that tells its size (limits.KnownSize).
type sizedReader struct {
	io.Reader
	size int
}

// Len is the size of the input, read or not: nothing is read before it is
// asked.
func (s sizedReader) Len() int { return s.size }

// estimate scales a count made in the first bytes of the input, counted
// by count, to the whole input, when its size is known; 0 otherwise. It
// sizes buffers before reading, so it must be called before the first
// line is read.
func (in *input) estimate(count func(sample []byte) int) int {
	if in.size <= 0 {
		return 0
	}
	sample, _ := in.br.Peek(bufferBytes) // an error comes again at the first read
	if len(sample) == 0 {
		return 0
	}
	n := float64(count(sample)) * float64(in.size) / float64(len(sample))
	return int(min(n*(1+1.0/32), float64(in.size))) + 1
}

// nextLine returns the next line with its line feed (the last line may have
// none), or io.EOF after the last. The line is valid until the next call.
func (in *input) nextLine() ([]byte, error) {
	line, err := in.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		in.long = append(in.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = in.br.ReadSlice('\n')
			in.long = append(in.long, line...)
		}
		line = in.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	in.line++
	return line, nil
}

// readError names the trace in an error from reading it: a line that is
// not text with its line, anything else as it is.
func readError(name string, err error) error {
	var lineErr *limits.LineError
	if errors.As(err, &lineErr) {
		return fmt.Errorf("trace %s line %d: %s", name, lineErr.Line, lineErr.Reason)
	}
	return fmt.Errorf("trace %s: %w", name, err)
}

// trimEOL drops a line's line feed and a carriage return before it.
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
