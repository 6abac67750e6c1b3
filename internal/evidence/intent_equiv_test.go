package evidence

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestNormalizeMergeProperties: over every combination of receipt, status,
// declaration and tool below, Normalize is the tool's part merged with the
// receipt (WithReceipt), and the merge never says less than a source alone:
// each field a source claims on its own (Normalize of that source alone,
// where the field is not unknown) is at most as dangerous as the merged
// side_effect and externality and a subset of the merged lists; the merged
// value's source is one of the sources given.
func TestNormalizeMergeProperties(t *testing.T) {
	yes, no := true, false
	receipts := []*ServerReceipt{
		nil, {},
		{DeclaredSideEffects: []string{"read", "share"}, SideEffect: "mutating", DataClasses: []string{"internal"}, Externality: "external", RequiredScopes: []string{"a.share"}},
		{SideEffect: "read_only"},
		{DeclaredSideEffects: []string{"delete"}, Externality: "internal"},
		{DataClasses: []string{}, RequiredScopes: []string{}},
		{DeclaredSideEffects: []string{"read"}, IssuedBy: IssuedByGateway},
	}
	decls := []*ToolDeclaration{
		nil, {},
		{DeclaredSideEffects: []string{"read"}, SideEffect: "read_only", DataClasses: []string{}, Externality: "internal", RequiredScopes: []string{}},
		{SideEffect: "destructive"},
		{DeclaredSideEffects: []string{"write"}, Externality: "third_party", DataClasses: []string{"pii"}, RequiredScopes: []string{"a.write"}},
	}
	tools := []*mcp.Tool{
		nil, {},
		{Name: "zzz", Annotations: mcp.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no}},
		{Name: "deleteRepoBranch", Annotations: mcp.Annotations{DestructiveHint: &no}},
		{Name: "send_email", Description: "posts on the web", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{},"api_key":{},"iban":{}}}`)},
		{Name: "HTTPFetch", InputSchema: json.RawMessage(`[]`)},
		{Name: "get_weather", Annotations: mcp.Annotations{ReadOnlyHint: &yes}},
	}
	rank := func(vocab []string, v string) int { return slices.Index(vocab, v) }
	n := 0
	for _, r := range receipts {
		for _, st := range append(slices.Clone(Statuses), "") {
			for _, d := range decls {
				for _, tool := range tools {
					in := IntentInput{Receipt: r, ReceiptStatus: Status(st), Declaration: d, Tool: tool}
					got := Normalize(in)
					base := Normalize(IntentInput{Declaration: d, Tool: tool})
					if with := WithReceipt(base, r, Status(st)); !reflect.DeepEqual(with, got) {
						t.Fatalf("WithReceipt(%+v) =\n%+v\nwant\n%+v", in, with, got)
					}
					given := map[string]bool{SourceUnknown: true, receiptSource(r, Status(st)): r != nil, SourceMeta: d != nil, SourceHeuristic: tool != nil,
						SourceAnnotation: tool != nil && (tool.Annotations.ReadOnlyHint != nil || tool.Annotations.DestructiveHint != nil || tool.Annotations.OpenWorldHint != nil)}
					for _, alone := range []IntentInput{{Receipt: r, ReceiptStatus: Status(st)}, {Declaration: d}, {Tool: tool}} {
						one := Normalize(alone)
						if one.Sources[FieldSideEffect] != SourceUnknown && rank(SideEffects, one.SideEffect) > rank(SideEffects, got.SideEffect) {
							t.Fatalf("Normalize(%+v).SideEffect = %s, less than %s alone", in, got.SideEffect, one.SideEffect)
						}
						if one.Sources[FieldExternality] != SourceUnknown && rank(Externalities, one.Externality) > rank(Externalities, got.Externality) {
							t.Fatalf("Normalize(%+v).Externality = %s, narrower than %s alone", in, got.Externality, one.Externality)
						}
						for _, pair := range [][2][]string{{one.DeclaredSideEffects, got.DeclaredSideEffects}, {one.DataClasses, got.DataClasses}, {one.RequiredScopes, got.RequiredScopes}} {
							for _, v := range pair[0] {
								if !slices.Contains(pair[1], v) {
									t.Fatalf("Normalize(%+v) lost %q", in, v)
								}
							}
						}
					}
					for _, f := range IntentFields {
						if !given[got.Sources[f]] {
							t.Fatalf("Normalize(%+v).Sources[%s] = %s, not a source given", in, f, got.Sources[f])
						}
						if s, ok := got.Conflicts[f]; ok && !given[s] {
							t.Fatalf("Normalize(%+v).Conflicts[%s] = %s, not a source given", in, f, s)
						}
					}
					n++
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d combinations", n)
	}
}

// TestWithReceiptCopies: the result of WithReceipt shares nothing with the
// receipt or, when the receipt is used, with the intent it started from.
func TestWithReceiptCopies(t *testing.T) {
	base := Normalize(IntentInput{Declaration: &ToolDeclaration{DataClasses: []string{"pii"}}})
	r := &ServerReceipt{DeclaredSideEffects: []string{"read"}}
	got := WithReceipt(base, r, StatusOK)
	got.DeclaredSideEffects[0] = "changed"
	got.DataClasses[0] = "changed"
	got.Sources[FieldSideEffect] = "changed"
	if r.DeclaredSideEffects[0] != "read" || base.DataClasses[0] != "pii" || base.Sources[FieldSideEffect] != SourceUnknown {
		t.Fatalf("WithReceipt shares memory: receipt %v, base %+v", r.DeclaredSideEffects, base)
	}
	if Confidence(got, 0) == Confidence(base, 0) {
		t.Fatal("the receipt changed nothing")
	}
}
