package evidence

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConflicts(t *testing.T) {
	h1 := HashPrefix + strings.Repeat("1", 64)
	h2 := HashPrefix + strings.Repeat("2", 64)
	r := &ServerReceipt{
		ServerID: "srv", ToolName: "tool", ToolCallID: "req_7",
		InputHash: h1, OutputHash: h1, ArgumentKeys: []string{"a", "b"},
		ToolSchemaHash: h1, ToolDescriptionHash: h1,
	}
	same := CallFacts{ServerID: "srv", ToolName: "tool", ToolCallID: "req_7", InputHash: h1, OutputHash: h1, ArgumentKeys: []string{"b", "a"},
		ToolSchemaHash: h1, ToolDescriptionHash: h1}
	tests := []struct {
		name string
		r    *ServerReceipt
		call CallFacts
		want []string
	}{
		{"agree", r, same, nil},
		{"nil receipt", nil, same, nil},
		{"unknown call facts", r, CallFacts{}, nil},
		{"empty receipt", &ServerReceipt{}, same, nil},
		{"server_id", r, with(same, func(c *CallFacts) { c.ServerID = "other" }), []string{ConflictServerID}},
		{"tool_name", r, with(same, func(c *CallFacts) { c.ToolName = "other" }), []string{ConflictToolName}},
		{"tool_call_id", r, with(same, func(c *CallFacts) { c.ToolCallID = "req_8" }), []string{ConflictToolCallID}},
		{"input_hash", r, with(same, func(c *CallFacts) { c.InputHash = h2 }), []string{ConflictInputHash}},
		{"output_hash", r, with(same, func(c *CallFacts) { c.OutputHash = h2 }), []string{ConflictOutputHash}},
		{"argument_keys", r, with(same, func(c *CallFacts) { c.ArgumentKeys = []string{"a"} }), []string{ConflictArgumentKeys}},
		{"argument_keys empty vs some", r, with(same, func(c *CallFacts) { c.ArgumentKeys = []string{} }), []string{ConflictArgumentKeys}},
		{"argument_keys unknown", r, with(same, func(c *CallFacts) { c.ArgumentKeys = nil }), nil},
		{"tool_schema_hash", r, with(same, func(c *CallFacts) { c.ToolSchemaHash = h2 }), []string{ConflictToolSchemaHash}},
		{"tool_description_hash", r, with(same, func(c *CallFacts) { c.ToolDescriptionHash = h2 }), []string{ConflictToolDescriptionHash}},
		{"tool hashes unknown to the gateway", r, with(same, func(c *CallFacts) { c.ToolSchemaHash, c.ToolDescriptionHash = "", "" }), nil},
		{"all", r, CallFacts{ServerID: "x", ToolName: "x", ToolCallID: "x", InputHash: h2, OutputHash: h2, ArgumentKeys: []string{"z"}, ToolSchemaHash: h2, ToolDescriptionHash: h2},
			[]string{ConflictServerID, ConflictToolName, ConflictToolCallID, ConflictInputHash, ConflictOutputHash, ConflictArgumentKeys, ConflictToolSchemaHash, ConflictToolDescriptionHash}},
	}
	for _, tt := range tests {
		got := Conflicts(tt.r, tt.call)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Conflicts = %q, want %q", tt.name, got, tt.want)
		}
		for _, w := range got {
			if strings.Contains(w, "other") || strings.Contains(w, h2) {
				t.Errorf("%s: warning %q carries a value", tt.name, w)
			}
		}
	}
}

func with(c CallFacts, f func(*CallFacts)) CallFacts {
	c.ArgumentKeys = append([]string(nil), c.ArgumentKeys...)
	f(&c)
	return c
}

func TestSynthesize(t *testing.T) {
	now := time.Date(2026, 5, 19, 10, 15, 31, 123456789, time.FixedZone("CEST", 2*3600))
	call := CallFacts{ServerID: "srv", ToolName: "read_file", ToolCallID: "req_1",
		InputHash: HashPrefix + strings.Repeat("a", 64), OutputHash: HashPrefix + strings.Repeat("b", 64),
		ArgumentKeys: []string{"path"}}
	intent := ToolIntent{DeclaredSideEffects: []string{"read"}, SideEffect: "read_only", Externality: "internal",
		DataClasses: []string{"source_code"}, RequiredScopes: []string{"fs.read"}, Sources: map[string]string{}}
	r := Synthesize(call, intent, now)
	if !regexp.MustCompile(`^mcp_rcpt_gw_[0-9A-HJKMNP-TV-Z]{26}$`).MatchString(r.ReceiptID) {
		t.Errorf("receipt_id %q", r.ReceiptID)
	}
	want := &ServerReceipt{
		ReceiptID: r.ReceiptID, SchemaVersion: "0.1", IssuedAt: "2026-05-19T08:15:31.123Z",
		ServerID: "srv", ToolName: "read_file", ToolCallID: "req_1",
		DeclaredSideEffects: []string{"read"}, SideEffect: "read_only", DataClasses: []string{"source_code"},
		Externality: "internal", RequiredScopes: []string{"fs.read"},
		InputHash: call.InputHash, ArgumentKeys: []string{"path"}, OutputHash: call.OutputHash,
		VerificationStatus: "empty", IssuedBy: "gateway",
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Synthesize =\n%+v\nwant\n%+v", r, want)
	}
	// Slices are copies.
	call.ArgumentKeys[0] = "changed"
	intent.DeclaredSideEffects[0] = "changed"
	if r.ArgumentKeys[0] != "path" || r.DeclaredSideEffects[0] != "read" {
		t.Error("Synthesize shares slices with its inputs")
	}
	// The synthesized receipt is valid, unsigned, and never a source.
	raw, err := jsonMarshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p, problems, err := Parse(raw)
	if err != nil || problems != nil {
		t.Fatalf("synthesized receipt: %v %v", problems, err)
	}
	if s := Verify(raw, p, testKeys); s != StatusUnsigned {
		t.Errorf("Verify(synthesized) = %s", s)
	}
	if got := Normalize(IntentInput{Receipt: p, ReceiptStatus: StatusOK}); got.Sources[FieldSideEffect] != SourceUnknown {
		t.Errorf("a synthesized receipt was used as a source: %v", got.Sources)
	}
	if Synthesize(call, intent, now).ReceiptID == r.ReceiptID {
		t.Error("receipt ids repeat")
	}
}

