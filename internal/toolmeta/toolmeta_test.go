package toolmeta

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestMerge: claims merge toward the more dangerous value (evidence.md §4,
// choice of December 2026), per field: the value, its source and the
// weaker side of a disagreement. Package evidence's TestNormalizeConflicts
// covers every pair of sources through Normalize.
func TestMerge(t *testing.T) {
	meta := func(c Claim) Claim { c.Source = SourceMeta; return c }
	ann := func(c Claim) Claim { c.Source = SourceAnnotation; return c }
	heur := func(c Claim) Claim { c.Source = SourceHeuristic; return c }
	rcpt := func(c Claim) Claim { c.Source = SourceVerifiedReceipt; return c }
	tests := []struct {
		name           string
		claims         []Claim
		field          string
		value          any
		source, weaker string
	}{
		{"nothing", nil, FieldSideEffect, "destructive", SourceUnknown, ""},
		{"nothing: externality", nil, FieldExternality, "external", SourceUnknown, ""},
		{"nothing: lists", nil, FieldDataClasses, []string(nil), SourceUnknown, ""},
		{"one source", []Claim{meta(Claim{SideEffect: "read_only"})}, FieldSideEffect, "read_only", SourceMeta, ""},
		{"weaker more dangerous", []Claim{meta(Claim{SideEffect: "read_only"}), ann(Claim{SideEffect: "destructive"})}, FieldSideEffect, "destructive", SourceAnnotation, SourceAnnotation},
		{"stronger more dangerous", []Claim{meta(Claim{SideEffect: "mutating"}), ann(Claim{SideEffect: "read_only"})}, FieldSideEffect, "mutating", SourceMeta, SourceAnnotation},
		{"effects imply the side effect", []Claim{meta(Claim{DeclaredSideEffects: []string{"write"}}), ann(Claim{SideEffect: "read_only"})}, FieldSideEffect, "mutating", SourceMeta, SourceAnnotation},
		{"a claim against itself", []Claim{meta(Claim{SideEffect: "read_only", DeclaredSideEffects: []string{"delete"}})}, FieldSideEffect, "destructive", SourceMeta, SourceMeta},
		{"the dissenter is weaker than the value's source", []Claim{rcpt(Claim{SideEffect: "destructive"}), meta(Claim{SideEffect: "destructive"}), heur(Claim{SideEffect: "read_only"})}, FieldSideEffect, "destructive", SourceVerifiedReceipt, SourceHeuristic},
		{"the value's source is weaker than the dissenter", []Claim{meta(Claim{SideEffect: "read_only"}), ann(Claim{SideEffect: "read_only"}), heur(Claim{SideEffect: "destructive"})}, FieldSideEffect, "destructive", SourceHeuristic, SourceHeuristic},
		{"heuristics alone never lower the unknown default", []Claim{heur(Claim{SideEffect: "read_only"})}, FieldSideEffect, "destructive", SourceUnknown, ""},
		{"heuristics alone never lower: mutating", []Claim{heur(Claim{SideEffect: "mutating", DeclaredSideEffects: []string{"write"}})}, FieldSideEffect, "destructive", SourceUnknown, ""},
		{"heuristics alone may claim the default", []Claim{heur(Claim{SideEffect: "destructive"})}, FieldSideEffect, "destructive", SourceHeuristic, ""},
		{"heuristics alone: externality external", []Claim{heur(Claim{Externality: "external"})}, FieldExternality, "external", SourceHeuristic, ""},
		{"heuristics raise another source", []Claim{ann(Claim{SideEffect: "read_only"}), heur(Claim{SideEffect: "mutating"})}, FieldSideEffect, "mutating", SourceHeuristic, SourceHeuristic},
		{"out of vocabulary is ignored", []Claim{meta(Claim{SideEffect: "harmless"}), ann(Claim{SideEffect: "mutating"})}, FieldSideEffect, "mutating", SourceAnnotation, ""},
		{"externality widest", []Claim{meta(Claim{Externality: "internal"}), ann(Claim{Externality: "external"}), heur(Claim{Externality: "external"})}, FieldExternality, "external", SourceAnnotation, SourceAnnotation},
		{"externality third_party", []Claim{rcpt(Claim{Externality: "third_party"}), meta(Claim{Externality: "external"})}, FieldExternality, "third_party", SourceVerifiedReceipt, SourceMeta},
		{"union, a weaker new item", []Claim{meta(Claim{DataClasses: []string{"pii"}}), heur(Claim{DataClasses: []string{"secrets", "pii"}})}, FieldDataClasses, []string{"pii", "secrets"}, SourceMeta, SourceHeuristic},
		{"union, a weaker subset", []Claim{meta(Claim{RequiredScopes: []string{"a", "b"}}), ann(Claim{RequiredScopes: []string{"b"}})}, FieldRequiredScopes, []string{"a", "b"}, SourceMeta, ""},
		{"union, the empty list claims", []Claim{meta(Claim{DeclaredSideEffects: []string{}}), heur(Claim{DeclaredSideEffects: []string{"read"}})}, FieldDeclaredSideEffects, []string{"read"}, SourceMeta, SourceHeuristic},
		{"union, the weakest new item names the conflict", []Claim{rcpt(Claim{DeclaredSideEffects: []string{"read"}}), meta(Claim{DeclaredSideEffects: []string{"write"}}), heur(Claim{DeclaredSideEffects: []string{"delete"}})}, FieldDeclaredSideEffects, []string{"read", "write", "delete"}, SourceVerifiedReceipt, SourceHeuristic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := Merge(tt.claims...)
			value := map[string]any{FieldDeclaredSideEffects: it.DeclaredSideEffects, FieldSideEffect: it.SideEffect, FieldDataClasses: it.DataClasses,
				FieldExternality: it.Externality, FieldRequiredScopes: it.RequiredScopes}[tt.field]
			if !reflect.DeepEqual(value, tt.value) || it.Sources[tt.field] != tt.source || it.Conflicts[tt.field] != tt.weaker {
				t.Errorf("%s = %v from %s, conflict %q; want %v from %s, conflict %q", tt.field, value, it.Sources[tt.field], it.Conflicts[tt.field], tt.value, tt.source, tt.weaker)
			}
			if len(it.Sources) != len(Fields) {
				t.Errorf("Sources %v", it.Sources)
			}
		})
	}
}

