package mcp

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

func TestParseToolCall(t *testing.T) {
	for _, tt := range []struct {
		name, params string
		want         ToolCall
		field        string // "" and ok false: whole params
		ok           bool
	}{
		{name: "all three", params: `{"name":"echo","arguments":{"a":[1,{"b":"}"}]},"_meta":{"progressToken":1}}`, want: ToolCall{Name: "echo", Arguments: []byte(`{"a":[1,{"b":"}"}]}`), Meta: []byte(`{"progressToken":1}`)}, ok: true},
		{name: "no arguments", params: `{"name":"e"}`, want: ToolCall{Name: "e"}, ok: true},
		{name: "escaped name", params: `{"\u006eame":"r\u006d"}`, want: ToolCall{Name: "rm"}, ok: true},
		{name: "unknown member kept out", params: `{"name":"e","task":{}}`, want: ToolCall{Name: "e"}, ok: true},
		{name: "not an object", params: `[1]`},
		{name: "absent"},
		{name: "no name", params: `{"arguments":{}}`, field: "/name"},
		{name: "empty name", params: `{"name":""}`, field: "/name"},
		{name: "name not a string", params: `{"name":7}`, field: "/name"},
		{name: "arguments an array", params: `{"name":"e","arguments":[]}`, field: "/arguments"},
		{name: "arguments null", params: `{"name":"e","arguments":null}`, field: "/arguments"},
		{name: "NAME alone", params: `{"NAME":"rm_rf"}`, field: "/name"},
		{name: "Arguments", params: `{"name":"e","Arguments":{}}`, field: "/arguments"},
		{name: "_META", params: `{"name":"e","_META":{}}`, field: "/_meta"},
		{name: "long s", params: `{"name":"e","_meta":{},"argument\u017f":{}}`, field: "/arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseToolCall([]byte(tt.params))
			if tt.ok {
				if err != nil || got.Name != tt.want.Name || !bytes.Equal(got.Arguments, tt.want.Arguments) || !bytes.Equal(got.Meta, tt.want.Meta) {
					t.Fatalf("ParseToolCall = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var te *ToolCallError
			if !errors.As(err, &te) || !errors.Is(err, ErrToolCallParams) || te.Field != tt.field {
				t.Fatalf("ParseToolCall = %+v, %v; want a *ToolCallError at %q", got, err, tt.field)
			}
		})
	}
}

// parseToolCallRef is ParseToolCall by strictjson.Members (validating):
// the reference FuzzParseToolCall holds the one-walk reader to.
func parseToolCallRef(params []byte) (ToolCall, bool) {
	var c ToolCall
	ok, bad := false, false
	err := strictjson.Members(params, func(n string, v []byte) error {
		switch n {
		case "name":
			s, err := strictjson.String(v)
			c.Name, ok, bad = s, err == nil, bad || err != nil
		case "arguments":
			c.Arguments, bad = v, bad || v[0] != '{'
		case "_meta":
			c.Meta = v
		default:
			f := strictjson.Fold(n)
			bad = bad || f == "name" || f == "arguments" || f == "_meta"
		}
		return nil
	})
	if err != nil || bad || !ok || c.Name == "" {
		return ToolCall{}, false
	}
	return c, true
}

func FuzzParseToolCall(f *testing.F) {
	for _, s := range []string{`{"name":"echo","arguments":{"a":1},"_meta":{}}`, `{"NAME":"x"}`, `{"name":1}`, `{"name":"a","arguments":[]}`, `{"\u006eame":"x"}`, `{"name":"x","x":"\"}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		got, err := ParseToolCall(params) // never panics, whatever params is
		if strictjson.Validate(params) != nil {
			return // not from a strict parse: unspecified
		}
		want, ok := parseToolCallRef(params)
		if (err == nil) != ok || got.Name != want.Name || !bytes.Equal(got.Arguments, want.Arguments) || !bytes.Equal(got.Meta, want.Meta) {
			t.Fatalf("ParseToolCall(%q) = %+v, %v; reference %+v, %v", params, got, err, want, ok)
		}
	})
}

// BenchmarkParseToolCall1MiB reads the params of a tools/call whose
// arguments are 1 MiB: ParseToolCall (one walk of the validated params)
// beside jsonrpc.ObjectMembers (the gateway's walk before ToolCall, which
// validated params again) and the strictjson.Members reference.
func BenchmarkParseToolCall1MiB(b *testing.B) {
	params := []byte(`{"name":"echo","arguments":{"data":"` + string(bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789-_"), 1<<20/38)) + `"},"_meta":{"progressToken":7}}`)
	if strictjson.Validate(params) != nil {
		b.Fatal("params not strict")
	}
	b.Run("ParseToolCall", func(b *testing.B) {
		b.SetBytes(int64(len(params)))
		b.ReportAllocs()
		for range b.N {
			if _, err := ParseToolCall(params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ObjectMembers", func(b *testing.B) {
		// The walk of the gateway's parseToolCall before ToolCall: the
		// jsonrpc fast path validating params again.
		b.SetBytes(int64(len(params)))
		b.ReportAllocs()
		for range b.N {
			var name []byte
			_ = jsonrpc.ObjectMembers(params, func(n string, v []byte) {
				if n == "name" {
					name = v
				}
			})
			if name == nil {
				b.Fatal("no name")
			}
		}
	})
	b.Run("revalidating", func(b *testing.B) {
		b.SetBytes(int64(len(params)))
		b.ReportAllocs()
		for range b.N {
			if _, ok := parseToolCallRef(params); !ok {
				b.Fatal("refused")
			}
		}
	})
}

func TestNearMethod(t *testing.T) {
	for _, tc := range []struct {
		method string
		near   bool
	}{
		{"tools/call", false},
		{"TOOLS/CALL", true},
		{"Tools/Call", true},
		{"tools/call ", true},
		{" tools/call", true},
		{"tools/call\u0000", true},
		{"tools/\u200bcall", true},
		{"tools/cal\u017f", false}, // long s folds to s, not l
		{"tools/caLL\t", true},
		{"tools/list", false},
		{"tools/calls", false},
		{"tool/call", false},
		{"", false},
	} {
		if got := NearMethod(tc.method, MethodToolsCall); got != tc.near {
			t.Errorf("NearMethod(%q) = %v, want %v", tc.method, got, tc.near)
		}
	}
}

func FuzzNearMethod(f *testing.F) {
	for _, s := range []string{"tools/call", "TOOLS/CALL", "tools/call ", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, method string) {
		if NearMethod(method, MethodToolsCall) && method == MethodToolsCall {
			t.Fatal("the method itself is reported near")
		}
		if method != MethodToolsCall && strings.EqualFold(method, MethodToolsCall) && !NearMethod(method, MethodToolsCall) {
			t.Fatalf("%q folds to tools/call but is not near", method)
		}
	})
}