func TestInputHashAndKeys(t *testing.T) {
	empty, _ := Hash([]byte(`{}`))
	if h, err := InputHash(nil); err != nil || h != empty {
		t.Errorf("InputHash(nil) = %s, %v", h, err)
	}
	a, _ := InputHash([]byte(`{"b":[1.0,"x"],"a":{"z":null}}`))
	b, _ := InputHash([]byte(`{ "a" : { "z" : null } , "b" : [ 1 , "\u0078" ] }`))
	if a != b || a == empty {
		t.Errorf("InputHash not canonical: %s %s", a, b)
	}
	if _, err := InputHash([]byte(`{"n":9007199254740993}`)); err == nil {
		t.Error("InputHash accepted an inexact number")
	}
	keys, err := ArgumentKeys([]byte(`{"path":1,"destination":{"x":1},"visibility":"public"}`))
	if err != nil || !reflect.DeepEqual(keys, []string{"path", "destination", "visibility"}) {
		t.Errorf("ArgumentKeys = %v, %v", keys, err)
	}
	if keys, err := ArgumentKeys(nil); err != nil || keys == nil || len(keys) != 0 {
		t.Errorf("ArgumentKeys(nil) = %#v, %v", keys, err)
	}
	if keys, err := ArgumentKeys([]byte(`{}`)); err != nil || keys == nil || len(keys) != 0 {
		t.Errorf("ArgumentKeys({}) = %#v, %v", keys, err)
	}
	for _, bad := range []string{`[]`, `{"a":1,"a":2}`, `{`} {
		if _, err := ArgumentKeys([]byte(bad)); err == nil {
			t.Errorf("ArgumentKeys(%s) succeeded", bad)
		}
	}
	d1, err := DescriptionHash("Reads a file.")
	d2, _ := Hash([]byte(`"Reads a file."`))
	if err != nil || d1 != d2 {
		t.Errorf("DescriptionHash = %s, %v; want %s", d1, err, d2)
	}
	if _, err := DescriptionHash("bad \xff utf-8"); err == nil {
		t.Error("DescriptionHash accepted invalid UTF-8")
	}
}

// TestArgumentKeysCanonical: canonical arguments are read by the scanner,
// with the same names as the strict parse gives.
func TestArgumentKeysCanonical(t *testing.T) {
	for in, want := range map[string][]string{
		`{}`:                              {},
		`{"a":1,"b":{"c":[1,{"d":2}]}}`:   {"a", "b"},
		`{"\n":0,"a\"b":"x","é":true}`:    {"\n", `a"b`, "é"},
		`{"path":"/a","recursive":false}`: {"path", "recursive"},
	} {
		names, ok := canonicalObjectNames([]byte(in))
		if !ok || !slices.Equal(names, want) || names == nil {
			t.Errorf("canonicalObjectNames(%s) = %q, %v; want %q", in, names, ok, want)
		}
		if got, err := ArgumentKeys([]byte(in)); err != nil || !slices.Equal(got, want) {
			t.Errorf("ArgumentKeys(%s) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{`{"b":1,"a":2}`, `{ "a":1}`, `[1]`, `"x"`, `{"a":1}x`, `{`} {
		if names, ok := canonicalObjectNames([]byte(in)); ok {
			t.Errorf("canonicalObjectNames(%s) = %q", in, names)
		}
	}
}

// FuzzArgumentKeys: ArgumentKeys gives what the strict parse gives, for
// any input.
func FuzzArgumentKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[2]}`, `{"b":1,"a":2}`, `{"\u0061":1}`, `{"a":1,"a":2}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ArgumentKeys(b)
		want, werr := argumentKeys(b)
		if (err == nil) != (werr == nil) || !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("ArgumentKeys(%q) = %q, %v; strict parse %q, %v", b, got, err, want, werr)
		}
	})
}
