package jcs

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
)

// Marshal returns the RFC 8785 canonical JSON of v, one of the gateway's
// own records (evidence's GatewayDecisionReceipt, AuditEvent,
// ServerReceipt, ScanResult, ... or a pointer to one): byte for byte what
// [Canonical] makes of json.Marshal(v), with the same errors (wrapping
// [ErrInexactNumber] for an integer a double cannot carry, and an error for
// a NaN or infinite float or invalid raw JSON).
//
// It writes the members of each struct directly in canonical order (sorted
// by name, as the json tags name them, with encoding/json's omitempty and
// omitzero), strings and numbers in canonical form, and json.RawMessage
// values through [Canonical] (no copy when already canonical), so no
// canonicalization pass over the whole record is needed. The order is
// derived from the types once, so it does not depend on the order in which
// fields are declared. A type it cannot encode this way (maps, interfaces,
// embedded structs, custom marshalers) falls back to [Canonical] of
// json.Marshal(v). The result is a new slice.
func Marshal(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return []byte("null"), nil
	}
	enc, err := encoderFor(rv.Type())
	if err != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("jcs: encode %T: %w", v, err)
		}
		return Canonical(b)
	}
	buf := bufPool.Get().(*[]byte)
	b, err := enc((*buf)[:0], rv)
	var out []byte
	if err == nil {
		out = bytes.Clone(b)
	}
	if cap(b) <= 64<<10 {
		*buf = b
		bufPool.Put(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("jcs: encode %T: %w", v, err)
	}
	return out, nil
}

// bufPool holds encoding buffers: a record is encoded into one and copied
// out at its exact size.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonEncoder appends the canonical JSON of v to b.
type canonEncoder func(b []byte, v reflect.Value) ([]byte, error)

// errUnsupported: a type Marshal leaves to encoding/json.
var errUnsupported = errors.New("jcs: type not supported by the canonical encoder")

var (
	encoders sync.Map // reflect.Type -> canonEncoder or error

	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// encoderFor returns the encoder of t, building and caching it on first
// use, or errUnsupported (wrapped).
func encoderFor(t reflect.Type) (canonEncoder, error) {
	if e, ok := encoders.Load(t); ok {
		if err, bad := e.(error); bad {
			return nil, err
		}
		return e.(canonEncoder), nil
	}
	enc, err := buildEncoder(t, map[reflect.Type]*canonEncoder{})
	if err != nil {
		encoders.Store(t, err)
		return nil, err
	}
	encoders.Store(t, enc)
	return enc, nil
}

// buildEncoder builds the encoder of t. building holds the struct types
// being built, so that recursive types refer to themselves.
func buildEncoder(t reflect.Type, building map[reflect.Type]*canonEncoder) (canonEncoder, error) {
	if t == rawMessageType {
		return encodeRaw, nil
	}
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return nil, fmt.Errorf("%w: %s has its own marshaler", errUnsupported, t)
	}
	switch t.Kind() {
	case reflect.String:
		return func(b []byte, v reflect.Value) ([]byte, error) { return AppendString(b, v.String()), nil }, nil
	case reflect.Bool:
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.Bool() {
				return append(b, "true"...), nil
			}
			return append(b, "false"...), nil
		}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) ([]byte, error) { return AppendInt(b, v.Int()) }, nil
	case reflect.Float64:
		return func(b []byte, v reflect.Value) ([]byte, error) { return AppendFloat(b, v.Float()) }, nil
	case reflect.Pointer:
		elem, err := buildEncoder(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			return elem(b, v.Elem())
		}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, fmt.Errorf("%w: %s (base64)", errUnsupported, t)
		}
		elem, err := buildEncoder(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			b = append(b, '[')
			for i := range v.Len() {
				if i > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = elem(b, v.Index(i)); err != nil {
					return b, err
				}
			}
			return append(b, ']'), nil
		}, nil
	case reflect.Struct:
		if e, ok := building[t]; ok {
			return func(b []byte, v reflect.Value) ([]byte, error) { return (*e)(b, v) }, nil
		}
		var enc canonEncoder
		building[t] = &enc
		fields, err := structFields(t, building)
		if err != nil {
			return nil, err
		}
		enc = func(b []byte, v reflect.Value) ([]byte, error) {
			b = append(b, '{')
			first := true
			for i := range fields {
				f := &fields[i]
				fv := v.Field(f.index)
				if f.omitEmpty && isEmptyValue(fv) || f.omitZero && fv.IsZero() {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				b = append(b, f.quoted...)
				var err error
				if b, err = f.enc(b, fv); err != nil {
					return b, err
				}
			}
			return append(b, '}'), nil
		}
		return enc, nil
	}
	return nil, fmt.Errorf("%w: %s", errUnsupported, t)
}

// canonField is one member of a struct's encoding.
type canonField struct {
	name      string
	quoted    []byte // "name":
	index     int
	omitEmpty bool
	omitZero  bool
	enc       canonEncoder
}

// structFields returns the members of struct type t in RFC 8785 order: by
// the UTF-16 code units of their names (§3.2.3).
func structFields(t reflect.Type, building map[reflect.Type]*canonEncoder) ([]canonField, error) {
	var fields []canonField
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, fmt.Errorf("%w: embedded field %s.%s", errUnsupported, t, sf.Name)
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if !simpleName(name) {
			return nil, fmt.Errorf("%w: member name %q of %s", errUnsupported, name, t)
		}
		f := canonField{name: name, index: i}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				if _, ok := sf.Type.MethodByName("IsZero"); ok {
					return nil, fmt.Errorf("%w: omitzero with an IsZero method on %s.%s", errUnsupported, t, sf.Name)
				}
				f.omitZero = true
			default:
				return nil, fmt.Errorf("%w: json option %q on %s.%s", errUnsupported, o, t, sf.Name)
			}
		}
		enc, err := buildEncoder(sf.Type, building)
		if err != nil {
			return nil, err
		}
		f.enc = enc
		f.quoted = append(AppendString(nil, name), ':')
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b canonField) int {
		return slices.Compare(utf16.Encode([]rune(a.name)), utf16.Encode([]rune(b.name)))
	})
	for i := 1; i < len(fields); i++ {
		if fields[i].name == fields[i-1].name {
			return nil, fmt.Errorf("%w: two members named %q in %s", errUnsupported, fields[i].name, t)
		}
	}
	return fields, nil
}

// simpleName reports whether name is a member name that encoding/json
// takes from a tag as it is: letters, digits and _ - . / only.
func simpleName(name string) bool {
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_-./", c)) {
			return false
		}
	}
	return name != ""
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// encodeRaw writes a json.RawMessage in canonical form: null when nil, as
// json.RawMessage's MarshalJSON does; otherwise [Canonical] of it (which
// does not copy bytes that are already canonical).
func encodeRaw(b []byte, v reflect.Value) ([]byte, error) {
	raw := v.Bytes()
	if raw == nil {
		return append(b, "null"...), nil
	}
	c, err := Canonical(raw)
	if err != nil {
		return b, err
	}
	return append(b, c...), nil
}

// Direct reports whether [Marshal] encodes values of type t directly, in
// one pass (nil), or falls back to Canonical of json.Marshal (an error
// naming the reason: a map, an interface, an embedded struct or a custom
// marshaler somewhere in t). Record types are held to nil by their tests,
// so that a field added to a record cannot slow every record down unseen.
func Direct(t reflect.Type) error {
	_, err := encoderFor(t)
	return err
}
