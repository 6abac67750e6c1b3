package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Drift, quarantine and review end to end (docs/drift.md; evidence.md
// §7): the fake server changes its tool definitions between two
// tools/list calls (silently, --switch-after-lists) or announces it
// (notifications/tools/list_changed); gatehouse wrap compares each listing
// with the baselines kept in its --state, classifies the changes, holds
// what must be held and never forwards a call to a held tool.

// driftRun is one gatehouse wrap over the fake server with a tool set
// before and after a change.
type driftRun struct {
	t        *testing.T
	dir      string
	state    string
	log      string
	record   string
	cs       *mcp.ClientSession
	stderr   *lockedBuffer
	cancel   context.CancelFunc
	closed   bool
	serverID string
}

// startDrift starts gatehouse wrap over the fake server serving tools1,
// then tools2 (after switchAfter listings when > 0; with the
// sendlistchanged tool otherwise), with the state in dir, and connects the
// Go SDK client.
func startDrift(t *testing.T, dir string, tools1, tools2 []map[string]any, switchAfter int, wrapArgs ...string) *driftRun {
	t.Helper()
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := &driftRun{t: t, dir: dir, state: filepath.Join(dir, "state.db"), log: filepath.Join(dir, "decisions.jsonl"),
		record: filepath.Join(dir, "server-stdin.jsonl"), stderr: &lockedBuffer{}, serverID: "roam-code-local"}
	args := []string{"wrap", "--state", r.state, "--ledger-key", filepath.Join(dir, "ledger.skey"),
		"--decision-log", r.log, "--event-source", "gatehouse://e2e/drift", "--server-id", r.serverID,
		"--principal", "user_maaz", "--role", "developer_agent", "--gateway-id", "interlock-local"}
	args = append(args, wrapArgs...)
	args = append(args, "--", fakeServerBin, "--tools", write("tools1.json", tools1), "--tools2", write("tools2.json", tools2),
		"--record", r.record)
	if switchAfter > 0 {
		args = append(args, "--switch-after-lists", strconv.Itoa(switchAfter))
	}
	ensureLedgerKey(t, filepath.Join(dir, "ledger.skey"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	r.cancel = cancel
	cmd := exec.Command(gatehouseBin, args...)
	cmd.Stderr = r.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-e2e", Version: "0.0.1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connecting through gatehouse: %v\n%s", err, r.stderr)
	}
	r.cs = cs
	t.Cleanup(r.close)
	return r
}

func (r *driftRun) close() {
	if r.closed {
		return
	}
	r.closed = true
	_ = r.cs.Close()
	r.cancel()
}

// list returns the tools of one whole listing, by name.
func (r *driftRun) list() map[string]*mcp.Tool {
	r.t.Helper()
	res, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		r.t.Fatalf("tools/list: %v\n%s", err, r.stderr)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// call calls tool and returns the JSON-RPC error's message, "" when the
// call succeeded.
func (r *driftRun) call(tool string, args map[string]any) string {
	r.t.Helper()
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err.Error()
	}
	if res.IsError {
		return "isError: " + textOf(res)
	}
	return ""
}

// events returns the data of the decision log's events of type typ.
func (r *driftRun) events(typ string) []map[string]any {
	r.t.Helper()
	b, err := os.ReadFile(r.log)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			r.t.Fatalf("decision log line: %v", err)
		}
		if ev.Type == typ {
			out = append(out, ev.Data)
		}
	}
	return out
}

// serverCalls returns the tools/call names the server received.
func (r *driftRun) serverCalls() []string {
	r.t.Helper()
	b, _ := os.ReadFile(r.record)
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "tools/call" {
			out = append(out, m.Params.Name)
		}
	}
	return out
}

