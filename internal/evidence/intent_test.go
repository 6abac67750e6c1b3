package evidence

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

func TestNormalize(t *testing.T) {
	yes, no := true, false
	receipt := &ServerReceipt{
		DeclaredSideEffects: []string{"read", "share"}, SideEffect: "mutating",
		DataClasses: []string{"internal"}, Externality: "external", RequiredScopes: []string{"a.share"},
	}
	partial := &ServerReceipt{SideEffect: "read_only"} // only one field
	decl := &ToolDeclaration{DeclaredSideEffects: []string{"read"}, SideEffect: "read_only",
		DataClasses: []string{}, Externality: "internal", RequiredScopes: []string{}}
	type want struct {
		effects         []string
		side, ext       string
		classes, scopes []string
		sources         [5]string // in IntentFields order
	}
	all := func(s string) [5]string { return [5]string{s, s, s, s, s} }
	tests := []struct {
		name string
		in   IntentInput
		want want
	}{
		{"nothing", IntentInput{}, want{nil, "destructive", "external", nil, nil, all(SourceUnknown)}},
		{"verified receipt", IntentInput{Receipt: receipt, ReceiptStatus: StatusOK, Declaration: decl},
			want{[]string{"read", "share"}, "mutating", "external", []string{"internal"}, []string{"a.share"}, all(SourceVerifiedReceipt)}},
		{"unsigned receipt", IntentInput{Receipt: receipt, ReceiptStatus: StatusUnsigned},
			want{[]string{"read", "share"}, "mutating", "external", []string{"internal"}, []string{"a.share"}, all(SourceUnsignedReceipt)}},
		{"receipt without key counts as unsigned", IntentInput{Receipt: receipt, ReceiptStatus: StatusUnknown},
			want{[]string{"read", "share"}, "mutating", "external", []string{"internal"}, []string{"a.share"}, all(SourceUnsignedReceipt)}},
		{"tampered receipt ignored", IntentInput{Receipt: receipt, ReceiptStatus: StatusTampered, Declaration: decl},
			want{[]string{"read"}, "read_only", "internal", []string{}, []string{}, all(SourceMeta)}},
		{"receipt without status ignored", IntentInput{Receipt: receipt}, want{nil, "destructive", "external", nil, nil, all(SourceUnknown)}},
		{"partial receipt then declaration", IntentInput{Receipt: partial, ReceiptStatus: StatusOK, Declaration: decl},
			want{[]string{"read"}, "read_only", "internal", []string{}, []string{},
				[5]string{SourceMeta, SourceVerifiedReceipt, SourceMeta, SourceMeta, SourceMeta}}},
		{"annotations read-only closed world", IntentInput{Tool: &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no}}},
			want{[]string{"read"}, "read_only", "internal", nil, nil,
				[5]string{SourceAnnotation, SourceAnnotation, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		{"annotation defaults: readOnlyHint false", IntentInput{Tool: &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{ReadOnlyHint: &no}}},
			want{[]string{"write", "delete"}, "destructive", "external", nil, nil,
				[5]string{SourceAnnotation, SourceAnnotation, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		{"annotation defaults: destructiveHint false", IntentInput{Tool: &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{DestructiveHint: &no}}},
			want{[]string{"write"}, "mutating", "external", nil, nil,
				[5]string{SourceAnnotation, SourceAnnotation, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		{"annotation defaults: only openWorldHint", IntentInput{Tool: &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{OpenWorldHint: &no}}},
			want{[]string{"write", "delete"}, "destructive", "internal", nil, nil,
				[5]string{SourceAnnotation, SourceAnnotation, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		{"title only is no annotation", IntentInput{Tool: &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{Title: "Z"}}},
			want{nil, "destructive", "external", nil, nil, all(SourceUnknown)}},
		{"heuristics more dangerous than annotations", IntentInput{Tool: &mcp.Tool{Name: "delete_file", Annotations: mcp.Annotations{ReadOnlyHint: &yes}}},
			want{[]string{"read", "delete"}, "destructive", "external", nil, nil,
				[5]string{SourceAnnotation, SourceHeuristic, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		{"declaration over annotations", IntentInput{Declaration: &ToolDeclaration{SideEffect: "destructive"}, Tool: &mcp.Tool{Name: "x", Annotations: mcp.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no}}},
			want{[]string{"read"}, "destructive", "internal", nil, nil,
				[5]string{SourceAnnotation, SourceMeta, SourceUnknown, SourceAnnotation, SourceUnknown}}},
		// Heuristics alone never make a tool less dangerous than knowing
		// nothing: the side effect stays destructive (unknown).
		{"heuristic read", IntentInput{Tool: &mcp.Tool{Name: "get_weather", Description: "Current weather for a city."}},
			want{[]string{"read"}, "destructive", "external", nil, nil,
				[5]string{SourceHeuristic, SourceUnknown, SourceUnknown, SourceUnknown, SourceUnknown}}},
		{"heuristic delete camelCase", IntentInput{Tool: &mcp.Tool{Name: "deleteRepoBranch"}},
			want{[]string{"delete"}, "destructive", "external", []string{"source_code"}, nil,
				[5]string{SourceHeuristic, SourceHeuristic, SourceHeuristic, SourceUnknown, SourceUnknown}}},
		{"heuristic fetch url is external", IntentInput{Tool: &mcp.Tool{Name: "fetch_url"}},
			want{[]string{"network"}, "destructive", "external", nil, nil,
				[5]string{SourceHeuristic, SourceUnknown, SourceUnknown, SourceHeuristic, SourceUnknown}}},
		{"heuristic external from description", IntentInput{Tool: &mcp.Tool{Name: "lookup", Description: "Looks things up on the web."}},
			want{[]string{"read"}, "destructive", "external", nil, nil,
				[5]string{SourceHeuristic, SourceUnknown, SourceUnknown, SourceHeuristic, SourceUnknown}}},
		{"heuristic send email external pii", IntentInput{Tool: &mcp.Tool{Name: "send_email",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{},"subject":{},"api_key":{}}}`)}},
			want{[]string{"message"}, "destructive", "external", []string{"pii", "secrets"}, nil,
				[5]string{SourceHeuristic, SourceUnknown, SourceHeuristic, SourceHeuristic, SourceUnknown}}},
		{"heuristic run shell", IntentInput{Tool: &mcp.Tool{Name: "run_shell_command"}},
			want{[]string{"execute"}, "destructive", "external", nil, nil,
				[5]string{SourceHeuristic, SourceUnknown, SourceUnknown, SourceUnknown, SourceUnknown}}},
		{"heuristic schema classes", IntentInput{Tool: &mcp.Tool{Name: "zzz",
			InputSchema: json.RawMessage(`{"properties":{"creditCardNumber":{},"Password":{}}}`)}},
			want{nil, "destructive", "external", []string{"secrets", "financial"}, nil,
				[5]string{SourceUnknown, SourceUnknown, SourceHeuristic, SourceUnknown, SourceUnknown}}},
		{"heuristics do not read descriptions for effects", IntentInput{Tool: &mcp.Tool{Name: "zzz", Description: "Does not delete anything."}},
			want{nil, "destructive", "external", nil, nil, all(SourceUnknown)}},
		{"synthesized receipt ignored", IntentInput{Receipt: &ServerReceipt{SideEffect: "read_only", IssuedBy: IssuedByGateway}, ReceiptStatus: StatusOK},
			want{nil, "destructive", "external", nil, nil, all(SourceUnknown)}},
	}
	// The cases whose sources disagree: field -> the weaker source.
	conflicts := map[string]map[string]string{
		"verified receipt":                           {FieldSideEffect: SourceMeta, FieldExternality: SourceMeta},
		"partial receipt then declaration":           nil,
		"heuristics more dangerous than annotations": {FieldDeclaredSideEffects: SourceHeuristic, FieldSideEffect: SourceHeuristic},
		"declaration over annotations":               {FieldSideEffect: SourceAnnotation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.in)
			if want := conflicts[tt.name]; !reflect.DeepEqual(got.Conflicts, want) {
				t.Errorf("Conflicts = %v, want %v", got.Conflicts, want)
			}
			var sources [5]string
			for i, f := range IntentFields {
				sources[i] = got.Sources[f]
			}
			if len(got.Sources) != 5 {
				t.Errorf("Sources has %d entries", len(got.Sources))
			}
			g := want{got.DeclaredSideEffects, got.SideEffect, got.Externality, got.DataClasses, got.RequiredScopes, sources}
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Normalize =\n%#v\nwant\n%#v", g, tt.want)
			}
		})
	}
}

func TestNormalizeCopies(t *testing.T) {
	r := &ServerReceipt{DeclaredSideEffects: []string{"read"}}
	it := Normalize(IntentInput{Receipt: r, ReceiptStatus: StatusOK})
	it.DeclaredSideEffects[0] = "write"
	if r.DeclaredSideEffects[0] != "read" {
		t.Error("Normalize shares slices with the receipt")
	}
}

func TestConfidence(t *testing.T) {
	src := func(s ...string) ToolIntent {
		m := map[string]string{}
		for i, f := range IntentFields {
			m[f] = s[i]
		}
		return ToolIntent{Sources: m}
	}
	tests := []struct {
		name      string
		intent    ToolIntent
		conflicts int
		want      float64
	}{
		{"all verified", src("verified_receipt", "verified_receipt", "verified_receipt", "verified_receipt", "verified_receipt"), 0, 1},
		{"all unsigned", src("unsigned_receipt", "unsigned_receipt", "unsigned_receipt", "unsigned_receipt", "unsigned_receipt"), 0, 0.9},
		{"all meta", src("meta", "meta", "meta", "meta", "meta"), 0, 0.85},
		{"all annotation", src("annotation", "annotation", "annotation", "annotation", "annotation"), 0, 0.75},
		{"all heuristic", src("heuristic", "heuristic", "heuristic", "heuristic", "heuristic"), 0, 0.5},
		{"all unknown", src("unknown", "unknown", "unknown", "unknown", "unknown"), 0, 0},
		{"no sources", ToolIntent{}, 0, 0},
		{"unrecognized source", src("oracle", "oracle", "oracle", "oracle", "oracle"), 0, 0},
		{"mixed", src("verified_receipt", "verified_receipt", "meta", "annotation", "heuristic"), 0, 0.82},
		{"annotations only", src("annotation", "annotation", "unknown", "annotation", "unknown"), 0, 0.45},
		{"mixed with unsigned", src("verified_receipt", "verified_receipt", "unsigned_receipt", "meta", "meta"), 0, 0.92},
		{"one conflict", src("verified_receipt", "verified_receipt", "verified_receipt", "verified_receipt", "verified_receipt"), 1, 0.9},
		{"three conflicts", src("unsigned_receipt", "unsigned_receipt", "unsigned_receipt", "unsigned_receipt", "unsigned_receipt"), 3, 0.6},
		{"floor at zero", src("heuristic", "heuristic", "heuristic", "heuristic", "heuristic"), 9, 0},
		{"negative conflicts ignored", src("meta", "meta", "meta", "meta", "meta"), -3, 0.85},
	}
	for _, tt := range tests {
		if got := Confidence(tt.intent, tt.conflicts); got != tt.want {
			t.Errorf("%s: Confidence = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Normalize and Confidence together.
	if c := Confidence(Normalize(IntentInput{}), 0); c != 0 {
		t.Errorf("Confidence(nothing) = %v", c)
	}
}
