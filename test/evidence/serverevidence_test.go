package evidencee2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outcomesInOrder runs the calls of tool ids through a gatehouse started
// with flags on server, one at a time, and returns their outcome records
// in call order, from the ledger.
func outcomesInOrder(t *testing.T, flags, server []string, tool string, n int) []decision {
	t.Helper()
	state := filepath.Join(t.TempDir(), "ledger.db")
	g := startGW(t, nil, append([]string{"--state", state}, flags...), server)
	g.handshake()
	for i := range n {
		expectResult(t, g.call(fmt.Sprintf("c%d", i), tool, `{"q":"x"}`), tool)
	}
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	var out []decision
	for _, c := range callsAll(t, showJSON(t, state)) {
		if c.outcome == nil {
			t.Fatalf("%s: no outcome", c.tool)
		}
		out = append(out, c.outcomeRcp)
	}
	if len(out) != n {
		t.Fatalf("%d outcomes for %d calls", len(out), n)
	}
	return out
}

// chainWarnings are the outcome's warnings about the receipt chain.
func chainWarnings(d decision) []string {
	var out []string
	for _, w := range d.Warnings {
		if strings.HasPrefix(w, "server receipt chain: ") {
			out = append(out, w)
		}
	}
	return out
}

// TestServerReceiptChain: the receipt server's chain, through the binary,
// with each fault of --chain in the second receipt: the gateway calls
// exactly that receipt tampered, names the fault, and the chain goes on.
// The honest chain's previous_hash is the server_receipt_hash of the
// outcome before (the RFC 8785 hash of the receipt as received), which the
// test computes itself from the stored bytes.
func TestServerReceiptChain(t *testing.T) {
	t.Parallel()
	keys := writeKeysFile(t, t.TempDir())
	for _, tc := range []struct {
		chain string
		warn  string // the second outcome's chain warning ("" for none)
	}{
		{"ok", ""},
		{"gap", "server receipt chain: gap: ledger_seq 2 missing before ledger_seq 3"},
		{"repeat", "server receipt chain: ledger_seq 1 repeats"},
		{"broken", "server receipt chain: previous_hash of ledger_seq 2 is not the hash of ledger_seq 1"},
	} {
		t.Run(tc.chain, func(t *testing.T) {
			t.Parallel()
			outs := outcomesInOrder(t, []string{"--receipt-keys", keys, "--server-id", keyedID},
				receiptServer(keyedID, "--chain", tc.chain), "signed_ok", 3)
			for i, o := range outs {
				want, warns := "ok", []string(nil)
				if i == 1 && tc.warn != "" {
					want = "tampered"
				}
				if o.ServerReceiptStatus != want {
					t.Errorf("outcome %d: server_receipt_status %s, want %s; warnings %q", i, o.ServerReceiptStatus, want, o.Warnings)
				}
				warns = chainWarnings(o)
				if i == 1 && tc.warn != "" {
					if len(warns) != 1 || !strings.HasPrefix(warns[0], tc.warn) {
						t.Errorf("outcome %d: chain warnings %q, want %q", i, warns, tc.warn)
					}
				} else if warns != nil {
					t.Errorf("outcome %d: chain warnings %q, want none", i, warns)
				}
			}
			if tc.chain == "ok" {
				for i := 1; i < len(outs); i++ {
					b, _ := base64.StdEncoding.DecodeString(outs[i].ServerReceiptBase64)
					var r struct {
						PreviousHash string `json:"previous_hash"`
					}
					if err := json.Unmarshal(b, &r); err != nil {
						t.Fatal(err)
					}
					prev, _ := base64.StdEncoding.DecodeString(outs[i-1].ServerReceiptBase64)
					if h := jcsHash(t, string(prev)); r.PreviousHash != h || outs[i-1].ServerReceiptHash != h {
						t.Errorf("receipt %d: previous_hash %s, the previous receipt hashes %s (server_receipt_hash %s)", i, r.PreviousHash, h, outs[i-1].ServerReceiptHash)
					}
				}
			}
		})
	}
}

