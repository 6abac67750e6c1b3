package evidencee2e

import (
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"path/filepath"
	"strings"
	"testing"
)

// The conflict warnings of docs/evidence.md §2 ("Conflicts").
var conflictWarnings = []string{
	"receipt server_id differs from the call",
	"receipt tool_name differs from the call",
	"receipt tool_call_id differs from the call",
	"receipt input_hash differs from the gateway's hash",
	"receipt output_hash differs from the gateway's hash",
	"receipt argument_keys differ from the call's arguments",
}

// requireTable is docs/evidence.md's receipts.require table: requirement ->
// verification status -> action of the outcome.
var requireTable = map[string]map[string]string{
	"none":     {"ok": "allow", "unsigned": "allow", "unknown": "allow", "tampered": "allow", "empty": "allow"},
	"present":  {"ok": "allow", "unsigned": "monitor", "unknown": "monitor", "tampered": "deny", "empty": "deny"},
	"verified": {"ok": "allow", "unsigned": "deny", "unknown": "deny", "tampered": "deny", "empty": "deny"},
}

// statusCase is one tool of the receipt server and what the gateway must
// make of its receipt.
type statusCase struct {
	tool       string
	status     string
	conflicts  []string // the warnings the receipt must raise, exactly
	confidence float64  // the outcome's metadata_confidence (evidence.md §3)
}

// The receipt server declares all five intent fields in tools/list (meta,
// 0.85 each) and in its receipts (verified 1.0, unsigned 0.9 each).
var (
	keyedCases = []statusCase{
		{tool: "signed_ok", status: "ok", confidence: 1},
		{tool: "unsigned", status: "unsigned", confidence: 0.9},
		{tool: "bad_signature", status: "tampered", confidence: 0.85},
		// server_id, tool_name and input_hash disagree with the call. A
		// receipt with conflicts is not a normalization source, and each
		// conflict lowers the confidence by 0.1: 0.85 - 0.3.
		{tool: "conflicting", status: "unsigned", confidence: 0.55, conflicts: []string{conflictWarnings[0], conflictWarnings[1], conflictWarnings[3]}},
		{tool: "legacy_interlock", status: "ok", confidence: 1},
		{tool: "none", status: "empty", confidence: 0.85},
	}
	// A server id with no key configured: its signatures are unknown.
	unkeyedCases = []statusCase{
		{tool: "signed_ok", status: "unknown", confidence: 0.9},
		{tool: "legacy_interlock", status: "unknown", confidence: 0.9},
		{tool: "unsigned", status: "unsigned", confidence: 0.9},
	}
	hmacCases = []statusCase{
		{tool: "signed_ok", status: "ok", confidence: 1},
		{tool: "bad_signature", status: "tampered", confidence: 0.85},
	}
)

// TestVerificationStatuses runs every receipt server tool through gatehouse
// with each --require-receipts, and checks the client's answer and the
// outcome recorded in the ledger: server_receipt_status, action, matched
// rule, conflicts as warnings with a lower metadata_confidence, the
// synthesized receipt of a server that sent none.
func TestVerificationStatuses(t *testing.T) {
	t.Parallel()
	keys := writeKeysFile(t, t.TempDir())
	servers := []struct {
		name   string
		id     string
		server []string
		cases  []statusCase
	}{
		{"ed25519", keyedID, receiptServer(keyedID), keyedCases},
		{"no key for the server id", "rs-nokey", receiptServer("rs-nokey"), unkeyedCases},
		{"hmac", hmacID, []string{receiptBin, "--server-id", hmacID, "--hmac-secret", hmacSecret}, hmacCases},
	}
	for _, req := range []string{"none", "present", "verified"} {
		for _, srv := range servers {
			t.Run(req+"/"+srv.name, func(t *testing.T) {
				t.Parallel()
				state := filepath.Join(t.TempDir(), "ledger.db")
				gatewayID := "gw-status-" + req
				g := startGW(t, nil, []string{
					"--state", state, "--receipt-keys", keys, "--require-receipts", req,
					"--server-id", srv.id, "--gateway-id", gatewayID,
				}, srv.server)
				g.handshake()
				for i, c := range srv.cases {
					m := g.call(fmt.Sprintf("c%d", i), c.tool, `{"q":"x"}`)
					if requireTable[req][c.status] == "deny" {
						expectError(t, m, -32082, c.tool)
						if !strings.Contains(m.Error.Message, "withheld") {
							t.Errorf("%s: -32082 without a reason: %s", c.tool, m.Raw)
						}
					} else {
						expectResult(t, m, c.tool)
					}
				}
				if code := g.finish(); code != 0 {
					t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
				}
				verifyLedger(t, state)
				recs := calls(t, showJSON(t, state))
				var monitored []string
				for _, c := range srv.cases {
					checkStatusCase(t, recs[c.tool], c, req, srv.id, gatewayID)
					if requireTable[req][c.status] == "monitor" {
						monitored = append(monitored, c.tool)
					}
				}
				// `ledger show --action monitor` finds exactly the
				// monitored outcomes.
				var got []string
				for _, e := range showJSON(t, state, "--action", "monitor", "--kind", "gateway_outcome") {
					got = append(got, e.decision(t).ToolName)
				}
				if strings.Join(got, ",") != strings.Join(monitored, ",") {
					t.Errorf("ledger show --action monitor: tools %v, want %v", got, monitored)
				}
			})
		}
	}
}

