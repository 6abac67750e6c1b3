package evidence

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestNormalizeConflicts: per field and per pair of sources (receipt,
// _meta declaration, annotations, heuristics), a disagreement resolves
// toward the more dangerous value (evidence.md §4, choice of December
// 2026), records the value's source, names the weaker source in Conflicts
// and lowers the field's weight to it; sources that agree, or a weaker
// list that names less, are no conflict.
func TestNormalizeConflicts(t *testing.T) {
	yes, no := true, false
	zzz := func(a mcp.Annotations) *mcp.Tool { return &mcp.Tool{Name: "zzz", Annotations: a} } // no heuristic matches zzz
	named := func(name string) *mcp.Tool { return &mcp.Tool{Name: name} }
	rcpt := func(r ServerReceipt) *ServerReceipt { return &r }
	tests := []struct {
		name   string
		in     IntentInput
		field  string
		value  any    // string, or []string for a list
		source string // Sources[field]
		weaker string // Conflicts[field], "" for none
	}{
		// side_effect
		{"side: receipt read_only, meta mutating", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "read_only"}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{SideEffect: "mutating"}},
			FieldSideEffect, "mutating", SourceMeta, SourceMeta},
		{"side: receipt destructive, meta read_only", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "destructive"}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{SideEffect: "read_only"}},
			FieldSideEffect, "destructive", SourceVerifiedReceipt, SourceMeta},
		{"side: unsigned receipt read_only, meta destructive", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "read_only"}), ReceiptStatus: StatusUnsigned, Declaration: &ToolDeclaration{SideEffect: "destructive"}},
			FieldSideEffect, "destructive", SourceMeta, SourceMeta},
		{"side: receipt read_only, annotation mutating", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "read_only"}), ReceiptStatus: StatusOK, Tool: zzz(mcp.Annotations{DestructiveHint: &no})},
			FieldSideEffect, "mutating", SourceAnnotation, SourceAnnotation},
		{"side: receipt read_only, heuristic destructive", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "read_only"}), ReceiptStatus: StatusOK, Tool: named("delete_file")},
			FieldSideEffect, "destructive", SourceHeuristic, SourceHeuristic},
		{"side: meta writes, readOnlyHint", IntentInput{Declaration: &ToolDeclaration{DeclaredSideEffects: []string{"write"}}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldSideEffect, "mutating", SourceMeta, SourceAnnotation},
		{"side: meta mutating, readOnlyHint", IntentInput{Declaration: &ToolDeclaration{SideEffect: "mutating"}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldSideEffect, "mutating", SourceMeta, SourceAnnotation},
		{"side: meta read_only, annotation destructive", IntentInput{Declaration: &ToolDeclaration{SideEffect: "read_only"}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &no})},
			FieldSideEffect, "destructive", SourceAnnotation, SourceAnnotation},
		{"side: meta read_only, heuristic mutating", IntentInput{Declaration: &ToolDeclaration{SideEffect: "read_only"}, Tool: named("run_query")},
			FieldSideEffect, "mutating", SourceHeuristic, SourceHeuristic},
		{"side: meta destructive, heuristic read_only", IntentInput{Declaration: &ToolDeclaration{SideEffect: "destructive"}, Tool: named("get_weather")},
			FieldSideEffect, "destructive", SourceMeta, SourceHeuristic},
		{"side: readOnlyHint, heuristic destructive", IntentInput{Tool: &mcp.Tool{Name: "delete_file", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}},
			FieldSideEffect, "destructive", SourceHeuristic, SourceHeuristic},
		{"side: annotation destructive, heuristic read_only", IntentInput{Tool: &mcp.Tool{Name: "get_weather", Annotations: mcp.Annotations{ReadOnlyHint: &no}}},
			FieldSideEffect, "destructive", SourceAnnotation, SourceHeuristic},
		{"side: a declaration contradicting itself", IntentInput{Declaration: &ToolDeclaration{SideEffect: "read_only", DeclaredSideEffects: []string{"read", "delete"}}},
			FieldSideEffect, "destructive", SourceMeta, SourceMeta},
		{"side: a receipt's effects over meta's side_effect", IntentInput{Receipt: rcpt(ServerReceipt{DeclaredSideEffects: []string{"share"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{SideEffect: "read_only"}},
			FieldSideEffect, "mutating", SourceVerifiedReceipt, SourceMeta},
		{"side: all agree", IntentInput{Receipt: rcpt(ServerReceipt{SideEffect: "read_only"}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{SideEffect: "read_only", DeclaredSideEffects: []string{"read"}}, Tool: &mcp.Tool{Name: "get_weather", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}},
			FieldSideEffect, "read_only", SourceVerifiedReceipt, ""},

		// externality (internal < external < third_party)
		{"ext: receipt internal, meta third_party", IntentInput{Receipt: rcpt(ServerReceipt{Externality: "internal"}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{Externality: "third_party"}},
			FieldExternality, "third_party", SourceMeta, SourceMeta},
		{"ext: receipt third_party, annotation internal", IntentInput{Receipt: rcpt(ServerReceipt{Externality: "third_party"}), ReceiptStatus: StatusOK, Tool: zzz(mcp.Annotations{OpenWorldHint: &no})},
			FieldExternality, "third_party", SourceVerifiedReceipt, SourceAnnotation},
		{"ext: receipt internal, heuristic external", IntentInput{Receipt: rcpt(ServerReceipt{Externality: "internal"}), ReceiptStatus: StatusOK, Tool: named("fetch_url")},
			FieldExternality, "external", SourceHeuristic, SourceHeuristic},
		{"ext: meta internal, openWorldHint", IntentInput{Declaration: &ToolDeclaration{Externality: "internal"}, Tool: zzz(mcp.Annotations{OpenWorldHint: &yes})},
			FieldExternality, "external", SourceAnnotation, SourceAnnotation},
		{"ext: meta internal, openWorldHint by default", IntentInput{Declaration: &ToolDeclaration{Externality: "internal"}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldExternality, "external", SourceAnnotation, SourceAnnotation},
		{"ext: meta internal, heuristic external", IntentInput{Declaration: &ToolDeclaration{Externality: "internal"}, Tool: named("send_message")},
			FieldExternality, "external", SourceHeuristic, SourceHeuristic},
		{"ext: annotation internal, heuristic external", IntentInput{Tool: &mcp.Tool{Name: "fetch_url", Annotations: mcp.Annotations{OpenWorldHint: &no}}},
			FieldExternality, "external", SourceHeuristic, SourceHeuristic},
		{"ext: meta and annotation internal", IntentInput{Declaration: &ToolDeclaration{Externality: "internal"}, Tool: zzz(mcp.Annotations{OpenWorldHint: &no})},
			FieldExternality, "internal", SourceMeta, ""},

		// declared_side_effects: the union
		{"effects: receipt [read], meta [read write]", IntentInput{Receipt: rcpt(ServerReceipt{DeclaredSideEffects: []string{"read"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{DeclaredSideEffects: []string{"read", "write"}}},
			FieldDeclaredSideEffects, []string{"read", "write"}, SourceVerifiedReceipt, SourceMeta},
		{"effects: receipt [read share], meta [read]", IntentInput{Receipt: rcpt(ServerReceipt{DeclaredSideEffects: []string{"read", "share"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{DeclaredSideEffects: []string{"read"}}},
			FieldDeclaredSideEffects, []string{"read", "share"}, SourceVerifiedReceipt, ""},
		{"effects: receipt [read], annotation [write]", IntentInput{Receipt: rcpt(ServerReceipt{DeclaredSideEffects: []string{"read"}}), ReceiptStatus: StatusUnsigned, Tool: zzz(mcp.Annotations{DestructiveHint: &no})},
			FieldDeclaredSideEffects, []string{"read", "write"}, SourceUnsignedReceipt, SourceAnnotation},
		{"effects: receipt [read], heuristic [delete]", IntentInput{Receipt: rcpt(ServerReceipt{DeclaredSideEffects: []string{"read"}}), ReceiptStatus: StatusOK, Tool: named("drop_table")},
			FieldDeclaredSideEffects, []string{"read", "delete"}, SourceVerifiedReceipt, SourceHeuristic},
		{"effects: meta [write], readOnlyHint [read]", IntentInput{Declaration: &ToolDeclaration{DeclaredSideEffects: []string{"write"}}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldDeclaredSideEffects, []string{"write", "read"}, SourceMeta, SourceAnnotation},
		{"effects: meta [read network], readOnlyHint [read]", IntentInput{Declaration: &ToolDeclaration{DeclaredSideEffects: []string{"read", "network"}}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldDeclaredSideEffects, []string{"read", "network"}, SourceMeta, ""},
		{"effects: meta [], heuristic [read]", IntentInput{Declaration: &ToolDeclaration{DeclaredSideEffects: []string{}}, Tool: named("get_weather")},
			FieldDeclaredSideEffects, []string{"read"}, SourceMeta, SourceHeuristic},
		{"effects: readOnlyHint [read], heuristic [delete]", IntentInput{Tool: &mcp.Tool{Name: "delete_file", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}},
			FieldDeclaredSideEffects, []string{"read", "delete"}, SourceAnnotation, SourceHeuristic},

		// data_classes: the union; annotations declare none
		{"classes: receipt [internal], meta [pii]", IntentInput{Receipt: rcpt(ServerReceipt{DataClasses: []string{"internal"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{DataClasses: []string{"pii"}}},
			FieldDataClasses, []string{"internal", "pii"}, SourceVerifiedReceipt, SourceMeta},
		{"classes: receipt [], heuristic [secrets]", IntentInput{Receipt: rcpt(ServerReceipt{DataClasses: []string{}}), ReceiptStatus: StatusOK, Tool: &mcp.Tool{Name: "zzz", InputSchema: json.RawMessage(`{"properties":{"password":{}}}`)}},
			FieldDataClasses, []string{"secrets"}, SourceVerifiedReceipt, SourceHeuristic},
		{"classes: meta [pii secrets], heuristic [secrets]", IntentInput{Declaration: &ToolDeclaration{DataClasses: []string{"pii", "secrets"}}, Tool: &mcp.Tool{Name: "zzz", InputSchema: json.RawMessage(`{"properties":{"api_key":{}}}`)}},
			FieldDataClasses, []string{"pii", "secrets"}, SourceMeta, ""},
		{"classes: meta [], heuristic [secrets]", IntentInput{Declaration: &ToolDeclaration{DataClasses: []string{}}, Tool: &mcp.Tool{Name: "zzz", InputSchema: json.RawMessage(`{"properties":{"api_key":{}}}`)}},
			FieldDataClasses, []string{"secrets"}, SourceMeta, SourceHeuristic},
		{"classes: annotations say nothing", IntentInput{Declaration: &ToolDeclaration{DataClasses: []string{"pii"}}, Tool: zzz(mcp.Annotations{ReadOnlyHint: &yes})},
			FieldDataClasses, []string{"pii"}, SourceMeta, ""},

		// required_scopes: the union; only receipts and declarations give them
		{"scopes: receipt [a], meta [a b]", IntentInput{Receipt: rcpt(ServerReceipt{RequiredScopes: []string{"a"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{RequiredScopes: []string{"a", "b"}}},
			FieldRequiredScopes, []string{"a", "b"}, SourceVerifiedReceipt, SourceMeta},
		{"scopes: receipt [a b], meta [b]", IntentInput{Receipt: rcpt(ServerReceipt{RequiredScopes: []string{"a", "b"}}), ReceiptStatus: StatusOK, Declaration: &ToolDeclaration{RequiredScopes: []string{"b"}}},
			FieldRequiredScopes, []string{"a", "b"}, SourceVerifiedReceipt, ""},
		{"scopes: meta only, with annotations and heuristics", IntentInput{Declaration: &ToolDeclaration{RequiredScopes: []string{"repo.write"}}, Tool: &mcp.Tool{Name: "push_commit", Annotations: mcp.Annotations{ReadOnlyHint: &no}}},
			FieldRequiredScopes, []string{"repo.write"}, SourceMeta, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.in)
			var value any
			switch tt.field {
			case FieldDeclaredSideEffects:
				value = got.DeclaredSideEffects
			case FieldSideEffect:
				value = got.SideEffect
			case FieldDataClasses:
				value = got.DataClasses
			case FieldExternality:
				value = got.Externality
			case FieldRequiredScopes:
				value = got.RequiredScopes
			}
			if !reflect.DeepEqual(value, tt.value) {
				t.Errorf("%s = %v, want %v", tt.field, value, tt.value)
			}
			if s := got.Sources[tt.field]; s != tt.source {
				t.Errorf("Sources[%s] = %s, want %s", tt.field, s, tt.source)
			}
			weaker, conflict := got.Conflicts[tt.field]
			if weaker != tt.weaker || conflict != (tt.weaker != "") {
				t.Errorf("Conflicts[%s] = %q (%v), want %q", tt.field, weaker, conflict, tt.weaker)
			}
			warned := false
			for _, w := range got.Warnings() {
				warned = warned || w == WarningMetadataConflict+tt.field
			}
			if warned != conflict {
				t.Errorf("Warnings() = %v", got.Warnings())
			}
			// The field weighs as the weaker source: Confidence is
			// recomputable from Sources and Conflicts.
			one := ToolIntent{Sources: map[string]string{tt.field: tt.source}}
			if tt.weaker != "" {
				one.Conflicts = map[string]string{tt.field: tt.weaker}
			}
			w := SourceWeights[tt.source]
			if tt.weaker != "" {
				w = min(w, SourceWeights[tt.weaker])
			}
			if c, want := Confidence(one, 0), float64(int(w/5*100+0.5))/100; c != want {
				t.Errorf("Confidence of the field alone = %v, want %v", c, want)
			}
		})
	}
}

// TestAcceptanceReadOnlyHintWithWritingMeta is the case of the task: a tool
// annotated readOnlyHint true whose _meta declaration says it writes is
// mutating, with metadata_conflict warnings and a lower confidence than
// either source alone would give it.
func TestAcceptanceReadOnlyHintWithWritingMeta(t *testing.T) {
	yes := true
	tool := &mcp.Tool{Name: "notes_save", Annotations: mcp.Annotations{ReadOnlyHint: &yes},
		Meta: json.RawMessage(`{"dev.gatehouse/security":{"declared_side_effects":["write"]}}`)}
	it := ToolIntentOf(tool)
	if it.SideEffect != "mutating" || it.Sources[FieldSideEffect] != SourceMeta || it.Conflicts[FieldSideEffect] != SourceAnnotation {
		t.Fatalf("intent %+v", it)
	}
	want := []string{"metadata_conflict:declared_side_effects", "metadata_conflict:side_effect"}
	if got := it.Warnings(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Warnings() = %v, want %v", got, want)
	}
	// effects and side_effect weigh 0.75 (annotation), externality 0.75
	// (openWorldHint by default), data classes and scopes 0.
	if c := Confidence(it, 0); c != 0.45 {
		t.Fatalf("Confidence = %v", c)
	}
	// A literal intent with Sources and Conflicts merges a receipt as if
	// built by Normalize from its claims.
	lit := ToolIntent{SideEffect: "read_only", Sources: map[string]string{FieldSideEffect: SourceAnnotation}}
	got := WithReceipt(lit, &ServerReceipt{SideEffect: "destructive"}, StatusOK)
	if got.SideEffect != "destructive" || got.Conflicts[FieldSideEffect] != SourceAnnotation {
		t.Fatalf("WithReceipt over a literal: %+v", got)
	}
}

// TestToolIntentOf: the declaration is read from tool._meta, a declaration
// that is not an object is ignored, and a nil tool is unknown.
func TestToolIntentOf(t *testing.T) {
	withMeta := func(meta string) *mcp.Tool { return &mcp.Tool{Name: "zzz", Meta: json.RawMessage(meta)} }
	if it := ToolIntentOf(withMeta(`{"dev.gatehouse/security":{"side_effect":"read_only","externality":"internal"}}`)); it.SideEffect != "read_only" || it.Sources[FieldExternality] != SourceMeta {
		t.Errorf("declared: %+v", it)
	}
	for _, meta := range []string{`{"dev.gatehouse/security":["x"]}`, `{"security":{"side_effect":"read_only"}}`, `[]`, `{`} {
		if it := ToolIntentOf(withMeta(meta)); it.Sources[FieldSideEffect] != SourceUnknown {
			t.Errorf("%s: %+v", meta, it)
		}
	}
	if it := ToolIntentOf(nil); it.SideEffect != "destructive" || Confidence(it, 0) != 0 {
		t.Errorf("nil tool: %+v", it)
	}
}
