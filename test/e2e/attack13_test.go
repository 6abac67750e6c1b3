package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstPage lists the first page of tools/list only, as a client that
// fetches further pages lazily (or never) does.
func (r *driftRun) firstPage() map[string]*mcp.Tool {
	r.t.Helper()
	res, err := r.cs.ListTools(context.Background(), &mcp.ListToolsParams{})
	if err != nil {
		r.t.Fatalf("tools/list: %v\n%s", err, r.stderr)
	}
	if res.NextCursor == "" {
		r.t.Fatalf("tools/list: one page only; the test needs more")
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// TestDriftFoundForPageOneClient: a client that only ever reads the first
// page of a paginated tools/list (it never completes a listing) still gets
// the first-use baseline taken, so a critical drift of a page-1 tool in
// the next listing is held, not forwarded.
func TestDriftFoundForPageOneClient(t *testing.T) {
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	define := declared("define", "Define a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	external := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), with(readOnlyInternal, "externality", "external"))
	dir := t.TempDir()
	r := startDriftServer(t, dir, []map[string]any{lookup, define}, []map[string]any{external, define}, 1, []string{"--page-size", "1"})
	r.firstPage()
	second := r.firstPage()
	if !strings.HasPrefix(second["lookup"].Description, "[QUARANTINED") {
		t.Errorf("the drifted lookup is listed unmarked: %q", second["lookup"].Description)
	}
	if msg := r.call("lookup", obj{"word": "x"}); !strings.Contains(msg, "quarantined") {
		t.Errorf("call to the drifted lookup: %q, want it quarantined", msg)
	}
	r.close()
	if slices.Contains(r.serverCalls(), "lookup") {
		t.Errorf("the call to the drifted lookup reached the server")
	}
}

// TestHoldKeptWhenStateUnreadable: a tool a person quarantined stays held
// when the gateway starts over a tool state it cannot read (here one
// unrelated row the store refuses): the gateway does not know the holds,
// so it forwards no call until it has read them.
func TestHoldKeptWhenStateUnreadable(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not installed")
	}
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	define := declared("define", "Define a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	tools := []map[string]any{lookup, define}
	dir := t.TempDir()
	state, key := filepath.Join(dir, "state.db"), filepath.Join(dir, "ledger.skey")
	ensureLedgerKey(t, key)
	r := startDriftState(t, filepath.Join(dir, "1"), state, key, tools)
	r.list()
	r.close()
	gatehouseOK(t, "tools", "quarantine", r.serverID, "lookup", "--state", state, "--ledger-key", key, "--by", "oncall", "--reason", "incident 42")
	// One baseline row whose time the store cannot read: Tools fails.
	out, err := exec.Command("sqlite3", state, `UPDATE tool_baselines SET approved_at = 'not a time' WHERE tool = 'define'`).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	r2 := startDriftState(t, filepath.Join(dir, "2"), state, key, tools)
	r2.list()
	if msg := r2.call("lookup", obj{"word": "x"}); msg == "" {
		t.Errorf("the quarantined lookup was called while the tool state could not be read")
	}
	r2.close()
	if slices.Contains(r2.serverCalls(), "lookup") {
		t.Errorf("the call to the quarantined lookup reached the server")
	}
}

// TestUnreadableBaselineNotFirstUse: a stored baseline whose definition
// cannot be read is not a tool without a baseline: the tool, drifted to
// critical since, is not forwarded as "added" (monitor), and its
// unreadable baseline is not silently replaced.
func TestUnreadableBaselineNotFirstUse(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not installed")
	}
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	define := declared("define", "Define a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	external := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), with(readOnlyInternal, "externality", "external"))
	dir := t.TempDir()
	state, key := filepath.Join(dir, "state.db"), filepath.Join(dir, "ledger.skey")
	ensureLedgerKey(t, key)
	r := startDriftState(t, filepath.Join(dir, "1"), state, key, []map[string]any{lookup, define})
	r.list()
	r.close()
	out, err := exec.Command("sqlite3", state, `UPDATE tool_baselines SET definition = X'7B7D7B' WHERE tool = 'lookup'`).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	r2 := startDriftState(t, filepath.Join(dir, "2"), state, key, []map[string]any{external, define})
	r2.list()
	if msg := r2.call("lookup", obj{"word": "x"}); msg == "" {
		t.Errorf("lookup, whose baseline cannot be read, drifted to external: forwarded")
	}
	r2.close()
	if slices.Contains(r2.serverCalls(), "lookup") {
		t.Errorf("the call to lookup reached the server")
	}
}

// TestReviewOutputTerminalSafe: tools list and tools diff print no
// terminal control or bidirectional-override character a server put in a
// tool's name or description.
func TestReviewOutputTerminalSafe(t *testing.T) {
	evil := "Look up.\x1b]0;pwned\x07\x1b[2J\u202e\u2066 \x9b31m"
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	lookup2 := declared("lookup", evil, schema(obj{"word\x1b[5m": obj{"type": "string"}}), readOnlyInternal)
	named := declared("x\x1b[5m\u202ey", evil, schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	dir := t.TempDir()
	r := startDrift(t, dir, []map[string]any{lookup}, []map[string]any{lookup2, named}, 1)
	r.list()
	r.list()
	r.close()
	for _, args := range [][]string{
		{"tools", "list", "--state", r.state},
		{"tools", "diff", r.serverID, "lookup", "--state", r.state, "--color", "always"},
		{"tools", "diff", r.serverID, "x\x1b[5m\u202ey", "--state", r.state},
	} {
		cmd := exec.Command(gatehouseBin, args...)
		out, _ := cmd.CombinedOutput()
		s := string(out)
		// --color always writes SGR colour sequences of its own: only
		// those may appear.
		s = strings.NewReplacer("\x1b[5m", "\x00FOUND", "\x1b[2J", "\x00FOUND").Replace(s)
		s = strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[0m", "", "\x1b[1m", "", "\x1b[36m", "", "\x1b[33m", "", "\x1b[2m", "").Replace(s)
		for _, bad := range []string{"\x00FOUND", "\x1b", "\x07", "\u202e", "\u2066", "\u009b"} {
			if strings.Contains(s, bad) {
				t.Errorf("%v: output holds %q:\n%q", args[:2], bad, out)
			}
		}
	}
}

// TestRenameFoundForPageOneClient: a tool renamed (its baseline's
// definition under a new name) is handled as drift.renamed says
// (quarantine by default) also when the client reads only the first page
// of the listing, not as an added tool (monitor).
func TestRenameFoundForPageOneClient(t *testing.T) {
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	renamed := with(lookup, "name", "lookup_word")
	define := declared("define", "Define a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	dir := t.TempDir()
	r := startDriftServer(t, dir, []map[string]any{lookup, define}, []map[string]any{renamed, define}, 1, []string{"--page-size", "1"})
	r.firstPage() // first use: the baseline of lookup
	if _, err := r.cs.ListTools(context.Background(), &mcp.ListToolsParams{}); err != nil {
		t.Fatal(err)
	}
	msg := r.call("lookup_word", obj{"word": "x"})
	if !strings.Contains(msg, "quarantined") {
		t.Errorf("call to the renamed lookup_word: %q, want it quarantined", msg)
	}
	r.close()
	if slices.Contains(r.serverCalls(), "lookup_word") {
		t.Errorf("the call to the renamed tool reached the server")
	}
}

// TestPagedFirstListingNotAdded: the first listing of a new server, read
// page by page to its end, baselines every tool on first use: a tool on a
// later page is not "added" (drift.added: deny would refuse it) because
// the first page's tools got their baselines a moment before.
func TestPagedFirstListingNotAdded(t *testing.T) {
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	define := declared("define", "Define a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("name: added-deny\nversion: \"1\"\ndefaults:\n  action: allow\ndrift:\n  added: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tools := []map[string]any{lookup, define}
	r := startDriftServer(t, dir, tools, tools, 0, []string{"--page-size", "1"}, "--policy", pol)
	var n int
	for _, err := range r.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("listed %d tools", n)
	}
	for _, tool := range []string{"lookup", "define"} {
		if msg := r.call(tool, obj{"word": "x"}); msg != "" {
			t.Errorf("%s, first listed on a new server: %q", tool, msg)
		}
	}
}

// TestHeldDefinitionUnderNewName: a server whose drifted tool is held
// cannot have its definition called by listing it again under a new name
// (an added tool, monitor by default): the copy is held too.
func TestHeldDefinitionUnderNewName(t *testing.T) {
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	external := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}),
		with(with(readOnlyInternal, "externality", "external"), "declared_side_effects", []string{"read", "share"}))
	copied := with(external, "name", "lookup2")
	dir := t.TempDir()
	// The copy listed first: the hold of lookup must be found all the same.
	r := startDrift(t, dir, []map[string]any{lookup}, []map[string]any{copied, external}, 1)
	r.list()
	r.list()
	for _, tool := range []string{"lookup", "lookup2"} {
		if msg := r.call(tool, obj{"word": "x"}); !strings.Contains(msg, "quarantined") {
			t.Errorf("%s: %q, want it quarantined", tool, msg)
		}
	}
	r.close()
	if calls := r.serverCalls(); len(calls) != 0 {
		t.Errorf("server calls %v", calls)
	}
}
