package drift

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestCompareListing: added, removed, renamed and changed tools, in a
// fixed order, whatever the order of the baselines map.
func TestCompareListing(t *testing.T) {
	mk := func(name, desc string) mcp.Tool {
		return tool(t, `{"name":"`+name+`","description":"`+desc+`","inputSchema":{"type":"object"}}`)
	}
	baselines := map[string]mcp.Tool{
		"same":    mk("same", "a"),
		"edited":  mk("edited", "b"),
		"old":     mk("old", "unique"),
		"gone_z":  mk("gone_z", "z"),
		"gone_a":  mk("gone_a", "a2"),
		"twin1":   mk("twin1", "twin"),
		"twin2":   mk("twin2", "twin"),
		"spacing": tool(t, `{ "name" : "spacing", "inputSchema" : { "type" : "object" } }`),
	}
	listed := []mcp.Tool{
		mk("same", "a"),
		mk("new_b", "fresh"),
		mk("edited", "b2"),
		mk("renamed", "unique"), // old, renamed
		mk("twin3", "twin"),     // ambiguous: two baselines match
		mk("new_a", "fresh2"),
		mk("new_b", "fresh"), // listed twice
		tool(t, `{"inputSchema":{"type":"object"},"name":"spacing"}`),
	}
	for range 5 { // map order must not matter
		l := CompareListing(baselines, listed, Options{})
		if want := []string{"new_b", "twin3", "new_a"}; !slices.Equal(l.Added, want) {
			t.Errorf("Added %q, want %q", l.Added, want)
		}
		if want := []string{"gone_a", "gone_z", "twin1", "twin2"}; !slices.Equal(l.Removed, want) {
			t.Errorf("Removed %q, want %q", l.Removed, want)
		}
		if want := map[string]string{"renamed": "old"}; !reflect.DeepEqual(l.Renamed, want) {
			t.Errorf("Renamed %v, want %v", l.Renamed, want)
		}
		if len(l.Changed) != 2 {
			t.Errorf("Changed %v", l.Changed)
		}
		if r := l.Changed["edited"]; r.Severity != Minor || r.Changes[0].Kind != KindDescriptionChanged {
			t.Errorf("edited: %+v", r)
		}
		if r := l.Changed["renamed"]; r.Severity != Moderate || len(r.Changes) != 1 || r.Changes[0].Kind != KindToolRenamed || r.Changes[0].From != "old" {
			t.Errorf("renamed: %+v", r)
		}
		if l.Severity() != Moderate {
			t.Errorf("listing severity %v", l.Severity())
		}
	}
	if l := CompareListing(baselines, nil, Options{}); len(l.Removed) != len(baselines) || l.Severity() != Minor {
		t.Errorf("empty listing: %+v", l)
	}
	if l := CompareListing(nil, nil, Options{}); l.Severity() != None || l.Changed != nil || l.Added != nil || l.Removed != nil || l.Renamed != nil {
		t.Errorf("nothing: %+v", l)
	}
}

// TestListingDuplicateKeepsWorst: a name listed twice keeps the more
// severe of its two results.
func TestListingDuplicateKeepsWorst(t *testing.T) {
	base := tool(t, decl("", nil))
	worse := tool(t, decl("", map[string]string{"externality": `"external"`}))
	edit := tool(t, strings.Replace(decl("", nil), "Frobs.", "Frobs!", 1))
	for _, order := range [][]mcp.Tool{{worse, edit}, {edit, worse}} {
		l := CompareListing(map[string]mcp.Tool{"frob": base}, order, Options{})
		if l.Changed["frob"].Severity != Critical {
			t.Errorf("got %v", l.Changed["frob"].Severity)
		}
	}
}

// TestAddedRemoved: the results of a tool added and of one removed.
func TestAddedRemoved(t *testing.T) {
	a := AddedTool(mcp.Tool{Name: "x\x1b[2J"}, Options{})
	if a.Severity != Moderate || a.Action != ActionMonitor || a.Changes[0].Kind != KindToolAdded || strings.Contains(a.Changes[0].To, "\x1b") {
		t.Errorf("added: %+v", a)
	}
	r := RemovedTool("y", Options{Actions: Actions{Minor: ActionDeny}})
	if r.Severity != Minor || r.Action != ActionDeny || r.Changes[0].Kind != KindToolRemoved || !slices.Equal(r.Warnings, []string{WarningToolRemoved}) {
		t.Errorf("removed: %+v", r)
	}
}

// TestActionsAndDecisive: Options.Actions replaces the default action of
// a severity (others keep theirs); Decisive lists the changes at the
// result's severity only.
func TestActionsAndDecisive(t *testing.T) {
	base := load(t, "publish_artifact_baseline.json")
	cur := load(t, "publish_artifact_current.json")
	r := Compare(base, cur, Options{Actions: Actions{Critical: ActionDeny}})
	if r.Action != ActionDeny {
		t.Errorf("action %q", r.Action)
	}
	r = Compare(base, cur, Options{Actions: Actions{High: ActionMonitor}})
	if r.Action != ActionQuarantine {
		t.Errorf("action %q, want the default quarantine", r.Action)
	}
	if got := (Result{}).Decisive(); got != nil {
		t.Errorf("Decisive of none: %q", got)
	}
	for s := None; s <= Critical; s++ {
		if back, ok := ParseSeverity(s.String()); !ok || back != s {
			t.Errorf("ParseSeverity(%q)", s.String())
		}
	}
}

// TestSensitiveField: the names that are, and a few that are not.
func TestSensitiveField(t *testing.T) {
	for _, n := range []string{"api_key", "password", "destination", "webhookUrl", "callbackURL", "recipient", "to_email", "command", "exec", "shellScript", "targetHost", "AUTH_TOKEN"} {
		if !SensitiveField(n) {
			t.Errorf("%q not sensitive", n)
		}
	}
	for _, n := range []string{"path", "limit", "visibility", "author", "tokenizer", "description", "query", "executor_count"} {
		if SensitiveField(n) {
			t.Errorf("%q sensitive", n)
		}
	}
}