// TestServerReceiptChainOutOfOrder: a server that answers concurrent calls
// out of order (--swap-pairs: ledger_seq 2 arrives before 1, 4 before 3)
// is not called tampered; a gap in such a session still is.
func TestServerReceiptChainOutOfOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chain    string
		tampered string // the tool call ids whose outcome must be tampered
	}{
		{"ok", ""},
		// ledger_seq 2 (c1's) links wrongly to 1; it arrives first, and
		// the broken link is found, and recorded, when 1 (c0's) arrives.
		{"broken", "c0"},
	} {
		t.Run(tc.chain, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "ledger.db")
			g := startGW(t, nil, []string{"--state", state, "--server-id", "rs-swap"},
				[]string{receiptBin, "--server-id", "rs-swap", "--swap-pairs", "--chain", tc.chain})
			g.handshake()
			for i := 0; i < 4; i += 2 {
				a, b := fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i+1)
				// Both sent before either is answered.
				g.send(callLine(a, "unsigned", `{"n":`+fmt.Sprint(i)+`}`))
				g.send(callLine(b, "unsigned", `{"n":`+fmt.Sprint(i+1)+`}`))
				expectResult(t, g.response(fmt.Sprintf("%q", b)), b)
				expectResult(t, g.response(fmt.Sprintf("%q", a)), a)
			}
			if code := g.finish(); code != 0 {
				t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
			}
			var n int
			for _, c := range callsAll(t, showJSON(t, state)) {
				o := c.outcomeRcp
				var r struct {
					ToolCallID string `json:"tool_call_id"`
				}
				b, _ := base64.StdEncoding.DecodeString(o.ServerReceiptBase64)
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				id := strings.TrimPrefix(r.ToolCallID, "req_")
				want := "unsigned"
				if id == tc.tampered {
					want = "tampered"
				}
				if o.ServerReceiptStatus != want {
					t.Errorf("%s: server_receipt_status %s, want %s; warnings %q", id, o.ServerReceiptStatus, want, o.Warnings)
				}
				n++
			}
			if n != 4 {
				t.Fatalf("%d outcomes", n)
			}
		})
	}
}

// TestToolHashesInReceipts: a receipt's tool_schema_hash and
// tool_description_hash are compared with the gateway's hashes of the
// listed tool; a mismatch is a conflict (a warning each, confidence 0.1
// lower each, counted in receipt.conflicts). (A tool the gateway has not
// seen listed is internal/audit's TestToolHashConflicts: the gateway lists
// the server's tools itself, so a client cannot call one unlisted here.)
func TestToolHashesInReceipts(t *testing.T) {
	t.Parallel()
	const schemaW = "receipt tool_schema_hash differs from the gateway's hash of the listed tool"
	const descW = "receipt tool_description_hash differs from the gateway's hash of the listed tool"
	for _, tc := range []struct {
		flag       string
		want       []string
		confidence float64
	}{
		// The receipt server's intent: meta 0.85 each, unsigned receipt
		// 0.9 each when it has no conflict.
		{"match", nil, 0.9},
		{"mismatch", []string{schemaW, descW}, 0.65},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "ledger.db")
			g := startGW(t, nil, []string{"--state", state, "--server-id", "rs-hashes"},
				[]string{receiptBin, "--server-id", "rs-hashes", "--tool-hashes", tc.flag})
			g.handshake()
			m := g.call("c1", "unsigned", `{"q":"x"}`)
			if code := g.finish(); code != 0 {
				t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
			}
			rec := calls(t, showJSON(t, state))["unsigned"]
			if rec == nil {
				t.Fatalf("no record; response %s", m.Raw)
			}
			if rec.outcome == nil {
				t.Fatalf("no outcome; response %s", m.Raw)
			}
			o := rec.outcomeRcp
			var got []string
			for _, w := range o.Warnings {
				if strings.Contains(w, "tool_schema_hash") || strings.Contains(w, "tool_description_hash") {
					got = append(got, w)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
			if o.MetadataConfidence == nil || *o.MetadataConfidence != tc.confidence {
				t.Errorf("metadata_confidence %v, want %v", o.MetadataConfidence, tc.confidence)
			}
			if o.ServerReceiptStatus != "unsigned" {
				t.Errorf("status %s: a tool hash conflict is not tampering", o.ServerReceiptStatus)
			}
		})
	}
}

// exampleFlowPolicy holds the draft's publish_artifact before forwarding.
const exampleFlowPolicy = `name: e2e-example-flow
version: "interlock-policy-0.1"
defaults:
  action: allow
rules:
  - id: high_risk_externality_drift
    tools: ["publish_artifact"]
    action: deny
    reason: Tool added external share/export capability compared with stored baseline
`

