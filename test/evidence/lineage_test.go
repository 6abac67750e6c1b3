package evidencee2e

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestLineageBothWays walks server_receipt_id -> gateway_decision_id ->
// audit_event_id with `gatehouse ledger show --lineage` from each end (and
// the middle) and expects the same linked set every time: the call's
// decision record and its outcome record (evidence.md §9.1: two entries,
// each with its own gateway_decision_id and named by its audit_event_id),
// and nothing of the other calls. Walking back from the outcome ends at the
// server receipt exactly as the server sent it: its signature still
// verifies, and server_receipt_hash is the hash of its RFC 8785 form.
func TestLineageBothWays(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
	g.handshake()
	tools := []string{"signed_ok", "none", "unsigned", "legacy_interlock"}
	results := map[string]msg{}
	for i, tool := range tools {
		m := g.call(fmt.Sprintf("l%d", i), tool, `{"path":"/a"}`)
		expectResult(t, m, tool)
		results[tool] = m
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	all := perCall(showJSON(t, state))
	if len(all) != 2*len(tools) {
		t.Fatalf("%d entries for %d forwarded calls, want two each", len(all), len(tools))
	}
	recs := calls(t, all)
	for _, tool := range tools {
		r := recs[tool]
		if r == nil || r.outcome == nil || r.receipt == nil {
			t.Fatalf("%s: the ledger lacks its decision, outcome or server receipt", tool)
		}
		want := fmt.Sprint([]int64{r.decision.Seq, r.outcome.Seq})
		starts := map[string]string{
			"server_receipt_id":              r.outcomeRcp.ServerReceiptID,
			"gateway_decision_id (decision)": r.decisionRcpt.GatewayDecisionID,
			"gateway_decision_id (outcome)":  r.outcomeRcp.GatewayDecisionID,
			"audit_event_id (decision)":      r.decision.RecordID,
			"audit_event_id (outcome)":       r.outcome.RecordID,
		}
		for what, id := range starts {
			if id == "" {
				t.Errorf("%s: empty %s", tool, what)
				continue
			}
			if got := fmt.Sprint(seqs(showJSON(t, state, "--lineage", id))); got != want {
				t.Errorf("%s: ledger show --lineage %s (%s): seqs %s, want %s", tool, id, what, got, want)
			}
		}
		// The table form lists the same records.
		table := mustGH(t, "ledger", "show", "--state", state, "--lineage", r.outcomeRcp.ServerReceiptID)
		for _, id := range []string{r.decision.RecordID, r.outcome.RecordID} {
			if !strings.Contains(table, id) {
				t.Errorf("%s: ledger show --lineage (table) lacks %s:\n%s", tool, id, table)
			}
		}
		// The links themselves: one id, one record.
		if r.outcomeRcp.GatewayDecisionID == r.decisionRcpt.GatewayDecisionID || r.outcomeRcp.CompletesDecisionID != r.decisionRcpt.GatewayDecisionID {
			t.Errorf("%s: outcome %s completes %q, want the decision %s", tool, r.outcomeRcp.GatewayDecisionID, r.outcomeRcp.CompletesDecisionID, r.decisionRcpt.GatewayDecisionID)
		}
		if r.decisionRcpt.AuditEventID != r.decision.RecordID || r.outcomeRcp.AuditEventID != r.outcome.RecordID {
			t.Errorf("%s: records name audit events %q/%q, stored as entries %q/%q", tool,
				r.decisionRcpt.AuditEventID, r.outcomeRcp.AuditEventID, r.decision.RecordID, r.outcome.RecordID)
		}
		// Backward to the server's evidence: kept as received.
		if tool == "none" {
			if r.outcomeRcp.ServerReceiptBase64 != "" || r.outcomeRcp.SynthesizedReceipt == nil {
				t.Errorf("none: the server sent no receipt, but the outcome has %q / %s", r.outcomeRcp.ServerReceiptBase64, r.outcomeRcp.SynthesizedReceipt)
			}
			continue
		}
		if found := receiptBytesIn(t, results[tool].Result); found != nil && !bytes.Equal(r.receipt.Payload, found) {
			t.Errorf("%s: stored server receipt\n%s\nwant the bytes the server sent\n%s", tool, r.receipt.Payload, found)
		}
		if tool != "legacy_interlock" {
			if h := jcsHash(t, string(r.receipt.Payload)); r.outcomeRcp.ServerReceiptHash != h {
				t.Errorf("%s: server_receipt_hash %q, the stored receipt hashes to %q", tool, r.outcomeRcp.ServerReceiptHash, h)
			}
		}
		if tool == "signed_ok" {
			if !receiptSignatureOK(t, r.receipt.Payload) {
				t.Errorf("signed_ok: the stored server receipt's Ed25519 signature does not verify: %s", r.receipt.Payload)
			}
		}
	}
}

// receiptBytesIn returns the bytes of result._meta["dev.gatehouse/security-receipt"]
// exactly as they appear in the result the client received (which the
// gateway relays byte for byte), or nil when it has none.
func receiptBytesIn(t testing.TB, result []byte) []byte {
	t.Helper()
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Meta["dev.gatehouse/security-receipt"]
}

// receiptSignatureOK checks an Ed25519 receipt signature independently:
// over the RFC 8785 form of the receipt without receipt_signature and
// verification_status (evidence.md §2).
func receiptSignatureOK(t testing.TB, receipt []byte) bool {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(receipt, &m); err != nil {
		t.Fatal(err)
	}
	var sigText string
	if err := json.Unmarshal(m["receipt_signature"], &sigText); err != nil {
		t.Fatalf("receipt_signature: %v", err)
	}
	sig, err := base64.StdEncoding.DecodeString(sigText)
	if err != nil {
		t.Fatalf("receipt_signature: %v", err)
	}
	delete(m, "receipt_signature")
	delete(m, "verification_status")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil {
		t.Fatal(err)
	}
	return ed25519.Verify(edPublicKey(), v, sig)
}

// TestDeniedCall: a call the policy denies gets -32080, never reaches the
// server, and leaves a gateway decision receipt (action deny, the rule and
// its reason, response_scan_result not_run with a reason) as one entry,
// with no server receipt and no outcome.
func TestDeniedCall(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{
		"--state", state, "--policy", harness.Testdata("deny-unsigned.yaml"),
		"--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID, "--require-receipts", "verified",
	}, receiptServer(keyedID))
	g.handshake()
	m := g.call("d1", "unsigned", `{"a":1}`)
	expectError(t, m, -32080, "denied call")
	if !strings.Contains(string(m.Raw), "deny_unsigned_tool") {
		t.Errorf("denial does not name the rule: %s", m.Raw)
	}
	m = g.call("d2", "signed_ok", `{"a":1}`)
	expectResult(t, m, "allowed call")
	m = g.call("d3", "no_such_tool", `{"a":1}`)
	expectError(t, m, -32080, "unknown tool")
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)

	all := showJSON(t, state)
	recs := calls(t, all)
	r := recs["unsigned"]
	if r == nil {
		t.Fatal("no gateway decision for the denied call")
	}
	d := r.decisionRcpt
	if d.Action != "deny" || d.MatchedRule != "deny_unsigned_tool" || d.Reason != "the unsigned tool is not allowed through this gateway" || d.PolicyVersion != "e2e-deny-1" {
		t.Errorf("denied call's receipt: action %q rule %q reason %q policy_version %q", d.Action, d.MatchedRule, d.Reason, d.PolicyVersion)
	}
	if d.ResponseScanResult == nil || d.ResponseScanResult.Status != "not_run" || d.ResponseScanResult.Reason == "" {
		t.Errorf("denied call's response_scan_result %+v, want status not_run with a reason", d.ResponseScanResult)
	} else if !strings.Contains(d.ResponseScanResult.Reason, "held before upstream forwarding") {
		t.Errorf("denied call's response_scan_result reason %q", d.ResponseScanResult.Reason)
	}
	if d.ServerReceiptID != "" || d.ServerReceiptStatus != "" {
		t.Errorf("denied call's receipt references server receipt %q (status %q)", d.ServerReceiptID, d.ServerReceiptStatus)
	}
	if d.Phase != "decision" || d.AuditEventID != r.decision.RecordID || d.ServerReceiptHash != "" {
		t.Errorf("denied call's record: phase %q audit_event_id %q (entry %q) server_receipt_hash %q", d.Phase, d.AuditEventID, r.decision.RecordID, d.ServerReceiptHash)
	}
	if r.outcome != nil {
		t.Errorf("denied call has an outcome: %s", r.outcome.Payload)
	}
	// No server receipt for it: neither from the server nor synthesized.
	for _, c := range callsAll(t, all) {
		if c.receipt == nil {
			continue
		}
		if sr := c.receipt.receipt(t); sr.ToolName == "unsigned" || sr.ToolCallID == "req_d1" {
			t.Errorf("server receipt for the denied call: %s", c.receipt.Payload)
		}
	}
	// The server never saw it: the allowed call got the server's first
	// receipt.
	if a := recs["signed_ok"]; a == nil || a.receipt == nil || a.receipt.RecordID != "mcp_rcpt_rs_000001" {
		t.Errorf("the allowed call's receipt is not the server's first")
	}
	// Its lineage is the decision record, nothing else.
	want := fmt.Sprint([]int64{r.decision.Seq})
	for _, id := range []string{r.decision.RecordID, d.GatewayDecisionID} {
		if got := fmt.Sprint(seqs(showJSON(t, state, "--lineage", id))); got != want {
			t.Errorf("ledger show --lineage %s: seqs %s, want %s", id, got, want)
		}
	}
	// A tool the server does not list is denied by the gateway and
	// recorded the same way, with a warning.
	u := recs["no_such_tool"]
	if u == nil {
		t.Fatal("no gateway decision for the unknown tool")
	}
	if d := u.decisionRcpt; d.Action != "deny" || d.MatchedRule != "unknown_tool" || !contains(d.Warnings, "tool not listed by the server") ||
		d.ResponseScanResult == nil || d.ResponseScanResult.Status != "not_run" || u.outcome != nil || u.receipt != nil {
		t.Errorf("unknown tool's receipt: %s", u.decision.Payload)
	}
	// And `show --action deny` finds both.
	if es := showJSON(t, state, "--action", "deny", "--kind", "gateway_decision"); fmt.Sprint(seqs(es)) != fmt.Sprint([]int64{r.decision.Seq, u.decision.Seq}) {
		t.Errorf("ledger show --action deny --kind gateway_decision: seqs %v", seqs(es))
	}
}

