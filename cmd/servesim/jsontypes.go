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
	// scalar: every value is null, a boolean, a number or a string (a
	// pointer to such a type included).
	scalar bool
	// flatStruct: a struct whose encoded members are all scalar.
	flatStruct bool
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
	plain := !info.ordered && !info.marshaler && !info.pointerMarshaler && !info.textMarshaler
	switch t.Kind() {
	case reflect.Pointer:
		// Only a pointer chain to a scalar kind is looked into, so that a
		// type referring to itself through a pointer never recurses.
		base := t.Elem()
		for depth := 0; base.Kind() == reflect.Pointer && depth < 8; depth++ {
			base = base.Elem()
		}
		info.scalar = plain && isScalarKind(base.Kind()) && typeInfoOf(t.Elem()).scalar
	case reflect.Struct:
		info.flatStruct = plain && structIsFlat(t)
	default:
		info.scalar = plain && isScalarKind(t.Kind())
	}
	cached, _ := typeInfoCache.LoadOrStore(t, info)
	return cached.(*typeInfo)
}

// isScalarKind reports whether values of kind k are booleans, numbers or
// strings.
func isScalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// structIsFlat reports whether every encoded member of struct type t,
// embedded structs' members included, has a scalar type.
func structIsFlat(t reflect.Type) bool {
	for _, f := range structFields(t) {
		ft := t.Field(f.index).Type
		if f.inline {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !structIsFlat(ft) {
				return false
			}
			continue
		}
		if !f.info.scalar {
			return false
		}
	}
	return true
}

// isScalarValue reports whether v is written as null, a boolean, a number
// or a string; for interface values the dynamic type decides.
func isScalarValue(v reflect.Value) bool {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return true
		}
		if v.Kind() == reflect.Pointer {
			return typeInfoOf(v.Type()).scalar
		}
		v = v.Elem()
	}
	return !v.IsValid() || typeInfoOf(v.Type()).scalar
}

// flatArray reports whether v, a slice or array, holds scalars only.
func flatArray(v reflect.Value) bool {
	if typeInfoOf(v.Type().Elem()).scalar {
		return true
	}
	if v.Type().Elem().Kind() != reflect.Interface {
		return false
	}
	for i := range v.Len() {
		if !isScalarValue(v.Index(i)) {
			return false
		}
	}
	return true
}

// flatObject reports whether v, of type info, is written as an object whose
// members are all scalars: a flat struct, a map of scalars or an
// orderedObject of scalars (pointers and interfaces are followed).
func flatObject(v reflect.Value, info *typeInfo) bool {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
		info = typeInfoOf(v.Type())
	}
	switch {
	case info.flatStruct:
		return true
	case info.ordered:
		for _, kv := range v.Interface().(orderedObject) {
			if !isScalarValue(reflect.ValueOf(kv.value)) {
				return false
			}
		}
		return true
	case v.Kind() != reflect.Map || info.marshaler || info.pointerMarshaler || info.textMarshaler || v.IsNil():
		return false
	case typeInfoOf(v.Type().Elem()).scalar:
		return true
	case v.Type().Elem().Kind() != reflect.Interface:
		return false
	}
	iter := v.MapRange()
	for iter.Next() {
		if !isScalarValue(iter.Value()) {
			return false
		}
	}
	return true
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
	if isScalarKind(t.Kind()) {
		return true
	}
	switch t.Kind() {
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
