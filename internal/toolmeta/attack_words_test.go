package toolmeta

import (
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestInvisibleCharactersDoNotHideANameWord: heuristics make a tool named
// delete_file with readOnlyHint true destructive (heuristics raise what
// the annotations claim). The same name with an invisible character inside
// the word (a zero-width space, a zero-width joiner, a soft hyphen), or
// written in fullwidth letters, reads as "delete_file" to the person or
// model choosing the tool, but words() splits it at the invisible
// character ("de", "lete") or keeps letters no table holds, so the
// heuristic sees nothing and the read-only annotation alone decides: a
// readonly_agent may call it. Format characters should be dropped before
// the name is split (and compatibility forms folded), so that the name is
// read as it is shown.
func TestInvisibleCharactersDoNotHideANameWord(t *testing.T) {
	yes := true
	plain := OfTool(nil, &mcp.Tool{Name: "delete_file", Annotations: mcp.Annotations{ReadOnlyHint: &yes}})
	if plain.SideEffect != mcp.SideEffectDestructive {
		t.Fatalf("delete_file with readOnlyHint true: side_effect %q, want destructive (the premise)", plain.SideEffect)
	}
	for _, name := range []string{
		"de\u200blete_file", // zero-width space
		"de\u200dlete_file", // zero-width joiner
		"de\u00adlete_file", // soft hyphen
		"de\u2060lete_file", // word joiner
		"ｄｅｌｅｔｅ_file",       // fullwidth letters
	} {
		it := OfTool(nil, &mcp.Tool{Name: name, Annotations: mcp.Annotations{ReadOnlyHint: &yes}})
		if it.SideEffect != plain.SideEffect {
			t.Errorf("%+q with readOnlyHint true: side_effect %q (sources %v), want %q as for delete_file", name, it.SideEffect, it.Sources, plain.SideEffect)
		}
	}
}
