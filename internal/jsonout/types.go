package jsonout

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	zeroerType        = reflect.TypeFor[interface{ IsZero() bool }]()
	objectType        = reflect.TypeFor[Object]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
)

// typeInfo is what the encoder needs to know about a type, worked out once
// per type instead of once per value.
type typeInfo struct {
	object bool // the type is Object
	raw    bool // the type is json.RawMessage
	// unsupported says why a value of the type itself cannot be encoded (a
	// marshaler, a ",string" field, two members of one name); empty when
	// it can. Kinds JSON cannot hold are found when a value is met.
	unsupported string
	// scalar: every value is null, a boolean, a number or a string (a
	// pointer to such a type included).
	scalar bool
	// flatStruct: a struct whose encoded members are all scalar.
	flatStruct bool
	fields     []structField // a struct's members, in encoding order
}

var typeInfoCache sync.Map // reflect.Type -> *typeInfo

// typeInfoOf returns the encoding facts of t, computed once.
func typeInfoOf(t reflect.Type) *typeInfo {
	if cached, ok := typeInfoCache.Load(t); ok {
		return cached.(*typeInfo)
	}
	info := &typeInfo{object: t == objectType, raw: t == rawMessageType}
	switch {
	case info.raw:
	case t.Implements(jsonMarshalerType) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonMarshalerType):
		info.unsupported = fmt.Sprintf("%s implements json.Marshaler, which jsonout does not call", t)
	case t.Implements(textMarshalerType) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textMarshalerType):
		info.unsupported = fmt.Sprintf("%s implements encoding.TextMarshaler, which jsonout does not call", t)
	}
	plain := !info.object && !info.raw && info.unsupported == ""
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
		if plain {
			info.fields, info.unsupported = structFields(t)
			info.flatStruct = info.unsupported == "" && fieldsAreScalar(info.fields)
		}
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

// fieldsAreScalar reports whether every member has a scalar type.
func fieldsAreScalar(fields []structField) bool {
	for i := range fields {
		if !fields[i].info.scalar {
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
// members are all scalars: a flat struct, a map of scalars or an Object of
// scalars (pointers and interfaces are followed).
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
	case info.object:
		for _, m := range v.Interface().(Object) {
			if !isScalarValue(reflect.ValueOf(m.Value)) {
				return false
			}
		}
		return true
	case v.Kind() != reflect.Map || info.unsupported != "" || info.raw || v.IsNil():
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

// structField is how one member of a struct type is encoded.
type structField struct {
	index      []int  // field indexes from the struct through embedded structs
	name       string // the member name
	quotedName string // the member name as a JSON string
	tagged     bool   // the name comes from a json tag
	omitEmpty  bool
	omitZero   bool
	info       *typeInfo // the field type's facts
}

// structFields lists the members of struct type t as encoding/json does:
// exported fields by their tag or Go name; fields of untagged embedded
// structs (or pointers to them) promoted, a shallower one hiding deeper
// ones of the same name and, at one depth, a tagged one hiding untagged
// ones; in field order. Where encoding/json would silently drop two
// members of the same name that neither hides, or would quote a value
// (",string"), it returns why the type is not supported instead.
func structFields(t reflect.Type) ([]structField, string) {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var all []structField
	visited := map[reflect.Type]bool{}
	next := []level{{typ: t}}
	for len(next) > 0 {
		current := next
		next = nil
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				index := append(slices.Clip(l.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					continue
				}
				if hasOption(opts, "string") {
					return nil, fmt.Sprintf("%s: field %s has the \",string\" option, which jsonout does not support", t, sf.Name)
				}
				f := structField{index: index, name: name, tagged: name != "",
					omitEmpty: hasOption(opts, "omitempty"), omitZero: hasOption(opts, "omitzero")}
				if f.name == "" {
					f.name = sf.Name
				}
				all = append(all, f)
			}
		}
	}
	// Per name, the shallowest fields; of those a single one, or a single
	// tagged one, is the member.
	slices.SortStableFunc(all, func(a, b structField) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(len(a.index), len(b.index)))
	})
	var out []structField
	for start := 0; start < len(all); {
		end := start + 1
		for end < len(all) && all[end].name == all[start].name && len(all[end].index) == len(all[start].index) {
			end++
		}
		group := all[start:end]
		winner := -1
		if len(group) == 1 {
			winner = 0
		} else {
			for k := range group {
				if group[k].tagged {
					if winner >= 0 {
						winner = -1
						break
					}
					winner = k
				}
			}
		}
		if winner < 0 {
			return nil, fmt.Sprintf("%s: %d fields at one depth are the member %q and none hides the others (encoding/json would drop them all)", t, len(group), group[0].name)
		}
		out = append(out, group[winner])
		start = end
		for start < len(all) && all[start].name == group[0].name {
			start++ // deeper fields of the name are hidden
		}
	}
	slices.SortFunc(out, func(a, b structField) int { return slices.Compare(a.index, b.index) })
	for i := range out {
		f := &out[i]
		f.quotedName = string(appendJSONString(nil, f.name))
		f.info = typeInfoOf(t.FieldByIndex(f.index).Type)
	}
	return out, ""
}

// hasOption reports whether a json tag's comma-separated options hold opt.
func hasOption(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// fieldOf returns the field of struct v at f's index, or the zero Value
// when an embedded pointer on the way is nil (the member is then left out).
func fieldOf(v reflect.Value, f *structField) reflect.Value {
	for k, i := range f.index {
		if k > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// isZeroValue is encoding/json's omitzero test: the value's IsZero method
// when its type (or a pointer to it) has one, else reflect's zero value.
func isZeroValue(v reflect.Value) bool {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer && t.Implements(zeroerType):
		return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
	case t.Implements(zeroerType):
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	case reflect.PointerTo(t).Implements(zeroerType):
		p := reflect.New(t)
		p.Elem().Set(v)
		return p.Interface().(interface{ IsZero() bool }).IsZero()
	}
	return v.IsZero()
}

var streamableCache sync.Map // reflect.Type -> bool

// Streamable reports whether every value of type t encodes without error:
// no interface values or Objects (their members' types are unknown), no
// json.RawMessage (it may not be JSON), no unsupported types (see the
// package doc) and only kinds JSON can hold.
// Such a document can be written while it is encoded (Stream), since
// nothing after its first byte can fail but the writing itself.
func Streamable(t reflect.Type) bool {
	if cached, ok := streamableCache.Load(t); ok {
		return cached.(bool)
	}
	ok := typeStreamable(t, map[reflect.Type]bool{})
	streamableCache.Store(t, ok)
	return ok
}

// typeStreamable is Streamable for t; seen holds the types being checked,
// which a recursive type may meet again.
func typeStreamable(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	info := typeInfoOf(t)
	if info.object || info.raw || info.unsupported != "" {
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
		for i := range info.fields {
			if !typeStreamable(t.FieldByIndex(info.fields[i].index).Type, seen) {
				return false
			}
		}
		return true
	default:
		return false
	}
}