// ledgerPayloads returns the payloads of the ledger's entries of kind.
func ledgerPayloads(t *testing.T, state, kind string) []map[string]any {
	t.Helper()
	res := gatehouseOK(t, "ledger", "show", "--state", state, "--json")
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(res), "\n") {
		if line == "" {
			continue
		}
		var e struct {
			Kind    string         `json:"kind"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ledger show line %q: %v", line, err)
		}
		if e.Kind == kind {
			out = append(out, e.Payload)
		}
	}
	return out
}

// gatehouseOK runs a gatehouse command and returns its stdout; a failure
// ends the test.
func gatehouseOK(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(gatehouseBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("gatehouse %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// ensureLedgerKey creates the checkpoint signer key at path.
func ensureLedgerKey(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	gatehouseOK(t, "keys", "generate", "--name", strings.TrimSuffix(filepath.Base(path), ".skey"), "--out", filepath.Dir(path))
}

// readTool loads a tool definition fixture.
func readTool(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "test", "e2e", "testdata", "drift", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var echoTool = map[string]any{"name": "echo", "description": "Echo the arguments.", "inputSchema": map[string]any{"type": "object"},
	"annotations": map[string]any{"readOnlyHint": true}}

// TestDraftExampleFlow is the source document's Example Flow: a tool
// that was read-only and internal is listed again with share/export
// effects and external reach. The gateway compares it with the baseline
// it took at the first listing, finds critical drift, quarantines the
// tool (the policy's high_risk_externality_drift rule), marks it in the
// listing, answers the call itself (the server never sees it), and writes
// the draft's gateway decision receipt, field for field, referencing the
// server's tool-level receipt.
func TestDraftExampleFlow(t *testing.T) {
	dir := t.TempDir()
	base := readTool(t, "publish_artifact.baseline.json")
	cur := readTool(t, "publish_artifact.current.json")
	r := startDrift(t, dir, []map[string]any{echoTool, base}, []map[string]any{echoTool, cur}, 1,
		"--policy", filepath.Join(repoRoot, "test", "e2e", "testdata", "drift", "policy.yaml"))

	first := r.list()
	if first["publish_artifact"] == nil || strings.Contains(first["publish_artifact"].Description, "QUARANTINED") {
		t.Fatalf("first listing: %+v", first["publish_artifact"])
	}
	second := r.list()
	pa := second["publish_artifact"]
	if pa == nil || !strings.HasPrefix(pa.Description, "[QUARANTINED by Gatehouse") {
		t.Fatalf("second listing: the drifted tool is not marked: %+v", pa)
	}
	if msg := r.call("publish_artifact", map[string]any{"path": "dist/app.tgz", "destination": "https://share.example", "visibility": "public"}); !strings.Contains(msg, "quarantined") || !strings.Contains(msg, "high_risk_externality_drift") {
		t.Fatalf("call to the quarantined tool: %q", msg)
	}
	if msg := r.call("echo", map[string]any{"x": 1}); msg != "" {
		t.Fatalf("echo (unchanged) refused: %s", msg)
	}
	r.close()
	if calls := r.serverCalls(); slices.Contains(calls, "publish_artifact") {
		t.Fatalf("the quarantined tool was called on the server: %v", calls)
	}

	drifts := r.events("gatehouse.drift.v1")
	if len(drifts) != 1 {
		t.Fatalf("drift events: %v", drifts)
	}
	d := drifts[0]
	if d["tool"] != "publish_artifact" || d["severity"] != "critical" || d["action"] != "quarantine" || d["held"] != true || d["matched_rule"] != "high_risk_externality_drift" {
		t.Errorf("drift event: %v", d)
	}

	var decision map[string]any
	for _, p := range ledgerPayloads(t, r.state, "gateway_decision") {
		if p["tool_name"] == "publish_artifact" {
			decision = p
		}
	}
	if decision == nil {
		t.Fatal("no decision record for publish_artifact in the ledger")
	}
	want := map[string]any{
		"server_receipt_id": "mcp_rcpt_roam_0001",
		"gateway_id":        "interlock-local",
		"server_id":         "roam-code-local",
		"tool_name":         "publish_artifact",
		"actor_ref_id":      "user_maaz",
		"role":              "developer_agent",
		"action":            "quarantine",
		"matched_rule":      "high_risk_externality_drift",
		"reason":            "Tool added external share/export capability compared with stored baseline",
		"policy_version":    "interlock-policy-0.1",
		"shadow_mode":       false,
	}
	for k, v := range want {
		if decision[k] != v {
			t.Errorf("decision %s = %v, want %v", k, decision[k], v)
		}
	}
	asJSON := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if got, want := asJSON(decision["drift_result"]), `{"action":"quarantine","changes":["externality_changed_to_external","effect_added_share","scope_added_external_share"],"severity":"critical"}`; got != want {
		t.Errorf("drift_result %s\nwant %s", got, want)
	}
	if got, want := asJSON(decision["response_scan_result"]), `{"reason":"gateway-mediated tool call held before upstream forwarding","status":"not_run"}`; got != want {
		t.Errorf("response_scan_result %s, want %s", got, want)
	}
	as, _ := decision["argument_scan_result"].(map[string]any)
	// The draft's keys, which the gateway records sorted.
	if as["status"] != "pass" || asJSON(as["argument_keys"]) != `["destination","path","visibility"]` {
		t.Errorf("argument_scan_result %v", as)
	}
	warnings := asJSON(decision["warnings"])
	for _, w := range []string{"tool capability drift detected", "external sharing added"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("warnings %s lack %q", warnings, w)
		}
	}
	for _, k := range []string{"gateway_decision_id", "schema_version", "issued_at", "metadata_confidence", "audit_event_id"} {
		if decision[k] == nil {
			t.Errorf("decision lacks %s", k)
		}
	}
}