// TestToolCallIDCorrelation: the tool_call_id the gateway derives
// (params._meta tool-use id, else "req_" + the JSON-RPC id) is the one the
// server puts in its receipt, so no tool_call_id conflict is raised, and
// the synthesized receipt carries it.
func TestToolCallIDCorrelation(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--receipt-keys", writeKeysFile(t, t.TempDir()), "--server-id", keyedID}, receiptServer(keyedID))
	g.handshake()
	cases := []struct {
		id, tool, meta, want string
	}{
		{"7", "unsigned", "", "req_7"},
		{`"s1"`, "signed_ok", `{"claudecode/toolUseId":"toolu_01ABC"}`, "toolu_01ABC"},
		{`"s2"`, "none", `{"tool_call_id":"tc-42"}`, "tc-42"},
		{"8.5", "legacy_interlock", `{"progressToken":1}`, "req_8.5"},
	}
	for _, c := range cases {
		params := `{"name":"` + c.tool + `","arguments":{}`
		if c.meta != "" {
			params += `,"_meta":` + c.meta
		}
		g.send(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":` + params + `}}`)
		expectResult(t, g.response(c.id), c.tool)
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	recs := calls(t, showJSON(t, state))
	for _, c := range cases {
		r := recs[c.tool]
		if r == nil || r.receipt == nil {
			t.Errorf("%s: no server receipt", c.tool)
			continue
		}
		if got := r.receipt.receipt(t).ToolCallID; got != c.want {
			t.Errorf("%s (id %s): receipt tool_call_id %q, want %q", c.tool, c.id, got, c.want)
		}
		if contains(r.outcomeRcp.Warnings, "receipt tool_call_id differs from the call") {
			t.Errorf("%s (id %s): tool_call_id conflict: %q", c.tool, c.id, r.outcomeRcp.Warnings)
		}
	}
}
