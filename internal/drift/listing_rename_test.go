package drift

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestRenameNeedsDistinctiveDefinition: a new tool whose bare definition
// matches a removed baseline's by chance is added, not renamed (a
// regression: test/e2e's catalog test saw "added" held as a rename of
// "sendlistchanged"); one with a description or an input property is a
// rename.
func TestRenameNeedsDistinctiveDefinition(t *testing.T) {
	bare := func(name string) mcp.Tool {
		return mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: mcp.Annotations{ReadOnlyHint: new(bool)}}
	}
	described := func(name string) mcp.Tool { t := bare(name); t.Description = "Look up a word."; return t }
	withProp := func(name string) mcp.Tool {
		t := bare(name)
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`)
		return t
	}
	for _, c := range []struct {
		name    string
		mk      func(string) mcp.Tool
		renamed bool
	}{{"bare", bare, false}, {"described", described, true}, {"with a property", withProp, true}} {
		l := CompareListing(map[string]mcp.Tool{"old": c.mk("old")}, []mcp.Tool{c.mk("new")}, Options{})
		if got := l.Renamed["new"] == "old"; got != c.renamed {
			t.Errorf("%s: renamed %v, want %v (listing %+v)", c.name, got, c.renamed, l)
		}
		if !c.renamed && (len(l.Added) != 1 || len(l.Removed) != 1) {
			t.Errorf("%s: added %v removed %v", c.name, l.Added, l.Removed)
		}
	}
}
