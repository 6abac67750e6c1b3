package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReviewApproveQuarantineRelease is the review half of drift
// (docs/drift.md, "Review: gatehouse tools") end to end: gatehouse wrap
// holds the draft's drifted tool; gatehouse tools list and diff show it;
// an approval of a stale hash is refused; approve of the hash diff printed
// makes it the baseline, so the next run forwards its calls; a person's
// quarantine placed while a gateway runs holds the tool in that gateway
// within its poll, and a release lifts it; every review is in the ledger,
// which verifies.
func TestReviewApproveQuarantineRelease(t *testing.T) {
	dir := t.TempDir()
	base := readTool(t, "publish_artifact.baseline.json")
	cur := readTool(t, "publish_artifact.current.json")
	policy := examplePolicy(t, "drift-review.yaml")
	key := filepath.Join(dir, "ledger.skey")

	// Run 1: the server changes the tool between two listings; it is held.
	r := startDrift(t, dir, []map[string]any{echoTool, base}, []map[string]any{echoTool, cur}, 1, "--policy", policy)
	r.list()
	r.list()
	if msg := r.call("publish_artifact", map[string]any{"path": "dist/app.tgz"}); !strings.Contains(msg, "quarantined") {
		t.Fatalf("call to the drifted tool: %q", msg)
	}
	r.close()

	var listed struct {
		Tools []struct {
			ServerID   string `json:"server_id"`
			Tool       string `json:"tool"`
			Status     string `json:"status"`
			Severity   string `json:"severity"`
			Quarantine *struct {
				Rule string `json:"matched_rule"`
			} `json:"quarantine"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(gatehouseOK(t, "tools", "list", "--state", r.state, "--format", "json")), &listed); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range listed.Tools {
		if tl.Tool == "publish_artifact" {
			found = true
			if tl.ServerID != r.serverID || tl.Status != "quarantined" || tl.Severity != "critical" || tl.Quarantine == nil || tl.Quarantine.Rule != "high_risk_externality_drift" {
				t.Errorf("tools list: %+v", tl)
			}
		}
	}
	if !found {
		t.Fatalf("tools list lacks publish_artifact: %+v", listed)
	}
	diff := gatehouseOK(t, "tools", "diff", r.serverID, "publish_artifact", "--state", r.state)
	if !strings.Contains(diff, "externality_changed_to_external") || !strings.Contains(diff, "quarantined (high_risk_externality_drift)") {
		t.Errorf("tools diff:\n%s", diff)
	}
	lines := strings.Split(strings.TrimSpace(diff), "\n")
	hash, ok := strings.CutPrefix(lines[len(lines)-1], "definition_hash: ")
	if !ok {
		t.Fatalf("tools diff's last line: %q", lines[len(lines)-1])
	}

	// A stale hash (the baseline's, say) is refused with exit 1.
	stale := exec.Command(gatehouseBin, "tools", "approve", r.serverID, "publish_artifact", "--state", r.state, "--ledger-key", key,
		"--hash", "sha256:"+strings.Repeat("0", 64), "--by", "reviewer", "--reason", "stale")
	if out, err := stale.CombinedOutput(); stale.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "changed since it was shown") {
		t.Fatalf("stale approve: %v\n%s", err, out)
	}
	gatehouseOK(t, "tools", "approve", r.serverID, "publish_artifact", "--state", r.state, "--ledger-key", key,
		"--hash", hash, "--by", "reviewer", "--reason", "sharing is intended")

	// Run 2: the server lists the approved definition; the call is
	// forwarded. A person quarantines echo while the gateway runs: within
	// its poll the gateway holds it; a release lifts it.
	dir2 := filepath.Join(dir, "run2")
	r2 := startDriftState(t, dir2, r.state, key, []map[string]any{echoTool, cur}, "--policy", policy)
	if pa := r2.list()["publish_artifact"]; pa == nil || strings.Contains(pa.Description, "QUARANTINED") {
		t.Fatalf("listing after approval: %+v", pa)
	}
	if msg := r2.call("publish_artifact", map[string]any{"path": "dist/app.tgz"}); msg != "" {
		t.Fatalf("call after approval refused: %s", msg)
	}
	if msg := r2.call("echo", map[string]any{"x": 1}); msg != "" {
		t.Fatalf("echo: %s", msg)
	}
	gatehouseOK(t, "tools", "quarantine", r.serverID, "echo", "--state", r.state, "--ledger-key", key, "--by", "oncall", "--reason", "incident 42")
	held := func() bool {
		return strings.Contains(r2.call("echo", map[string]any{"x": 2}), "quarantined")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !held() {
		if time.Now().After(deadline) {
			t.Fatal("the running gateway did not hold echo after tools quarantine")
		}
		time.Sleep(200 * time.Millisecond)
	}
	gatehouseOK(t, "tools", "release", r.serverID, "echo", "--state", r.state, "--ledger-key", key, "--by", "oncall", "--reason", "incident closed")
	deadline = time.Now().Add(10 * time.Second)
	for held() {
		if time.Now().After(deadline) {
			t.Fatal("the running gateway still holds echo after tools release")
		}
		time.Sleep(200 * time.Millisecond)
	}
	r2.close()
	if calls := r2.serverCalls(); !slices.Contains(calls, "publish_artifact") {
		t.Errorf("the approved tool never reached the server: %v", calls)
	}

	// The reviews are in the ledger, which verifies.
	for kind, want := range map[string]map[string]any{
		"tool_approval":   {"tool_name": "publish_artifact", "definition_hash": hash, "approved_by": "reviewer", "reason": "sharing is intended"},
		"tool_quarantine": {"tool_name": "echo", "quarantined_by": "oncall", "reason": "incident 42"},
		"tool_release":    {"tool_name": "echo", "released_by": "oncall", "reason": "incident closed"},
	} {
		var ps []map[string]any
		for _, p := range ledgerPayloads(t, r.state, kind) {
			if p["automatic"] != true { // the gateway's own hold of run 1 is checked below
				ps = append(ps, p)
			}
		}
		if len(ps) != 1 {
			t.Errorf("%d %s entries of a person, want 1", len(ps), kind)
			continue
		}
		for k, v := range want {
			if ps[0][k] != v {
				t.Errorf("%s %s = %v, want %v", kind, k, ps[0][k], v)
			}
		}
		if ps[0]["server_id"] != r.serverID {
			t.Errorf("%s server_id = %v", kind, ps[0]["server_id"])
		}
	}
	if qs := ledgerPayloads(t, r.state, "tool_quarantine"); len(qs) != 2 || qs[0]["automatic"] != true || qs[0]["matched_rule"] != "high_risk_externality_drift" {
		t.Errorf("the gateway's own hold is not the first tool_quarantine entry: %v", qs)
	}
	out := gatehouseOK(t, "ledger", "verify", "--state", r.state, "--key", strings.TrimSuffix(key, ".skey")+".vkey")
	if !strings.HasPrefix(out, "OK ledger") {
		t.Errorf("ledger verify: %s", out)
	}
}

// startDriftState is startDrift on an existing --state and ledger key
// (the later flags win), the server listing tools (no change).
func startDriftState(t *testing.T, dir, state, key string, tools []map[string]any, wrapArgs ...string) *driftRun {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--state", state, "--ledger-key", key}, wrapArgs...)
	r := startDrift(t, dir, tools, tools, 0, args...)
	r.state = state
	return r
}

// TestBaselineRequire: with --baseline require no baseline is taken on
// first use: a call to a tool never approved is denied (baseline_required)
// and never reaches the server; once a person approves the listed
// definition, the running gateway lets the call through (within its
// poll), while the tool not approved stays refused.
func TestBaselineRequire(t *testing.T) {
	dir := t.TempDir()
	lookup := declared("lookup", "Look up a word.", schema(obj{"word": obj{"type": "string"}}), readOnlyInternal)
	r := startDrift(t, dir, []map[string]any{echoTool, lookup}, []map[string]any{echoTool, lookup}, 0, "--baseline", "require")
	r.list()
	for _, tool := range []string{"echo", "lookup"} {
		if msg := r.call(tool, obj{"word": "x"}); !strings.Contains(msg, "baseline_required") {
			t.Fatalf("%s before approval: %q", tool, msg)
		}
	}
	diff := gatehouseOK(t, "tools", "diff", r.serverID, "lookup", "--state", r.state)
	lines := strings.Split(strings.TrimSpace(diff), "\n")
	hash, ok := strings.CutPrefix(lines[len(lines)-1], "definition_hash: ")
	if !ok {
		t.Fatalf("tools diff's last line: %q", lines[len(lines)-1])
	}
	gatehouseOK(t, "tools", "approve", r.serverID, "lookup", "--state", r.state, "--ledger-key", filepath.Join(dir, "ledger.skey"),
		"--hash", hash, "--by", "reviewer", "--reason", "read-only lookup")
	deadline := time.Now().Add(10 * time.Second)
	for msg := r.call("lookup", obj{"word": "x"}); msg != ""; msg = r.call("lookup", obj{"word": "x"}) {
		if time.Now().After(deadline) {
			t.Fatalf("lookup after approval: %q", msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if msg := r.call("echo", obj{"word": "x"}); !strings.Contains(msg, "baseline_required") {
		t.Errorf("echo, never approved: %q", msg)
	}
	r.close()
	calls := r.serverCalls()
	if slices.Contains(calls, "echo") || !slices.Contains(calls, "lookup") {
		t.Errorf("server calls %v", calls)
	}
	if n := len(ledgerPayloads(t, r.state, "tool_approval")); n != 1 {
		t.Errorf("%d tool_approval entries", n)
	}
}
