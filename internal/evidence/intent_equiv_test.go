package evidence

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestNormalizeSameAsReference: Normalize, now built from the tool's part
// and WithReceipt, gives what it gave when it drew on every source in one
// pass (normalizeReference, its previous code), over every combination of
// receipt, status, declaration and tool below; and WithReceipt over the
// intent without the receipt is Normalize with it.
func TestNormalizeSameAsReference(t *testing.T) {
	yes, no := true, false
	receipts := []*ServerReceipt{
		nil, {},
		{DeclaredSideEffects: []string{"read", "share"}, SideEffect: "mutating", DataClasses: []string{"internal"}, Externality: "external", RequiredScopes: []string{"a.share"}},
		{SideEffect: "read_only"},
		{DataClasses: []string{}, RequiredScopes: []string{}},
		{DeclaredSideEffects: []string{"read"}, IssuedBy: IssuedByGateway},
	}
	decls := []*ToolDeclaration{
		nil, {},
		{DeclaredSideEffects: []string{"read"}, SideEffect: "read_only", DataClasses: []string{}, Externality: "internal", RequiredScopes: []string{}},
		{SideEffect: "destructive"},
	}
	tools := []*mcp.Tool{
		nil, {},
		{Name: "zzz", Annotations: mcp.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no}},
		{Name: "deleteRepoBranch", Annotations: mcp.Annotations{DestructiveHint: &no}},
		{Name: "send_email", Description: "posts on the web", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{},"api_key":{},"iban":{}}}`)},
		{Name: "HTTPFetch", InputSchema: json.RawMessage(`[]`)},
	}
	n := 0
	for _, r := range receipts {
		for _, st := range append(slices.Clone(Statuses), "") {
			for _, d := range decls {
				for _, tool := range tools {
					in := IntentInput{Receipt: r, ReceiptStatus: Status(st), Declaration: d, Tool: tool}
					want := normalizeReference(in)
					if got := Normalize(in); !reflect.DeepEqual(got, want) {
						t.Fatalf("Normalize(%+v) =\n%+v\nwant\n%+v", in, got, want)
					}
					base := Normalize(IntentInput{Declaration: d, Tool: tool})
					if got := base.WithReceipt(r, Status(st)); !reflect.DeepEqual(got, want) {
						t.Fatalf("WithReceipt(%+v) =\n%+v\nwant\n%+v", in, got, want)
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
	got := base.WithReceipt(r, StatusOK)
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

// normalizeReference is Normalize as it was before it was split into the
// tool's part and WithReceipt.
func normalizeReference(in IntentInput) ToolIntent {
	it := ToolIntent{Sources: make(map[string]string, len(IntentFields))}
	set := func(field, source string) bool {
		if _, done := it.Sources[field]; done {
			return false
		}
		it.Sources[field] = source
		return true
	}
	fromIntent := func(source string, effects []string, side string, classes []string, ext string, scopes []string) {
		if effects != nil && set(FieldDeclaredSideEffects, source) {
			it.DeclaredSideEffects = slices.Clone(effects)
		}
		if side != "" && set(FieldSideEffect, source) {
			it.SideEffect = side
		}
		if classes != nil && set(FieldDataClasses, source) {
			it.DataClasses = slices.Clone(classes)
		}
		if ext != "" && set(FieldExternality, source) {
			it.Externality = ext
		}
		if scopes != nil && set(FieldRequiredScopes, source) {
			it.RequiredScopes = slices.Clone(scopes)
		}
	}

	if r := in.Receipt; r != nil && r.IssuedBy != IssuedByGateway {
		source := ""
		switch in.ReceiptStatus {
		case StatusOK:
			source = SourceVerifiedReceipt
		case StatusUnsigned, StatusUnknown:
			source = SourceUnsignedReceipt
		}
		if source != "" {
			fromIntent(source, r.DeclaredSideEffects, r.SideEffect, r.DataClasses, r.Externality, r.RequiredScopes)
		}
	}
	if d := in.Declaration; d != nil {
		fromIntent(SourceMeta, d.DeclaredSideEffects, d.SideEffect, d.DataClasses, d.Externality, d.RequiredScopes)
	}
	if t := in.Tool; t != nil {
		a := t.Annotations
		if a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.OpenWorldHint != nil {
			side := a.SideEffect()
			ext := "external"
			if a.OpenWorldHint != nil && !*a.OpenWorldHint {
				ext = "internal"
			}
			fromIntent(SourceAnnotation, effectsOfSideEffect(side), side, nil, ext, nil)
		}
		h := heuristics(t)
		fromIntent(SourceHeuristic, h.effects, h.sideEffect, h.dataClasses, h.externality, nil)
	}
	if set(FieldDeclaredSideEffects, SourceUnknown) {
		it.DeclaredSideEffects = nil
	}
	if set(FieldSideEffect, SourceUnknown) {
		it.SideEffect = mcp.SideEffectDestructive
	}
	if set(FieldDataClasses, SourceUnknown) {
		it.DataClasses = nil
	}
	if set(FieldExternality, SourceUnknown) {
		it.Externality = "external"
	}
	if set(FieldRequiredScopes, SourceUnknown) {
		it.RequiredScopes = nil
	}
	return it
}
