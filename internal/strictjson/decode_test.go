package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
)

// decodeRef is the decoding the gateway did before Decode: encoding/json
// with UseNumber, then integers that fit int64 as int64, other numbers
// float64.
func decodeRef(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return convertRef(v), nil
}

func convertRef(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = convertRef(e)
		}
	case []any:
		for i, e := range t {
			t[i] = convertRef(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want any
	}{
		{`{"a":1,"b":-0,"c":1.0,"d":1e2,"e":9223372036854775808,"f":"x\u00e9","g":[true,false,null],"h":{}}`,
			map[string]any{"a": int64(1), "b": int64(0), "c": 1.0, "d": 100.0, "e": 9223372036854775808.0, "f": "xé", "g": []any{true, false, nil}, "h": map[string]any{}}},
		{` [ ] `, []any{}},
		{`"s"`, "s"},
		{`1e400`, math.Inf(1)},
		{`{"A":1,"a":2}`, map[string]any{"A": int64(1), "a": int64(2)}},
	} {
		got, err := Decode([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
	if _, err := Decode([]byte(`{"a":1} x`)); err == nil {
		t.Error("Decode accepted trailing data")
	}
}

// FuzzDecode holds Decode to encoding/json (with UseNumber and the
// int64/float64 conversion) on every strict value, and checks that it
// never panics on anything else.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1.5,-0,1e2,"\n"],"c":{"d":null}}`, `[true,false]`, `"\ud83d\ude00"`, `1e400`, `-1e-400`, `12345678901234567890`, `{"a":"\"}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		if Validate(b) != nil && !errors.Is(Validate(b), ErrFoldedDuplicate) {
			return // not strict: unspecified, but it did not panic
		}
		want, werr := decodeRef(b)
		if werr != nil {
			t.Fatalf("reference refused strict JSON %q: %v", b, werr)
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, %v; reference %#v", b, got, err, want)
		}
	})
}

func BenchmarkDecode1MiB(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"data":"`)
	for buf.Len() < 1<<20 {
		buf.WriteString("abcdefghijklmnopqrstuvwxyz0123456789")
	}
	buf.WriteString(`","n":[1,2.5,{"k":"v"}]}`)
	in := buf.Bytes()
	b.Run("strictjson", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for range b.N {
			if _, err := Decode(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for range b.N {
			if _, err := decodeRef(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
