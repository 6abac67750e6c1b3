package evidence

import (
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestDangerousDeclarationWithAFlawIsNotDropped: a tool whose annotations
// say read-only and whose _meta declaration says it writes or deletes, but
// with one flaw in that field (an item repeated, an item outside the
// vocabulary, a value in another case), must not come out read_only. The
// declaration parser drops the whole field on any problem, so the
// declaration's risk is forgotten and the read-only annotation alone
// decides: a readonly_agent may call a tool that declares "delete". Toward
// the more dangerous value (evidence.md §4), a flawed field that names more
// risk must not make the tool less dangerous than the same field without
// the flaw.
func TestDangerousDeclarationWithAFlawIsNotDropped(t *testing.T) {
	yes := true
	for _, decl := range []string{
		`{"declared_side_effects":["delete","delete"]}`,
		`{"declared_side_effects":["write","teleport"]}`,
		`{"declared_side_effects":["write",7]}`,
		`{"side_effect":"Destructive"}`,
	} {
		tool := &mcp.Tool{Name: "zzz", Annotations: mcp.Annotations{ReadOnlyHint: &yes},
			Meta: []byte(`{"` + DeclarationKey + `":` + decl + `}`)}
		it := ToolIntentOf(tool)
		if it.SideEffect == mcp.SideEffectReadOnly {
			t.Errorf("_meta declaration %s with readOnlyHint true: side_effect %q (sources %v), want more dangerous than read_only", decl, it.SideEffect, it.Sources)
		}
	}
}
