// Package limits bounds what servesim reads: a reader that stops a text
// input at a byte cap, at a NUL byte or at an overlong line, a capped
// whole-file read, the errors that name the cap, and a quote of an input
// field short enough for a message. Every cap is checked before memory
// grows past it, so /dev/zero, /dev/urandom, an endless FIFO or a huge
// sparse file fails within a few reads.
package limits

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Byte units for caps and messages.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// TooLargeError reports an input longer than its cap.
type TooLargeError struct {
	Size int64 // the input's size when it was known before reading (a regular file), else -1
	Cap  int64 // the cap, bytes
}

// Error reads "30 GiB: larger than the 4 GiB cap", or "larger than the
// 4 GiB cap" for a stream.
func (e *TooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s: larger than the %s cap", FormatBytes(e.Size), FormatBytes(e.Cap))
	}
	return fmt.Sprintf("larger than the %s cap", FormatBytes(e.Cap))
}

// LineError reports a line of a text input that is not text: one holding
// a NUL byte, or one longer than the line cap.
type LineError struct {
	Line   int    // 1-based line number
	Reason string // what is wrong and what was expected
}

// Error reads "line 3: contains a NUL byte: expected text".
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// FormatBytes writes n in the largest binary unit that divides it, else in
// the largest unit it reaches with one decimal: "4 GiB", "1.5 MiB",
// "512 bytes".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// KnownSize is the size of r when it can be known without reading: a
// regular file's size or an in-memory reader's length.
func KnownSize(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if info, err := v.Stat(); err == nil && info.Mode().IsRegular() {
			return info.Size(), true
		}
	case interface{ Len() int }:
		return int64(v.Len()), true
	}
	return 0, false
}

// ReadAll reads r whole when it holds at most maxBytes bytes; otherwise it
// fails with a *TooLargeError, before reading anything when r's size is
// known and after maxBytes+1 bytes when it is not.
func ReadAll(r io.Reader, maxBytes int64) ([]byte, error) {
	size, known := KnownSize(r)
	if known && size > maxBytes {
		return nil, &TooLargeError{Size: size, Cap: maxBytes}
	}
	var buf bytes.Buffer
	if known {
		buf.Grow(int(size) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxBytes {
		return nil, &TooLargeError{Size: -1, Cap: maxBytes}
	}
	return buf.Bytes(), nil
}

// Text reads a text input through three bounds: at most MaxBytes bytes in
// all, no NUL byte (Python's csv module rejects one too) and no line longer
// than MaxLine bytes. A bound crossed is an error from Read (a
// *TooLargeError or a *LineError) as soon as the bytes that cross it are
// read; a regular file larger than MaxBytes fails at the first Read.
type Text struct {
	r        io.Reader
	maxBytes int64
	maxLine  int64
	read     int64 // bytes passed on
	line     int   // 1-based line of the next byte
	lineLen  int64 // bytes of the current line read so far
	started  bool
	err      error
}

// NewText returns a Text reading r with the given caps.
func NewText(r io.Reader, maxBytes, maxLine int64) *Text {
	return &Text{r: r, maxBytes: maxBytes, maxLine: maxLine, line: 1}
}

// Read implements io.Reader.
func (t *Text) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if !t.started {
		t.started = true
		if size, known := KnownSize(t.r); known && size > t.maxBytes {
			t.err = &TooLargeError{Size: size, Cap: t.maxBytes}
			return 0, t.err
		}
	}
	// Read one byte past the cap, so that an input of exactly the cap
	// passes and a longer one fails.
	if room := t.maxBytes - t.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := t.r.Read(p)
	if n > 0 {
		if checkErr := t.check(p[:n]); checkErr != nil {
			t.err = checkErr
			return 0, checkErr
		}
	}
	return n, err
}

// check applies the bounds to the next chunk of input, the earliest
// problem first.
func (t *Text) check(chunk []byte) error {
	if err := t.checkLines(chunk); err != nil {
		return err
	}
	if t.read += int64(len(chunk)); t.read > t.maxBytes {
		return &TooLargeError{Size: -1, Cap: t.maxBytes}
	}
	return nil
}

// checkLines finds a NUL byte or an overlong line in the next chunk.
func (t *Text) checkLines(chunk []byte) error {
	nul := bytes.IndexByte(chunk, 0)
	for rest := chunk; ; {
		end := bytes.IndexByte(rest, '\n')
		segment := rest
		if end >= 0 {
			segment = rest[:end]
		}
		if nul >= 0 && nul < len(chunk)-len(rest)+len(segment) {
			return &LineError{Line: t.line, Reason: "contains a NUL byte: expected text"}
		}
		if t.lineLen += int64(len(segment)); t.lineLen > t.maxLine {
			return &LineError{Line: t.line, Reason: fmt.Sprintf("longer than the %s line cap", FormatBytes(t.maxLine))}
		}
		if end < 0 {
			return nil
		}
		t.line++
		t.lineLen = 0
		rest = rest[end+1:]
	}
}

// MaxQuotedChars is the most characters of an input field that an error
// message quotes: a field can be as long as a line (a stray quote in a CSV
// file can make it far longer), and a message stays one readable line.
const MaxQuotedChars = 80

// Quote returns field as a double-quoted Go string (strconv.Quote) when it
// has at most MaxQuotedChars characters; a longer field is cut there and
// the quote is followed by "..." and the field's length in bytes:
// "2023-11-16 18:17:03..." (320117 bytes).
func Quote(field string) string {
	cut, chars := 0, 0
	for cut < len(field) && chars < MaxQuotedChars {
		_, size := utf8.DecodeRuneInString(field[cut:])
		cut += size
		chars++
	}
	if cut == len(field) {
		return strconv.Quote(field)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(field[:cut]), len(field))
}

// OneLine folds a message onto one line: every run of white space,
// line breaks included, becomes one space.
func OneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}
