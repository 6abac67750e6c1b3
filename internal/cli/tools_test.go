package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	ledgerbackends "github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	tssqlite "github.com/gatehouse-mcp/gatehouse/internal/toolstate/sqlite"
)

// runToolsCLI runs `gatehouse ARGS` with the tools, ledger and keys
// commands and returns stdout, stderr and the exit code (as Main computes
// it).
func runToolsCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCommands("", func(out, errb io.Writer) []*cobra.Command {
		return []*cobra.Command{newToolsCmd(out, errb), newLedgerCmd(out, errb), newKeysCmd(out, errb)}
	}, args...)
}

// loadTool reads a tool definition from testdata/tools.
func loadTool(t *testing.T, name string) mcp.Tool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "tools", name))
	if err != nil {
		t.Fatal(err)
	}
	tool, err := mcp.ParseTool(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// toolDef returns the canonical definition of tl and its hash.
func toolDef(t *testing.T, tl mcp.Tool) ([]byte, string) {
	t.Helper()
	def, err := drift.Canonical(tl)
	if err != nil {
		t.Fatal(err)
	}
	return def, toolstate.DefinitionHash(def)
}

// observation is what a gateway records for tl listed against base (nil:
// no baseline).
func observation(t *testing.T, server string, base *mcp.Tool, tl mcp.Tool) toolstate.Observation {
	t.Helper()
	def, hash := toolDef(t, tl)
	o := toolstate.Observation{ServerID: server, Tool: tl.Name, Hash: hash, Definition: def, By: "gw-1"}
	if base != nil {
		r := drift.Compare(*base, tl, drift.Options{})
		o.Severity = r.Severity.String()
		for _, c := range r.Changes {
			o.Changes = append(o.Changes, c.Kind)
		}
	}
	return o
}

// toolsFixture is a --state database as a gateway leaves it: a ledger
// signed with a key of its own, and the tool states of server "srv":
//
//	publish_artifact  changed (critical: the draft's example), held by
//	                  the gateway (rule drift)
//	stable            approved (listed as its baseline)
//	fresh             new (listed, no baseline)
//	gone              removed (a baseline, not listed)
type toolsFixture struct {
	state, skey, vkey string
	baseHash, curHash string
	base, cur         mcp.Tool
}

func newToolsFixture(t *testing.T) *toolsFixture {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no default key or state of the user's
	dir := t.TempDir()
	if _, errOut, code := runToolsCLI(t, "keys", "generate", "--name", "gw-test", "--out", dir); code != 0 {
		t.Fatal(errOut)
	}
	f := &toolsFixture{state: filepath.Join(dir, "state", "gatehouse.db"), skey: filepath.Join(dir, "gw-test.skey"), vkey: filepath.Join(dir, "gw-test.vkey")}
	signer, err := ledger.LoadSigner(f.skey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := ledgerbackends.Open(ctx, f.state, ledger.Options{LedgerID: "tools-test", Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledger.KindGatewayDecision, "audit_01", []byte(`{"action":"allow","server_id":"srv","tool_name":"stable"}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.base, f.cur = loadTool(t, "publish_artifact_baseline.json"), loadTool(t, "publish_artifact_current.json")
	stable := mcp.Tool{Name: "stable", Description: "Reads a file."}
	gone := mcp.Tool{Name: "gone", Description: "Was here."}
	fresh := mcp.Tool{Name: "fresh", Description: "Just added."}
	s := f.open(t)
	defer s.Close()
	for _, tl := range []mcp.Tool{f.base, stable, gone} {
		def, hash := toolDef(t, tl)
		if _, _, err := s.FirstUse(ctx, toolstate.Baseline{ServerID: "srv", Tool: tl.Name, Hash: hash, Definition: def, By: "gw-1"}); err != nil {
			t.Fatal(err)
		}
	}
	_, f.baseHash = toolDef(t, f.base)
	obs := []toolstate.Observation{observation(t, "srv", &f.base, f.cur), observation(t, "srv", &stable, stable), observation(t, "srv", nil, fresh),
		{ServerID: "srv", Tool: "gone", Removed: true, Severity: "minor", Changes: []string{drift.KindToolRemoved}, By: "gw-1"}}
	f.curHash = obs[0].Hash
	if obs[0].Severity != "critical" {
		t.Fatalf("fixture: the draft's example is %s drift", obs[0].Severity)
	}
	if err := s.Observe(ctx, obs); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(ctx, toolstate.Quarantine{ServerID: "srv", Tool: f.cur.Name, Hash: f.curHash, Automatic: true, Severity: "critical",
		Changes: []string{"externality_changed_to_external"}, By: "gw-1", Rule: "drift", Reason: "critical drift"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *toolsFixture) open(t *testing.T) toolstate.Store {
	t.Helper()
	s, err := tssqlite.Open(context.Background(), f.state)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *toolsFixture) tool(t *testing.T, server, tool string) toolstate.ToolState {
	t.Helper()
	s := f.open(t)
	defer s.Close()
	st, err := s.Tool(context.Background(), server, tool)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ledgerEntries returns the entries of kind in the ledger (their leaves
// decoded).
func (f *toolsFixture) ledgerEntries(t *testing.T, kind string) []map[string]any {
	t.Helper()
	out, errOut, code := runToolsCLI(t, "ledger", "show", "--state", f.state, "--kind", kind, "--json")
	wantCode(t, code, 0, out, errOut)
	var es []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		es = append(es, e)
	}
	return es
}

// verifyLedger runs `gatehouse ledger verify` with the fixture's key and
// wants every entry verified and signed.
func (f *toolsFixture) verifyLedger(t *testing.T) ledgerVerifyJSON {
	t.Helper()
	out, errOut, code := runToolsCLI(t, "ledger", "verify", "--state", f.state, "--key", f.vkey, "--json")
	wantCode(t, code, 0, out, errOut)
	var rep ledgerVerifyJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Latest == nil || rep.Latest.Size != rep.Size {
		t.Fatalf("ledger verify: %s (every entry should be covered by a signed checkpoint)", out)
	}
	return rep
}

// diffHash runs tools diff and returns the hash of its last line.
func diffHash(t *testing.T, f *toolsFixture, tool string) string {
	t.Helper()
	out, errOut, code := runToolsCLI(t, "tools", "diff", "srv", tool, "--state", f.state, "--color", "never")
	wantCode(t, code, 0, out, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	h, ok := strings.CutPrefix(last, "definition_hash: ")
	if !ok {
		t.Fatalf("the last line of diff is %q", last)
	}
	return h
}

var listRow = regexp.MustCompile(`\s{2,}`)

// listTable returns the rows of tools list's table, cells split.
func listTable(t *testing.T, args ...string) [][]string {
	t.Helper()
	out, errOut, code := runToolsCLI(t, append([]string{"tools", "list"}, args...)...)
	wantCode(t, code, 0, out, errOut)
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		rows = append(rows, listRow.Split(strings.TrimRight(l, " "), -1))
	}
	return rows
}

func TestToolsList(t *testing.T) {
	f := newToolsFixture(t)
	rows := listTable(t, "--state", f.state)
	want := [][]string{
		{"SERVER", "TOOL", "STATUS", "SEVERITY", "BASELINE", "APPROVED_BY", "APPROVED_AT", "HOLD", "REASON"},
		{"srv", "fresh", "new", "none", "-", "-", "-", "-", "-"},
		{"srv", "gone", "removed", "minor", "first_use", "gw-1", "*", "-", "-"},
		{"srv", "publish_artifact", "quarantined", "critical", "first_use", "gw-1", "*", "drift", "critical drift"},
		{"srv", "stable", "approved", "none", "first_use", "gw-1", "*", "-", "-"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %q, want %d", rows, len(want))
	}
	for i, w := range want {
		if len(rows[i]) != len(w) {
			t.Fatalf("row %d: %q, want %q", i, rows[i], w)
		}
		for j := range w {
			if w[j] == "*" {
				if _, err := time.Parse(time.RFC3339, rows[i][j]); err != nil {
					t.Errorf("row %d cell %d: %q is not a time", i, j, rows[i][j])
				}
				continue
			}
			if rows[i][j] != w[j] {
				t.Errorf("row %d cell %d: %q, want %q", i, j, rows[i][j], w[j])
			}
		}
	}
	// --server filters; an unknown server lists nothing and says so.
	if rows := listTable(t, "--state", f.state, "--server", "other"); len(rows) != 1 {
		t.Errorf("--server other: %q", rows)
	}
	_, errOut, _ := runToolsCLI(t, "tools", "list", "--state", f.state, "--server", "other")
	if !strings.Contains(errOut, `no tool of server "other"`) {
		t.Errorf("stderr: %s", errOut)
	}
}

func TestToolsListJSON(t *testing.T) {
	f := newToolsFixture(t)
	out, errOut, code := runToolsCLI(t, "tools", "list", "--state", f.state, "--format", "json")
	wantCode(t, code, 0, out, errOut)
	if strings.Count(out, "\n") != 1 {
		t.Errorf("--format json is not one line: %q", out)
	}
	var doc struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tools) != 4 {
		t.Fatalf("%d tools: %s", len(doc.Tools), out)
	}
	byName := map[string]map[string]json.RawMessage{}
	for _, tl := range doc.Tools {
		keys := make([]string, 0, len(tl))
		for k := range tl {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"baseline", "changes", "observed", "quarantine", "server_id", "severity", "status", "tool"}; !slices.Equal(keys, want) {
			t.Errorf("members %q, want %q", keys, want)
		}
		var name string
		json.Unmarshal(tl["tool"], &name)
		byName[name] = tl
	}
	pa := byName["publish_artifact"]
	var status, sev string
	var changes []string
	json.Unmarshal(pa["status"], &status)
	json.Unmarshal(pa["severity"], &sev)
	json.Unmarshal(pa["changes"], &changes)
	if status != "quarantined" || sev != "critical" || !slices.Contains(changes, "effect_added_share") {
		t.Errorf("publish_artifact: %s %s %q", status, sev, changes)
	}
	var b struct {
		Hash       string    `json:"definition_hash"`
		Origin     string    `json:"origin"`
		By         string    `json:"approved_by"`
		At         time.Time `json:"approved_at"`
		Definition any       `json:"definition"`
	}
	if err := json.Unmarshal(pa["baseline"], &b); err != nil || b.Hash != f.baseHash || b.Origin != "first_use" || b.By != "gw-1" || b.At.IsZero() || b.Definition != nil {
		t.Errorf("baseline %s (%v)", pa["baseline"], err)
	}
	var o struct {
		Hash string `json:"definition_hash"`
		By   string `json:"observed_by"`
	}
	if err := json.Unmarshal(pa["observed"], &o); err != nil || o.Hash != f.curHash || o.By != "gw-1" {
		t.Errorf("observed %s", pa["observed"])
	}
	var q struct {
		Automatic bool   `json:"automatic"`
		Rule      string `json:"matched_rule"`
		Reason    string `json:"reason"`
		By        string `json:"quarantined_by"`
	}
	if err := json.Unmarshal(pa["quarantine"], &q); err != nil || !q.Automatic || q.Reason != "critical drift" || q.By != "gw-1" {
		t.Errorf("quarantine %s", pa["quarantine"])
	}
	// Absent parts are null; a tool with no changes has [].
	fresh := byName["fresh"]
	if string(fresh["baseline"]) != "null" || string(fresh["quarantine"]) != "null" || string(byName["stable"]["changes"]) != "[]" {
		t.Errorf("fresh %s / stable changes %s", fresh["baseline"], byName["stable"]["changes"])
	}
}

func TestToolsDiff(t *testing.T) {
	f := newToolsFixture(t)
	out, errOut, code := runToolsCLI(t, "tools", "diff", "srv", "publish_artifact", "--state", f.state)
	wantCode(t, code, 0, out, errOut)
	for _, want := range []string{
		"tool publish_artifact\n",
		"baseline " + f.baseHash + "\n",
		"current  " + f.curHash + "\n",
		"\n-      \"externality\": \"internal\",\n",
		"\n+      \"externality\": \"external\",\n",
		"drift critical, default action quarantine",
		"externality_changed_to_external",
		"effect_added_share",
		"scope_added_external_share",
		"baseline " + f.baseHash + ": first_use by gw-1 at ",
		"observed " + f.curHash + " by gw-1 at ",
		"quarantined (drift): definition " + f.curHash + ", by gw-1 at ",
		"approve with: gatehouse tools approve srv publish_artifact --hash " + f.curHash + " --by YOUR_NAME --reason WHY\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\ndefinition_hash: "+f.curHash+"\n") {
		t.Errorf("diff does not end with the definition hash:\n%s", out)
	}
	// auto: not a terminal, no colour; always colours; never does not.
	if strings.Contains(out, "\x1b") {
		t.Errorf("--color auto coloured a pipe")
	}
	colored, _, code := runToolsCLI(t, "tools", "diff", "srv", "publish_artifact", "--state", f.state, "--color", "always")
	if code != 0 || !strings.Contains(colored, "\x1b[31m") || !strings.Contains(colored, "\x1b[32m") {
		t.Errorf("--color always: exit %d\n%q", code, colored)
	}
	plain, _, _ := runToolsCLI(t, "tools", "diff", "srv", "publish_artifact", "--state", f.state, "--color", "never")
	if plain != out {
		t.Errorf("--color never differs from auto on a pipe")
	}

	// A new tool: against its name alone, no baseline.
	out, errOut, code = runToolsCLI(t, "tools", "diff", "srv", "fresh", "--state", f.state)
	wantCode(t, code, 0, out, errOut)
	for _, want := range []string{"baseline (none: the tool has no baseline)\n", `+  "description": "Just added.",`, "tool_added", "definition_hash: sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff of a new tool lacks %q:\n%s", want, out)
		}
	}
	// The unchanged tool: identical.
	out, _, _ = runToolsCLI(t, "tools", "diff", "srv", "stable", "--state", f.state)
	if !strings.Contains(out, "definitions are identical") || !strings.Contains(out, "drift none") {
		t.Errorf("diff of an unchanged tool:\n%s", out)
	}
	// A removed tool: nothing to approve, no hash.
	out, errOut, code = runToolsCLI(t, "tools", "diff", "srv", "gone", "--state", f.state)
	wantCode(t, code, 0, out, errOut)
	if !strings.Contains(out, "nothing to approve") || strings.Contains(out, "definition_hash") {
		t.Errorf("diff of a removed tool:\n%s", out)
	}
	// Unknown tool or server: exit 1.
	for _, args := range [][]string{{"srv", "nope"}, {"other", "publish_artifact"}} {
		out, errOut, code = runToolsCLI(t, append([]string{"tools", "diff", "--state", f.state}, args...)...)
		wantCode(t, code, 1, out, errOut)
		if !strings.Contains(errOut, "no state for tool") {
			t.Errorf("stderr: %s", errOut)
		}
	}
}

func TestToolsApprove(t *testing.T) {
	f := newToolsFixture(t)
	hash := diffHash(t, f, "publish_artifact")
	if hash != f.curHash {
		t.Fatalf("diff printed %s, want the listed %s", hash, f.curHash)
	}
	out, errOut, code := runToolsCLI(t, "tools", "approve", "srv", "publish_artifact", "--state", f.state, "--ledger-key", f.skey,
		"--hash", hash, "--by", "alice", "--reason", "reviewed: sharing is intended")
	wantCode(t, code, 0, out, errOut)
	if !strings.Contains(out, "approved tool publish_artifact of server srv: baseline "+hash+" (was "+f.baseHash+", first_use)") ||
		!strings.Contains(out, "released the quarantine placed by gw-1 (drift)") {
		t.Errorf("stdout: %s", out)
	}
	st := f.tool(t, "srv", "publish_artifact")
	if st.Status() != toolstate.StatusApproved || st.Baseline.Hash != hash || st.Baseline.Origin != toolstate.OriginApproval ||
		st.Baseline.By != "alice" || st.Baseline.Reason != "reviewed: sharing is intended" || st.Quarantine != nil {
		t.Errorf("after approve: %s %+v %+v", st.Status(), st.Baseline, st.Quarantine)
	}
	rows := listTable(t, "--state", f.state, "--server", "srv")
	if r := rows[3]; r[1] != "publish_artifact" || r[2] != "approved" || r[4] != "approval" || r[5] != "alice" || r[7] != "-" {
		t.Errorf("list after approve: %q", r)
	}
	es := f.ledgerEntries(t, ledger.KindToolApproval)
	if len(es) != 1 {
		t.Fatalf("%d tool_approval entries", len(es))
	}
	if id, _ := es[0]["record_id"].(string); !strings.HasPrefix(id, "audit_") {
		t.Errorf("record_id %q", id)
	}
	p, _ := es[0]["payload"].(map[string]any)
	for k, v := range map[string]any{"server_id": "srv", "tool_name": "publish_artifact", "definition_hash": hash,
		"previous_definition_hash": f.baseHash, "previous_origin": "first_use", "severity": "critical",
		"approved_by": "alice", "reason": "reviewed: sharing is intended"} {
		if p[k] != v {
			t.Errorf("payload %s = %v, want %v", k, p[k], v)
		}
	}
	if at, _ := p["approved_at"].(string); at != toolstate.LedgerTime(st.Baseline.At) {
		t.Errorf("approved_at %q, want %q", at, toolstate.LedgerTime(st.Baseline.At))
	}
	if rel, _ := p["released_quarantine"].(map[string]any); rel["automatic"] != true || rel["quarantined_by"] != "gw-1" || rel["matched_rule"] != "drift" {
		t.Errorf("released_quarantine %v", p["released_quarantine"])
	}
	if ch, _ := p["changes"].([]any); !slices.Contains(ch, any("externality_changed_to_external")) {
		t.Errorf("changes %v", p["changes"])
	}
	rep := f.verifyLedger(t)
	if rep.Size != 2 {
		t.Errorf("ledger size %d, want 2", rep.Size)
	}
	// ledger show's table names the server and the tool.
	out, _, _ = runToolsCLI(t, "ledger", "show", "--state", f.state, "--kind", "tool_approval", "--tool", "publish_artifact", "--server", "srv")
	if !strings.Contains(out, "tool_approval") || !strings.Contains(out, "publish_artifact") {
		t.Errorf("ledger show:\n%s", out)
	}
	// Approving a first-use baseline as it is: allowed (the tool becomes
	// approved by a person), recorded.
	h := diffHash(t, f, "stable")
	_, errOut, code = runToolsCLI(t, "tools", "approve", "srv", "stable", "--state", f.state, "--ledger-key", f.skey, "--hash", h, "--by", "bob", "--reason", "ok")
	wantCode(t, code, 0, "", errOut)
	if b := f.tool(t, "srv", "stable").Baseline; b.Origin != toolstate.OriginApproval || b.By != "bob" {
		t.Errorf("stable: %+v", b)
	}
	f.verifyLedger(t)
}

// TestToolsApproveStale: an approval of a definition that changed again
// after the diff was shown is refused, and nothing changes: not the
// baseline, not the hold, not the ledger.
func TestToolsApproveStale(t *testing.T) {
	f := newToolsFixture(t)
	shownHash := diffHash(t, f, "publish_artifact")
	// The server lists yet another definition.
	again := f.cur
	again.Description = "Publish a build artifact anywhere."
	s := f.open(t)
	if err := s.Observe(context.Background(), []toolstate.Observation{observation(t, "srv", &f.base, again)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, nowHash := toolDef(t, again)
	before := f.tool(t, "srv", "publish_artifact")
	sizeBefore := f.verifyLedger(t).Size

	out, errOut, code := runToolsCLI(t, "tools", "approve", "srv", "publish_artifact", "--state", f.state, "--ledger-key", f.skey,
		"--hash", shownHash, "--by", "alice", "--reason", "looked fine")
	wantCode(t, code, 1, out, errOut)
	for _, want := range []string{"refused, nothing changed", "changed since it was shown", "given " + shownHash, "listed " + nowHash, "or the hash is mistyped", `run "gatehouse tools diff srv publish_artifact" again`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	after := f.tool(t, "srv", "publish_artifact")
	if after.Baseline.Hash != before.Baseline.Hash || after.Baseline.Origin != toolstate.OriginFirstUse || after.Quarantine == nil {
		t.Errorf("a refused approval changed the state: %+v %+v", after.Baseline, after.Quarantine)
	}
	if rep := f.verifyLedger(t); rep.Size != sizeBefore {
		t.Errorf("a refused approval wrote to the ledger: %d entries, was %d", rep.Size, sizeBefore)
	}
	// The hash diff shows now is accepted.
	if h := diffHash(t, f, "publish_artifact"); h != nowHash {
		t.Fatalf("diff shows %s, want %s", h, nowHash)
	}
	_, errOut, code = runToolsCLI(t, "tools", "approve", "srv", "publish_artifact", "--state", f.state, "--ledger-key", f.skey,
		"--hash", nowHash, "--by", "alice", "--reason", "looked again")
	wantCode(t, code, 0, "", errOut)
	// Nothing to approve: a removed tool, a tool never seen.
	_, errOut, code = runToolsCLI(t, "tools", "approve", "srv", "gone", "--state", f.state, "--ledger-key", f.skey, "--hash", nowHash, "--by", "a", "--reason", "r")
	wantCode(t, code, 1, "", errOut)
	_, errOut, code = runToolsCLI(t, "tools", "approve", "srv", "nope", "--state", f.state, "--ledger-key", f.skey, "--hash", nowHash, "--by", "a", "--reason", "r")
	wantCode(t, code, 1, "", errOut)
}

func TestToolsQuarantineRelease(t *testing.T) {
	f := newToolsFixture(t)
	_, stableHash := toolDef(t, mcp.Tool{Name: "stable", Description: "Reads a file."})
	out, errOut, code := runToolsCLI(t, "tools", "quarantine", "srv", "stable", "--state", f.state, "--ledger-key", f.skey, "--by", "carol", "--reason", "incident 42")
	wantCode(t, code, 0, out, errOut)
	if !strings.Contains(out, "quarantined tool stable of server srv (listed definition "+stableHash+")") {
		t.Errorf("stdout: %s", out)
	}
	q := f.tool(t, "srv", "stable").Quarantine
	if q == nil || q.Automatic || q.Hash != stableHash || q.By != "carol" || q.Reason != "incident 42" || q.Rule != "" {
		t.Fatalf("hold %+v", q)
	}
	if r := listTable(t, "--state", f.state)[4]; r[1] != "stable" || r[2] != "quarantined" || r[7] != "manual" || r[8] != "incident 42" {
		t.Errorf("list: %q", r)
	}
	// An approval does not lift a hold a person placed.
	h := diffHash(t, f, "stable")
	_, errOut, code = runToolsCLI(t, "tools", "approve", "srv", "stable", "--state", f.state, "--ledger-key", f.skey, "--hash", h, "--by", "dan", "--reason", "fine")
	wantCode(t, code, 0, "", errOut)
	if !strings.Contains(errOut, "stays quarantined") || f.tool(t, "srv", "stable").Quarantine == nil {
		t.Errorf("approve lifted a person's hold: %s", errOut)
	}
	// A tool never listed is held by name, with a warning.
	out, errOut, code = runToolsCLI(t, "tools", "quarantine", "srv", "later", "--state", f.state, "--ledger-key", f.skey, "--by", "carol", "--reason", "not before review")
	wantCode(t, code, 0, out, errOut)
	if !strings.Contains(out, "any definition") || !strings.Contains(errOut, "held nothing about tool") {
		t.Errorf("quarantine of an unknown tool: %s / %s", out, errOut)
	}
	if q := f.tool(t, "srv", "later").Quarantine; q == nil || q.Hash != "" {
		t.Errorf("hold by name: %+v", q)
	}
	// Its diff has nothing to show: exit 1, the hold named.
	out, errOut, code = runToolsCLI(t, "tools", "diff", "srv", "later", "--state", f.state)
	wantCode(t, code, 1, out, errOut)
	if !strings.Contains(out, "quarantined (manual): any definition, by carol") || !strings.Contains(errOut, "no definition listed yet") {
		t.Errorf("diff of a tool held by name: %s / %s", out, errOut)
	}
	// Release.
	out, errOut, code = runToolsCLI(t, "tools", "release", "srv", "stable", "--state", f.state, "--ledger-key", f.skey, "--by", "carol", "--reason", "incident closed")
	wantCode(t, code, 0, out, errOut)
	if !strings.Contains(out, "released tool stable of server srv (the quarantine placed by carol, manual)") {
		t.Errorf("stdout: %s", out)
	}
	if st := f.tool(t, "srv", "stable"); st.Quarantine != nil || st.Status() != toolstate.StatusApproved {
		t.Errorf("after release: %s %+v", st.Status(), st.Quarantine)
	}
	// Again: not quarantined, exit 1, nothing written.
	size := f.verifyLedger(t).Size
	out, errOut, code = runToolsCLI(t, "tools", "release", "srv", "stable", "--state", f.state, "--ledger-key", f.skey, "--by", "carol", "--reason", "again")
	wantCode(t, code, 1, out, errOut)
	if !strings.Contains(errOut, `tool "stable" of server "srv" is not quarantined`) {
		t.Errorf("stderr: %s", errOut)
	}
	if f.verifyLedger(t).Size != size {
		t.Error("a refused release wrote to the ledger")
	}
	// Releasing the gateway's hold on a drifted tool warns that it may
	// come back.
	_, errOut, code = runToolsCLI(t, "tools", "release", "srv", "publish_artifact", "--state", f.state, "--ledger-key", f.skey, "--by", "carol", "--reason", "checking")
	wantCode(t, code, 0, "", errOut)
	if !strings.Contains(errOut, "still differs from its baseline (drift critical)") {
		t.Errorf("stderr: %s", errOut)
	}

	qs := f.ledgerEntries(t, ledger.KindToolQuarantine)
	rs := f.ledgerEntries(t, ledger.KindToolRelease)
	if len(qs) != 2 || len(rs) != 2 {
		t.Fatalf("%d tool_quarantine and %d tool_release entries, want 2 and 2", len(qs), len(rs))
	}
	qp, _ := qs[0]["payload"].(map[string]any)
	for k, v := range map[string]any{"server_id": "srv", "tool_name": "stable", "definition_hash": stableHash, "quarantined_by": "carol", "reason": "incident 42"} {
		if qp[k] != v {
			t.Errorf("tool_quarantine payload %s = %v, want %v", k, qp[k], v)
		}
	}
	if _, ok := qs[1]["payload"].(map[string]any)["definition_hash"]; ok {
		t.Errorf("a hold by name has a definition_hash: %v", qs[1]["payload"])
	}
	rp, _ := rs[0]["payload"].(map[string]any)
	for k, v := range map[string]any{"server_id": "srv", "tool_name": "stable", "released_by": "carol", "reason": "incident closed"} {
		if rp[k] != v {
			t.Errorf("tool_release payload %s = %v, want %v", k, rp[k], v)
		}
	}
	if rel, _ := rp["released_quarantine"].(map[string]any); rel["quarantined_by"] != "carol" || rel["automatic"] != false || rel["reason"] != "incident 42" {
		t.Errorf("released_quarantine %v", rp["released_quarantine"])
	}
	if rel, _ := rs[1]["payload"].(map[string]any)["released_quarantine"].(map[string]any); rel["automatic"] != true || rel["matched_rule"] != "drift" {
		t.Errorf("released automatic hold %v", rel)
	}
	f.verifyLedger(t)
}

// TestToolsRefusals: usage errors (exit 64) and unusable --state values
// (exit 2) change nothing.
func TestToolsRefusals(t *testing.T) {
	f := newToolsFixture(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	approve := []string{"tools", "approve", "srv", "publish_artifact", "--state", f.state, "--ledger-key", f.skey, "--hash", f.curHash}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"no reason", nil, append(approve, "--by", "a"), 64, "--reason TEXT is required"},
		{"blank reason", nil, append(approve, "--by", "a", "--reason", "  "), 64, "--reason TEXT is required"},
		{"the hint's --by pasted", nil, append(approve, "--by", "YOUR_NAME", "--reason", "r"), 64, "--by YOUR_NAME is the hint's placeholder"},
		{"the hint's --reason pasted", nil, append(approve, "--by", "a", "--reason", "WHY"), 64, "--reason WHY is the hint's placeholder"},
		{"no by, no USER", map[string]string{"USER": ""}, append(approve, "--reason", "r"), 64, "--by NAME is required"},
		{"no hash", nil, []string{"tools", "approve", "srv", "publish_artifact", "--state", f.state, "--by", "a", "--reason", "r"}, 64, "--hash is required"},
		{"bad hash", nil, []string{"tools", "approve", "srv", "publish_artifact", "--state", f.state, "--hash", "abc", "--by", "a", "--reason", "r"}, 64, "want sha256:"},
		{"one argument", nil, []string{"tools", "diff", "srv", "--state", f.state}, 64, "want SERVER TOOL"},
		{"empty tool", nil, []string{"tools", "quarantine", "srv", "", "--state", f.state, "--by", "a", "--reason", "r"}, 64, "must not be empty"},
		{"bad format", nil, []string{"tools", "list", "--state", f.state, "--format", "yaml"}, 64, "want table or json"},
		{"bad color", nil, []string{"tools", "diff", "srv", "stable", "--state", f.state, "--color", "sometimes"}, 64, "want auto, always or never"},
		{"unknown flag", nil, []string{"tools", "list", "--state", f.state, "--nope"}, 64, "unknown flag"},
		{"unknown subcommand", nil, []string{"tools", "aprove"}, 64, "unknown command"},
		{"unreadable ledger key", nil, []string{"tools", "approve", "srv", "publish_artifact", "--state", f.state, "--ledger-key", filepath.Join(dir, "none.skey"), "--hash", f.curHash, "--by", "a", "--reason", "r"}, 2, "--ledger-key"},
		{"missing state", nil, []string{"tools", "quarantine", "srv", "t", "--state", missing, "--by", "a", "--reason", "r"}, 2, "no tool state at " + missing},
		{"missing state list", nil, []string{"tools", "list", "--state", missing}, 2, "no tool state at"},
		{"other URL", nil, []string{"tools", "list", "--state", "sqlite:///x.db"}, 2, "--state sqlite:"},
		{"postgres", nil, []string{"tools", "list", "--state", "postgres://u:secret@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, 2, "--state postgres://u:xxxxx@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := f.tool(t, "srv", "publish_artifact")
			t.Chdir(dir)
			out, errOut, code := runToolsCLI(t, tc.args...)
			wantCode(t, code, tc.code, out, errOut)
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr lacks %q: %s", tc.want, errOut)
			}
			if strings.Contains(errOut, "secret") {
				t.Errorf("stderr shows the password: %s", errOut)
			}
			if after := f.tool(t, "srv", "publish_artifact"); after.Baseline.Hash != before.Baseline.Hash || (after.Quarantine == nil) != (before.Quarantine == nil) {
				t.Errorf("state changed")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("created %v", ents)
			}
		})
	}
	if rep := f.verifyLedger(t); rep.Size != 1 {
		t.Errorf("refusals wrote to the ledger: %d entries", rep.Size)
	}
	// --by defaults to $USER.
	t.Setenv("USER", "erin")
	_, errOut, code := runToolsCLI(t, "tools", "quarantine", "srv", "fresh", "--state", f.state, "--ledger-key", f.skey, "--reason", "r")
	wantCode(t, code, 0, "", errOut)
	if q := f.tool(t, "srv", "fresh").Quarantine; q == nil || q.By != "erin" {
		t.Errorf("--by from $USER: %+v", q)
	}
}

// TestToolsDefaultStateAndKey: without --state and --ledger-key the
// commands use wrap's defaults: the ledger under $XDG_STATE_HOME and the
// ledger.skey beside it (created on first use, as wrap creates it).
func TestToolsDefaultStateAndKey(t *testing.T) {
	f := newToolsFixture(t)
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	_, errOut, code := runToolsCLI(t, "tools", "list")
	wantCode(t, code, 2, "", errOut)
	def := filepath.Join(xdg, "gatehouse", "ledger.db")
	if !strings.Contains(errOut, def) {
		t.Fatalf("default state not used: %s", errOut)
	}
	os.MkdirAll(filepath.Dir(def), 0o700)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(f.state + suffix); err == nil {
			os.WriteFile(def+suffix, b, 0o600)
		}
	}
	_, errOut, code = runToolsCLI(t, "tools", "quarantine", "srv", "stable", "--by", "a", "--reason", "r")
	wantCode(t, code, 0, "", errOut)
	vkey := filepath.Join(xdg, "gatehouse", "ledger.vkey")
	if _, err := os.Stat(vkey); err != nil {
		t.Fatalf("no default key created: %v (%s)", err, errOut)
	}
	// The ledger now holds checkpoints by two keys: both verify it.
	out, errOut, code := runToolsCLI(t, "ledger", "verify", "--key", f.vkey, "--key", vkey)
	wantCode(t, code, 0, out, errOut)
}

// TestToolsTerminalControls: a tool name and a reason holding terminal
// controls are shown escaped, never obeyed, in every output, and the JSON
// still carries them exactly.
func TestToolsTerminalControls(t *testing.T) {
	f := newToolsFixture(t)
	evil := "evil\x1b]0;pwned\x07\x1b[2J\u202etool"
	tl := mcp.Tool{Name: evil, Description: "Says \x1b[31mred\x1b[0m."}
	s := f.open(t)
	ctx := context.Background()
	def, hash := toolDef(t, tl)
	if _, _, err := s.FirstUse(ctx, toolstate.Baseline{ServerID: "srv", Tool: evil, Hash: hash, Definition: def, By: "gw-1"}); err != nil {
		t.Fatal(err)
	}
	changed := tl
	changed.Description = "Says \x1b[32mgreen\x1b[0m."
	if err := s.Observe(ctx, []toolstate.Observation{observation(t, "srv", &tl, changed)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, errOut, code := runToolsCLI(t, "tools", "quarantine", "srv", evil, "--state", f.state, "--ledger-key", f.skey, "--by", "a", "--reason", "bad \x1b[5mblink")
	wantCode(t, code, 0, "", errOut)
	raw := func(name, s string) {
		t.Helper()
		if strings.ContainsAny(s, "\x1b\x07\u202e") {
			t.Errorf("%s shows a raw terminal control: %q", name, s)
		}
	}
	out, errOut, code := runToolsCLI(t, "tools", "list", "--state", f.state)
	wantCode(t, code, 0, out, errOut)
	raw("list", out+errOut)
	if !strings.Contains(out, `evil\u001b]0;pwned\u0007\u001b[…`) || !strings.Contains(out, `bad \u001b[5mblink`) {
		t.Errorf("list does not show the name and reason escaped:\n%s", out)
	}
	out, errOut, code = runToolsCLI(t, "tools", "diff", "srv", evil, "--state", f.state, "--color", "never")
	wantCode(t, code, 0, out, errOut)
	raw("diff", out+errOut)
	if !strings.Contains(out, `approve with: gatehouse tools approve srv 'evil\u001b]0;pwned\u0007\u001b[2J\u202etool'`) {
		t.Errorf("diff's approve line:\n%s", out)
	}
	out, errOut, code = runToolsCLI(t, "tools", "list", "--state", f.state, "--format", "json")
	wantCode(t, code, 0, out, errOut)
	if strings.ContainsAny(out, "\x1b\x07") { // printJSON escapes controls (format characters stay: the JSON is the exact value)
		t.Errorf("list --format json shows a raw terminal control: %q", out)
	}
	var doc struct {
		Tools []struct {
			Tool       string `json:"tool"`
			Quarantine *struct {
				Reason string `json:"reason"`
			} `json:"quarantine"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range doc.Tools {
		if tl.Tool == evil {
			found = tl.Quarantine != nil && tl.Quarantine.Reason == "bad \x1b[5mblink"
		}
	}
	if !found {
		t.Errorf("the JSON does not carry the name and reason exactly: %s", out)
	}
	// Errors naming it are escaped too.
	_, errOut, code = runToolsCLI(t, "tools", "release", "other", evil, "--state", f.state, "--by", "a", "--reason", "r")
	wantCode(t, code, 1, "", errOut)
	raw("release error", errOut)
	f.verifyLedger(t)
}

// TestToolsTable: the HOLD cell names the rule that placed a hold, "manual"
// for a person's; long values are cut, controls escaped.
func TestToolsTable(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b := &toolstate.Baseline{Hash: "sha256:x", Origin: toolstate.OriginApproval, By: "alice", At: at}
	states := []toolstate.ToolState{
		{ServerID: "srv", Tool: "a", Baseline: b, Observed: &toolstate.Observation{Hash: "sha256:y", Severity: "critical"},
			Quarantine: &toolstate.Quarantine{Automatic: true, Rule: "drift", Reason: "critical drift"}},
		{ServerID: "srv", Tool: "b", Baseline: b, Observed: &toolstate.Observation{Hash: "sha256:x", Severity: "none"},
			Quarantine: &toolstate.Quarantine{Automatic: true, Rule: "block-external-share", Reason: "rule said so"}},
		{ServerID: "srv", Tool: "c", Quarantine: &toolstate.Quarantine{By: "carol", Reason: "incident\n42"}},
		{ServerID: "srv", Tool: strings.Repeat("x", 40), Baseline: b, Observed: &toolstate.Observation{Hash: "sha256:z", Severity: "minor"}},
	}
	var buf bytes.Buffer
	if err := printToolsTable(&buf, states); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		rows = append(rows, listRow.Split(strings.TrimRight(l, " "), -1))
	}
	want := [][]string{
		{"SERVER", "TOOL", "STATUS", "SEVERITY", "BASELINE", "APPROVED_BY", "APPROVED_AT", "HOLD", "REASON"},
		{"srv", "a", "quarantined", "critical", "approval", "alice", "2026-12-01T10:00:00Z", "drift", "critical drift"},
		{"srv", "b", "quarantined", "none", "approval", "alice", "2026-12-01T10:00:00Z", "block-external-share", "rule said so"},
		{"srv", "c", "quarantined", "none", "-", "-", "-", "manual", `incident\u000a42`},
		{"srv", strings.Repeat("x", 31) + "…", "changed", "minor", "approval", "alice", "2026-12-01T10:00:00Z", "-", "-"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("table\n%q\nwant\n%q", rows, want)
	}
}
