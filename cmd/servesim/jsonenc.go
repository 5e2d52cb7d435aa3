package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// encodeJSON writes v to buf as JSON indented by two spaces. It follows
// encoding/json's rules for struct tags (name, omitempty, "-"), embedded
// structs, maps with sorted keys and json.Marshaler, with three differences
// that make results safe for every JSON reader: NaN and infinities are
// written as null, nil slices as [] and HTML characters are not escaped.
func encodeJSON(buf *bytes.Buffer, v any) error {
	var compact bytes.Buffer
	if err := encodeValue(&compact, reflect.ValueOf(v)); err != nil {
		return err
	}
	return json.Indent(buf, compact.Bytes(), "", "  ")
}

// encodeJSONLine writes v to buf as one line of compact JSON (JSON Lines),
// with the same rules as encodeJSON, and a newline.
func encodeJSONLine(buf *bytes.Buffer, v any) error {
	if err := encodeValue(buf, reflect.ValueOf(v)); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return nil
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func encodeValue(buf *bytes.Buffer, v reflect.Value) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(v.Type()).Implements(jsonMarshalerType) {
		v = v.Addr()
	}
	if v.Type().Implements(jsonMarshalerType) {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		raw, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return err
		}
		return json.Compact(buf, raw)
	}
	if v.Type().Implements(textMarshalerType) && v.Kind() != reflect.Pointer {
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		writeString(buf, string(text))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return encodeValue(buf, v.Elem())
	case reflect.Bool:
		buf.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		writeFloat(buf, v.Float(), v.Type().Bits())
	case reflect.String:
		writeString(buf, v.String())
	case reflect.Slice, reflect.Array:
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeValue(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case reflect.Map:
		return encodeMap(buf, v)
	case reflect.Struct:
		buf.WriteByte('{')
		first := true
		if err := encodeFields(buf, v, &first); err != nil {
			return err
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("cannot encode %s as JSON", v.Type())
	}
	return nil
}

// writeFloat formats f as encoding/json does, but NaN and infinities as null.
func writeFloat(buf *bytes.Buffer, f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		buf.WriteString("null")
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, bits)
	if format == 'e' {
		// Shorten e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	buf.Write(b)
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

func encodeMap(buf *bytes.Buffer, v reflect.Value) error {
	if v.IsNil() {
		buf.WriteString("null")
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
	buf.WriteByte('{')
	for i, e := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(buf, e.key)
		buf.WriteByte(':')
		if err := encodeValue(buf, e.val); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// encodeFields writes the fields of struct v, inlining untagged embedded
// structs; first tracks whether a separating comma is due.
func encodeFields(buf *bytes.Buffer, v reflect.Value, first *bool) error {
	t := v.Type()
	for i := range t.NumField() {
		field := t.Field(i)
		tag := field.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if field.Anonymous && name == "" {
			ft := field.Type
			if ft.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv, ft = fv.Elem(), ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := encodeFields(buf, fv, first); err != nil {
					return err
				}
				continue
			}
		}
		if !field.IsExported() {
			continue
		}
		if name == "" {
			name = field.Name
		}
		if strings.Contains(opts, "omitempty") && isEmptyValue(fv) {
			continue
		}
		if !*first {
			buf.WriteByte(',')
		}
		*first = false
		writeString(buf, name)
		buf.WriteByte(':')
		if err := encodeValue(buf, fv); err != nil {
			return err
		}
	}
	return nil
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	default:
		return v.IsZero()
	}
}

// keyedValue is one member of an orderedObject.
type keyedValue struct {
	key   string
	value any
}

// orderedObject is a JSON object whose members keep their order (a Go map
// would sort them), encoded with servesim's result encoder.
type orderedObject []keyedValue

// MarshalJSON writes the members in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(&buf, kv.key)
		buf.WriteByte(':')
		if err := encodeValue(&buf, reflect.ValueOf(kv.value)); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
