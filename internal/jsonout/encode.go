package jsonout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encoder appends JSON to buf in one pass, as the package doc describes.
//
// With indent, members are written one per line, indented by two spaces per
// level, as json.Indent does, except that an array of scalars, and an
// object of scalars that is an element of an array, are written on one
// line with ", " and ": " between members: a trajectory is one line per
// series, and a table of records one line per record.
type encoder struct {
	buf    []byte
	indent bool
	depth  int
	inline int // > 0 while a container is written on one line
	// With a sink, buf is handed over whenever it passes chunkBytes, so a
	// large document is built without ever copying it to grow it.
	sink chunkSink
}

// chunkSink takes each full chunk of a document and returns the buffer the
// encoder goes on in.
type chunkSink interface {
	chunk(full []byte) (next []byte)
}

// chunkBytes is the size at which Chunks and Stream start a new chunk; no
// chunk is larger than chunkBytes plus a quarter.
const chunkBytes = 64 << 10

// newChunk returns an empty buffer with room for a chunk and the member that
// passes chunkBytes.
func newChunk() []byte { return make([]byte, 0, chunkBytes+chunkBytes/4) }

// chunkCollector keeps every chunk, for documents that are finished before
// any byte is written.
type chunkCollector struct{ chunks [][]byte }

func (c *chunkCollector) chunk(full []byte) []byte {
	c.chunks = append(c.chunks, full)
	return newChunk()
}

// chunkStreamer writes each chunk as it is completed and reuses one buffer,
// so the document is never held in memory. The first write error is kept
// and later chunks are dropped.
type chunkStreamer struct {
	w   io.Writer
	err error
}

func (c *chunkStreamer) chunk(full []byte) []byte {
	if c.err == nil {
		_, c.err = c.w.Write(full)
	}
	return full[:0]
}

// Chunks encodes v indented by two spaces, with a final newline, as
// consecutive chunks to be written in order: a large document is built
// without ever being copied to grow it.
func Chunks(v any) ([][]byte, error) {
	var collector chunkCollector
	e := encoder{buf: newChunk(), indent: true, sink: &collector}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return nil, &EncodeError{err}
	}
	return append(collector.chunks, append(e.buf, '\n')), nil
}

// Stream encodes v like Chunks but writes it to w as it goes, in chunks of
// about chunkBytes, reusing one buffer. It returns the first write error,
// or an *EncodeError, which cannot happen for a value whose type is
// Streamable: part of the document may have been written by then.
func Stream(w io.Writer, v any) error {
	streamer := chunkStreamer{w: w}
	e := encoder{buf: newChunk(), indent: true, sink: &streamer}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return &EncodeError{err}
	}
	streamer.chunk(append(e.buf, '\n'))
	return streamer.err
}

// appendIndented appends v to buf, indented as Chunks does it, without a
// final newline.
func appendIndented(buf []byte, v any) ([]byte, error) {
	e := encoder{buf: buf, indent: true}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return e.buf, &EncodeError{err}
	}
	return e.buf, nil
}

// AppendLine appends v to buf as one line of compact JSON (JSON Lines) and
// a newline.
func AppendLine(buf []byte, v any) ([]byte, error) {
	e := encoder{buf: buf}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return e.buf, &EncodeError{err}
	}
	return append(e.buf, '\n'), nil
}

// open starts an object or array member list.
func (e *encoder) open(c byte) {
	e.buf = append(e.buf, c)
	e.depth++
}

// separate starts the i-th member: a comma after the first, then a line
// break and the indentation.
func (e *encoder) separate(i int) {
	if e.sink != nil && len(e.buf) >= chunkBytes {
		e.buf = e.sink.chunk(e.buf)
	}
	if i > 0 {
		e.buf = append(e.buf, ',')
	}
	if e.inline > 0 {
		if i > 0 {
			e.buf = append(e.buf, ' ')
		}
		return
	}
	e.newline()
}

// close ends a member list of n members.
func (e *encoder) close(c byte, n int) {
	e.depth--
	if n > 0 && e.inline == 0 {
		e.newline()
	}
	e.buf = append(e.buf, c)
}

func (e *encoder) newline() {
	if !e.indent {
		return
	}
	e.buf = append(e.buf, '\n')
	for range e.depth {
		e.buf = append(e.buf, ' ', ' ')
	}
}

// key writes a member's name and the colon.
func (e *encoder) key(name string) {
	e.buf = appendJSONString(e.buf, name)
	e.colon()
}

// quotedKey writes a member's name that is already a JSON string (as
// structFields prepares them) and the colon.
func (e *encoder) quotedKey(quoted string) {
	e.buf = append(e.buf, quoted...)
	e.colon()
}

func (e *encoder) colon() {
	e.buf = append(e.buf, ':')
	if e.indent {
		e.buf = append(e.buf, ' ')
	}
}

func (e *encoder) value(v reflect.Value) error {
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	return e.typedValue(v, typeInfoOf(v.Type()))
}

