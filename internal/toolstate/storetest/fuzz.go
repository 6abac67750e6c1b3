package storetest

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// RoundTrip is the body of the backends' fuzz targets: it records an
// observation of def and a hold under the names server and tool, with
// text as the free-text fields, on s, and checks that s gives back exactly
// those bytes (from s and from other, a Store on the same database), or
// that it refused them with ErrInvalid, leaving the version as it was,
// because a name is empty or a string is not UTF-8 without NUL. Keys may
// repeat across calls: both writes replace.
func RoundTrip(t *testing.T, s, other toolstate.Store, server, tool string, def []byte, text string) {
	t.Helper()
	valid := server != "" && tool != ""
	for _, x := range []string{server, tool, text} {
		if !utf8.ValidString(x) || strings.IndexByte(x, 0) >= 0 {
			valid = false
		}
	}
	obs := toolstate.Observation{ServerID: server, Tool: tool, Hash: toolstate.DefinitionHash(def), Definition: def,
		Severity: "minor", Changes: []string{text}, By: text, At: at(1)}
	if len(def) == 0 {
		obs.Removed, obs.Hash, obs.Definition = true, "", nil
	}
	q := toolstate.Quarantine{ServerID: server, Tool: tool, Hash: obs.Hash, Severity: text, Changes: []string{text, text}, By: text, Rule: text, Reason: text, At: at(2)}
	v := version(t, s)
	err := s.Observe(ctx, []toolstate.Observation{obs})
	if err == nil {
		err = s.Hold(ctx, q)
	}
	if !valid {
		if !errors.Is(err, toolstate.ErrInvalid) {
			t.Fatalf("server %q tool %q text %q: error %v, want ErrInvalid", server, tool, text, err)
		}
		if v2 := version(t, s); v2 != v {
			t.Fatalf("a refused write moved the version from %d to %d", v, v2)
		}
		return
	}
	if err != nil {
		t.Fatalf("server %q tool %q def %q text %q: %v", server, tool, def, text, err)
	}
	for _, r := range []toolstate.Store{s, other} {
		got := lookup(t, r, server, tool)
		want := toolstate.ToolState{ServerID: server, Tool: tool, Baseline: got.Baseline, Observed: &obs, Quarantine: &q}
		same(t, "round trip", got, want)
	}
}

func lookup(t *testing.T, s toolstate.Store, server, name string) toolstate.ToolState {
	t.Helper()
	st, err := s.Tool(ctx, server, name)
	if err != nil {
		t.Fatalf("Tool(%q, %q): %v", server, name, err)
	}
	return st
}