// TestMergeCopiesAndWith: Merge shares no slice with its claims, and With
// merges a stronger claim as Merge does with it first, also over a
// literal intent.
func TestMergeCopiesAndWith(t *testing.T) {
	effects := []string{"read"}
	base := Merge(Claim{Source: SourceMeta, DeclaredSideEffects: effects, SideEffect: "read_only"})
	effects[0] = "changed"
	if base.DeclaredSideEffects[0] != "read" {
		t.Fatal("Merge shares the claim's slice")
	}
	r := Claim{Source: SourceVerifiedReceipt, SideEffect: "destructive", RequiredScopes: []string{"x"}}
	want := Merge(r, Claim{Source: SourceMeta, DeclaredSideEffects: []string{"read"}, SideEffect: "read_only"})
	if got := base.With(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("With =\n%+v\nwant\n%+v", got, want)
	}
	lit := Intent{SideEffect: "read_only", Externality: "internal", Sources: map[string]string{FieldSideEffect: SourceAnnotation, FieldExternality: SourceAnnotation}}
	got := lit.With(Claim{Source: SourceUnsignedReceipt, Externality: "external"})
	if got.SideEffect != "read_only" || got.Externality != "external" || got.Conflicts[FieldExternality] != SourceAnnotation ||
		!reflect.DeepEqual(got.Warnings(), []string{"metadata_conflict:externality"}) || !reflect.DeepEqual(got.ConflictFields(), []string{"externality"}) {
		t.Fatalf("With over a literal: %+v", got)
	}
	if Confidence(got, 0) != 0.3 { // side_effect 0.75, externality 0.75 (annotation), the rest 0
		t.Fatalf("Confidence = %v", Confidence(got, 0))
	}
}

// TestToolClaims: annotations claim only when a hint is set, with the MCP
// defaults for the absent ones; heuristics always claim (possibly
// nothing).
func TestToolClaims(t *testing.T) {
	yes, no := true, false
	if c := ToolClaims(nil); c != nil {
		t.Errorf("nil tool: %+v", c)
	}
	if c := ToolClaims(&mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{Title: "Z"}}); len(c) != 1 || c[0].Source != SourceHeuristic {
		t.Errorf("title only: %+v", c)
	}
	c := ToolClaims(&mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{OpenWorldHint: &no}})
	if len(c) != 2 || !reflect.DeepEqual(c[0], Claim{Source: SourceAnnotation, DeclaredSideEffects: []string{"write", "delete"}, SideEffect: "destructive", Externality: "internal"}) {
		t.Errorf("openWorldHint false: %+v", c)
	}
	c = ToolClaims(&mcp.Tool{Name: "get_x", Annotations: mcp.Annotations{ReadOnlyHint: &yes}})
	if c[0].SideEffect != "read_only" || c[0].Externality != "external" || c[1].SideEffect != "read_only" || !reflect.DeepEqual(c[1].DeclaredSideEffects, []string{"read"}) {
		t.Errorf("readOnlyHint, get_x: %+v", c)
	}
}

// TestSchemaProperties: the top-level property names of a strict JSON
// object schema, in order; nothing from anything else.
func TestSchemaProperties(t *testing.T) {
	for schema, want := range map[string][]string{
		`{"type":"object","properties":{"b":{},"a":{"properties":{"deep":{}}}}}`: {"b", "a"},
		`{"properties":{}}`:                     {},
		`{"type":"object"}`:                     nil,
		`{"properties":[]}`:                     nil,
		`{"properties":{"a":{},"a":{}}}`:        nil, // duplicate names: not strict JSON
		`{"properties":{"a":{}}`:                nil,
		`[]`:                                    nil,
		``:                                      nil,
		`{"x":1,"properties":{"\u0070w":true}}`: {"pw"},
	} {
		if got := schemaProperties(json.RawMessage(schema)); !reflect.DeepEqual(got, want) {
			t.Errorf("schemaProperties(%s) = %q, want %q", schema, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	tests := map[string][]string{
		"deleteFile":     {"delete", "file"},
		"get_url2":       {"get", "url"},
		"HTTPFetch":      {"http", "fetch"},
		"getURL":         {"get", "url"},
		"URL":            {"url"},
		"fetch-HTTP.url": {"fetch", "http", "url"},
		"":               nil,
		"Écrire_Fichier": {"écrire", "fichier"},
	}
	for in, want := range tests {
		if got := words(in); !reflect.DeepEqual(got, want) {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}