// TestToolLevelReceiptExampleFlow: the draft's Server Receipt
// (roam-code-local, publish_artifact, mcp_rcpt_roam_0001), listed as the
// tool-level receipt of publish_artifact, is referenced by the decision
// made before forwarding (here a deny; a quarantine is recorded the same
// way) as server_receipt_id, and kept in the ledger as listed; the lineage
// walks from its id to the decision.
func TestToolLevelReceiptExampleFlow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(exampleFlowPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := filepath.Abs("testdata/draft_server_receipt.json")
	if err != nil {
		t.Fatal(err)
	}
	draft, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var listed bytes.Buffer // as the server lists it: compacted
	if err := json.Compact(&listed, draft); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--policy", pol, "--server-id", "roam-code-local", "--gateway-id", "interlock-local"},
		[]string{receiptBin, "--server-id", "roam-code-local", "--tool-receipt-file", file})
	g.handshake()
	expectError(t, g.call("c1", "publish_artifact", `{"path":"a","destination":"b","visibility":"public"}`), -32080, "publish_artifact")
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	rec := calls(t, showJSON(t, state))["publish_artifact"]
	if rec == nil || rec.outcome != nil {
		t.Fatalf("want one decision record and no outcome: %+v", rec)
	}
	d := rec.decisionRcpt
	if d.ServerReceiptID != "mcp_rcpt_roam_0001" || d.ServerID != "roam-code-local" || d.ToolName != "publish_artifact" ||
		d.Action != "deny" || d.MatchedRule != "high_risk_externality_drift" || d.PolicyVersion != "interlock-policy-0.1" || d.GatewayID != "interlock-local" {
		t.Errorf("decision record %+v", d)
	}
	if d.ResponseScanResult == nil || d.ResponseScanResult.Status != "not_run" || d.ResponseScanResult.Reason != "gateway-mediated tool call held before upstream forwarding" {
		t.Errorf("response_scan_result %+v", d.ResponseScanResult)
	}
	b, err := base64.StdEncoding.DecodeString(d.ServerReceiptBase64)
	if err != nil || !bytes.Equal(b, listed.Bytes()) {
		t.Errorf("server_receipt_base64 is not the receipt as listed: %q", b)
	}
	if h := jcsHash(t, string(draft)); d.ServerReceiptHash != h {
		t.Errorf("server_receipt_hash %s, want %s", d.ServerReceiptHash, h)
	}
	// Unsigned; the draft's abbreviated hashes are problems, not hidden.
	if d.ServerReceiptStatus != "unsigned" || !contains(d.Warnings, "tool-level server receipt: status unsigned") {
		t.Errorf("status %s, warnings %q", d.ServerReceiptStatus, d.Warnings)
	}
	lineage := showJSON(t, state, "--lineage", "mcp_rcpt_roam_0001")
	if len(lineage) != 1 || lineage[0].RecordID != d.AuditEventID {
		t.Errorf("lineage of mcp_rcpt_roam_0001: %d entries", len(lineage))
	}
}

// TestToolLevelReceiptsSigned: with --tool-receipts every listed tool has
// a signed tool-level receipt; every decision record references its
// tool's, verified with the server's key, and the outcome the per-call
// receipt.
func TestToolLevelReceiptsSigned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "ledger.db")
	g := startGW(t, nil, []string{"--state", state, "--receipt-keys", writeKeysFile(t, dir), "--server-id", keyedID},
		receiptServer(keyedID, "--tool-receipts"))
	g.handshake()
	expectResult(t, g.call("c1", "signed_ok", `{"q":"x"}`), "signed_ok")
	if code := g.finish(); code != 0 {
		t.Fatalf("gatehouse exited %d; stderr:\n%s", code, g.Tail())
	}
	verifyLedger(t, state)
	rec := calls(t, showJSON(t, state))["signed_ok"]
	if rec == nil || rec.outcome == nil {
		t.Fatal("no records")
	}
	if d := rec.decisionRcpt; d.ServerReceiptID != "mcp_rcpt_rs_tool_signed_ok" || d.ServerReceiptStatus != "ok" {
		t.Errorf("decision references %s (%s), want mcp_rcpt_rs_tool_signed_ok (ok); warnings %q", d.ServerReceiptID, d.ServerReceiptStatus, d.Warnings)
	}
	if o := rec.outcomeRcp; o.ServerReceiptID != "mcp_rcpt_rs_000001" || o.ServerReceiptStatus != "ok" {
		t.Errorf("outcome references %s (%s)", o.ServerReceiptID, o.ServerReceiptStatus)
	}
}