// typedValue writes v, whose type's encoding facts are info.
func (e *encoder) typedValue(v reflect.Value, info *typeInfo) error {
	if info.object {
		return e.object(v.Interface().(Object))
	}
	if info.raw {
		return e.rawMessage(v.Bytes())
	}
	if info.unsupported != "" {
		return errors.New(info.unsupported)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(v.Elem())
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		e.buf = appendJSONFloat(e.buf, v.Float(), v.Type().Bits())
	case reflect.String:
		e.buf = appendJSONString(e.buf, v.String())
	case reflect.Slice, reflect.Array:
		if e.indent && e.inline == 0 && flatArray(v) {
			return e.oneLine(func() error { return e.list(v) })
		}
		return e.list(v)
	case reflect.Map:
		return e.mapValue(v)
	case reflect.Struct:
		e.open('{')
		n, err := e.fields(v, info.fields)
		e.close('}', n)
		return err
	default:
		return fmt.Errorf("cannot encode %s as JSON", v.Type())
	}
	return nil
}

// list writes a slice or array; []float64 and []int, the bulk of a
// trajectory, skip reflection per element.
func (e *encoder) list(v reflect.Value) error {
	e.open('[')
	n := v.Len()
	switch s := v.Interface().(type) {
	case []float64:
		for i, x := range s {
			e.separate(i)
			e.buf = appendJSONFloat(e.buf, x, 64)
		}
	case []int:
		for i, x := range s {
			e.separate(i)
			e.buf = strconv.AppendInt(e.buf, int64(x), 10)
		}
	default:
		info := typeInfoOf(v.Type().Elem())
		for i := range n {
			e.separate(i)
			elem := v.Index(i)
			var err error
			if e.indent && e.inline == 0 && flatObject(elem, info) {
				err = e.oneLine(func() error { return e.typedValue(elem, info) })
			} else {
				err = e.typedValue(elem, info)
			}
			if err != nil {
				return err
			}
		}
	}
	e.close(']', n)
	return nil
}

// oneLine runs write with members separated by ", " instead of line breaks.
func (e *encoder) oneLine(write func() error) error {
	e.inline++
	err := write()
	e.inline--
	return err
}

// rawMessage writes JSON text as it is, re-indented to fit, or compacted
// (as encoding/json writes a json.RawMessage); nil is null.
func (e *encoder) rawMessage(raw []byte) error {
	if raw == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	out := bytes.NewBuffer(e.buf)
	var err error
	if e.indent && e.inline == 0 {
		err = json.Indent(out, raw, strings.Repeat("  ", e.depth), "  ")
	} else {
		err = json.Compact(out, raw)
	}
	if err != nil {
		return fmt.Errorf("json.RawMessage %.40q: %w", raw, err)
	}
	e.buf = out.Bytes()
	return nil
}

// object writes an Object's members in their order.
func (e *encoder) object(o Object) error {
	e.open('{')
	for i, m := range o {
		e.separate(i)
		e.key(m.Key)
		if err := e.value(reflect.ValueOf(m.Value)); err != nil {
			return err
		}
	}
	e.close('}', len(o))
	return nil
}

func (e *encoder) mapValue(v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		k := iter.Key()
		var key string
		switch k.Kind() {
		case reflect.String:
			key = k.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			key = strconv.FormatInt(k.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			key = strconv.FormatUint(k.Uint(), 10)
		default:
			return fmt.Errorf("cannot encode map key type %s as JSON", k.Type())
		}
		entries = append(entries, entry{key, iter.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	e.open('{')
	for i, en := range entries {
		e.separate(i)
		e.key(en.key)
		if err := e.value(en.val); err != nil {
			return err
		}
	}
	e.close('}', len(entries))
	return nil
}

// fields writes the members of struct v and returns how many it wrote.
func (e *encoder) fields(v reflect.Value, fields []structField) (int, error) {
	n := 0
	for i := range fields {
		f := &fields[i]
		var fv reflect.Value
		if len(f.index) == 1 {
			fv = v.Field(f.index[0])
		} else if fv = fieldOf(v, f); !fv.IsValid() {
			continue // behind a nil embedded pointer
		}
		if f.omitEmpty && isEmptyValue(fv) || f.omitZero && isZeroValue(fv) {
			continue
		}
		e.separate(n)
		n++
		e.quotedKey(f.quotedName)
		if err := e.typedValue(fv, f.info); err != nil {
			return n, err
		}
	}
	return n, nil
}

// isEmptyValue is encoding/json's omitempty test: false, 0, a nil pointer
// or interface, and an empty array, slice, map or string (never a struct).
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		return false
	default:
		return v.IsZero()
	}
}

// appendJSONFloat formats f as encoding/json does, but NaN and infinities
// as null.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && (f != 0 || !math.Signbit(f)) {
		// Whole numbers (token counts, clock levels) print as integers,
		// as the shortest formatting would, without its cost.
		return strconv.AppendInt(b, int64(f), 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// Shorten e-09 to e-9, as encoding/json does.
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, HTML
// characters and other text as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Member is one member of an Object.
type Member struct {
	Key   string // the member name
	Value any    // the member value, encoded by the package's rules
}

// Object is a JSON object whose members keep their order (a Go map would
// sort them). It holds interface values, so a document with one is not
// Streamable.
type Object []Member

// EncodeError reports a value that cannot be encoded: a kind JSON cannot
// hold or a type the package does not support.
type EncodeError struct{ Err error }

// Error reads "encoding result: why".
func (e *EncodeError) Error() string { return "encoding result: " + e.Err.Error() }

// Unwrap returns why.
func (e *EncodeError) Unwrap() error { return e.Err }
