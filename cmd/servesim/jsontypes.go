package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	orderedObjectType = reflect.TypeFor[orderedObject]()
)

// typeInfo is what the encoder needs to know about a type, worked out once
// per type instead of once per value.
type typeInfo struct {
	ordered          bool // the type is orderedObject
	marshaler        bool // the type implements json.Marshaler
	pointerMarshaler bool // only a pointer to the type implements json.Marshaler
	textMarshaler    bool // the type implements encoding.TextMarshaler
}

var typeInfoCache sync.Map // reflect.Type -> *typeInfo

// typeInfoOf returns the encoding facts of t, computed once.
func typeInfoOf(t reflect.Type) *typeInfo {
	if cached, ok := typeInfoCache.Load(t); ok {
		return cached.(*typeInfo)
	}
	info := &typeInfo{
		ordered:       t == orderedObjectType,
		marshaler:     t.Implements(jsonMarshalerType),
		textMarshaler: t.Implements(textMarshalerType),
	}
	info.pointerMarshaler = !info.marshaler && t.Kind() != reflect.Pointer &&
		reflect.PointerTo(t).Implements(jsonMarshalerType)
	cached, _ := typeInfoCache.LoadOrStore(t, info)
	return cached.(*typeInfo)
}

// structField is how one field of a struct type is encoded.
type structField struct {
	index      int
	quotedName string // the member name as a JSON string
	omitEmpty  bool
	inline     bool      // an untagged embedded struct (or pointer to one)
	info       *typeInfo // the field type's facts
}

var structFieldCache sync.Map // reflect.Type -> []structField

// structFields lists the encoded fields of struct type t, computed once.
func structFields(t reflect.Type) []structField {
	if cached, ok := structFieldCache.Load(t); ok {
		return cached.([]structField)
	}
	var out []structField
	for i := range t.NumField() {
		field := t.Field(i)
		tag := field.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := field.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if field.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, structField{index: i, inline: true})
			continue
		}
		if !field.IsExported() {
			continue
		}
		if name == "" {
			name = field.Name
		}
		out = append(out, structField{index: i, quotedName: string(appendJSONString(nil, name)),
			omitEmpty: strings.Contains(opts, "omitempty"), info: typeInfoOf(field.Type)})
	}
	structFieldCache.Store(t, out)
	return out
}

var streamableCache sync.Map // reflect.Type -> bool

// streamable reports whether every value of type t encodes without error:
// no interface values (their dynamic types are unknown), no marshalers
// (they may fail) and only kinds JSON can hold. Such a document can be
// written while it is encoded, since nothing after its first byte can fail
// but the writing itself.
func streamable(t reflect.Type) bool {
	if cached, ok := streamableCache.Load(t); ok {
		return cached.(bool)
	}
	ok := typeStreamable(t, map[reflect.Type]bool{})
	streamableCache.Store(t, ok)
	return ok
}

// typeStreamable is streamable for t; seen holds the types being checked,
// which a recursive type may meet again.
func typeStreamable(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	info := typeInfoOf(t)
	if info.ordered || info.marshaler || info.pointerMarshaler || info.textMarshaler {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return typeStreamable(t.Elem(), seen)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return typeStreamable(t.Elem(), seen)
		}
		return false
	case reflect.Struct:
		for _, f := range structFields(t) {
			if !typeStreamable(t.Field(f.index).Type, seen) {
				return false
			}
		}
		return true
	default:
		return false
	}
}