func checkStatusCase(t *testing.T, r *callRecord, c statusCase, req, serverID, gatewayID string) {
	t.Helper()
	if r == nil {
		t.Errorf("%s: no gateway decision in the ledger", c.tool)
		return
	}
	if r.outcome == nil {
		t.Errorf("%s: no outcome gateway decision in the ledger", c.tool)
		return
	}
	dec, out := r.decisionRcpt, r.outcomeRcp
	// Before forwarding: the policy's allow, no receipt yet.
	if dec.Action != "allow" || dec.ServerReceiptStatus != "" || dec.ServerReceiptID != "" {
		t.Errorf("%s: decision-phase receipt action %q status %q receipt %q; want allow and no receipt",
			c.tool, dec.Action, dec.ServerReceiptStatus, dec.ServerReceiptID)
	}
	if out.ServerReceiptStatus != c.status {
		t.Errorf("%s: server_receipt_status %q, want %q", c.tool, out.ServerReceiptStatus, c.status)
	}
	wantAction := requireTable[req][c.status]
	if out.Action != wantAction {
		t.Errorf("%s with receipts.require %s: outcome action %q, want %q", c.tool, req, out.Action, wantAction)
	}
	if wantAction == "deny" && out.MatchedRule != "receipts.require" {
		t.Errorf("%s: withheld outcome names rule %q, want receipts.require", c.tool, out.MatchedRule)
	}
	if out.GatewayID != gatewayID || dec.GatewayID != gatewayID {
		t.Errorf("%s: gateway_id %q/%q, want %q", c.tool, dec.GatewayID, out.GatewayID, gatewayID)
	}
	if out.ServerID != serverID || out.ToolName != c.tool {
		t.Errorf("%s: outcome for server %q tool %q", c.tool, out.ServerID, out.ToolName)
	}
	// Conflicts: exactly the expected warnings.
	for _, w := range conflictWarnings {
		if got, want := contains(out.Warnings, w), contains(c.conflicts, w); got != want {
			t.Errorf("%s: warning %q present %v, want %v (warnings %q)", c.tool, w, got, want, out.Warnings)
		}
	}
	if out.MetadataConfidence == nil {
		t.Errorf("%s: no metadata_confidence", c.tool)
	} else if *out.MetadataConfidence != c.confidence {
		t.Errorf("%s: metadata_confidence %v, want %v (warnings %q)", c.tool, *out.MetadataConfidence, c.confidence, out.Warnings)
	}
	if req == "none" && c.status != "ok" && !contains(out.Warnings, "server receipt status: "+c.status) {
		t.Errorf("%s: receipts.require none: no status warning in %q", c.tool, out.Warnings)
	}
	// The server receipt, carried by the outcome that references it.
	if r.receipt == nil {
		t.Errorf("%s: no server_receipt entry for %q", c.tool, out.ServerReceiptID)
		return
	}
	sr := r.receipt.receipt(t)
	if c.status == "empty" {
		if !strings.HasPrefix(sr.ReceiptID, "mcp_rcpt_gw_") || sr.IssuedBy != "gateway" || sr.VerificationStatus != "empty" {
			t.Errorf("%s: synthesized receipt %s", c.tool, r.receipt.Payload)
		}
		if sr.ServerID != serverID || sr.ToolName != c.tool {
			t.Errorf("%s: synthesized receipt for %q/%q", c.tool, sr.ServerID, sr.ToolName)
		}
	} else if !strings.HasPrefix(sr.ReceiptID, "mcp_rcpt_rs_") || sr.IssuedBy != "" {
		t.Errorf("%s: stored server receipt %s", c.tool, r.receipt.Payload)
	}
	if !(r.decision.Seq < r.outcome.Seq) {
		t.Errorf("%s: seqs decision %d, outcome %d: not in lineage order", c.tool, r.decision.Seq, r.outcome.Seq)
	}
}

// TestPolicyReceiptsRequire: receipts.require from the policy, per server
// (receipts.servers) with receipts.require as the fallback, and
// --require-receipts overriding both.
func TestPolicyReceiptsRequire(t *testing.T) {
	t.Parallel()
	keys := writeKeysFile(t, t.TempDir())
	pol := harness.Testdata("receipts-require.yaml")
	runs := []struct {
		name     string
		serverID string
		extra    []string
		// tool -> outcome action; "deny" means -32082 to the client.
		want map[string]string
	}{
		{"servers entry present", keyedID, nil, map[string]string{"signed_ok": "allow", "unsigned": "monitor", "none": "deny", "bad_signature": "deny"}},
		{"require verified", "rs-other", nil, map[string]string{"signed_ok": "deny", "unsigned": "deny", "none": "deny"}},
		{"flag overrides the policy", keyedID, []string{"--require-receipts", "none"}, map[string]string{"unsigned": "allow", "none": "allow", "bad_signature": "allow"}},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "ledger.db")
			flags := append([]string{"--state", state, "--policy", pol, "--receipt-keys", keys, "--server-id", run.serverID}, run.extra...)
			g := startGW(t, nil, flags, receiptServer(run.serverID))
			g.handshake()
			i := 0
			for tool, action := range run.want {
				i++
				m := g.call(fmt.Sprintf("p%d", i), tool, `{}`)
				if action == "deny" {
					expectError(t, m, -32082, tool)
				} else {
					expectResult(t, m, tool)
				}
			}
			if code := g.finish(); code != 0 {
				t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
			}
			recs := calls(t, showJSON(t, state))
			for tool, action := range run.want {
				r := recs[tool]
				if r == nil || r.outcome == nil {
					t.Errorf("%s: no outcome", tool)
					continue
				}
				if r.outcomeRcp.Action != action {
					t.Errorf("%s: outcome action %q, want %q", tool, r.outcomeRcp.Action, action)
				}
				if r.outcomeRcp.PolicyVersion != "e2e-receipts-1" {
					t.Errorf("%s: policy_version %q", tool, r.outcomeRcp.PolicyVersion)
				}
			}
		})
	}
}
