package evidence

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// draftDecision is the draft's example GatewayDecisionReceipt.
func draftDecision() *GatewayDecisionReceipt {
	return &GatewayDecisionReceipt{
		GatewayDecisionID: "gw_dec_interlock_0001", SchemaVersion: "0.1", IssuedAt: "2026-05-19T08:15:31Z",
		ServerReceiptID: "mcp_rcpt_roam_0001", GatewayID: "interlock-local", ServerID: "roam-code-local",
		ToolName: "publish_artifact", ActorRefID: "user_maaz", Role: "developer_agent", Action: "quarantine",
		MatchedRule:   "high_risk_externality_drift",
		Reason:        "Tool added external share/export capability compared with stored baseline",
		PolicyVersion: "interlock-policy-0.1", MetadataConfidence: 0.91,
		Warnings:           []string{"tool capability drift detected", "external sharing added"},
		ArgumentScanResult: &ScanResult{Status: ScanPass, ArgumentKeys: []string{"path", "destination", "visibility"}},
		ResponseScanResult: HeldResponseScan(),
		DriftResult: &DriftResult{Severity: "critical", Action: "quarantine",
			Changes: []string{"externality_changed_to_external", "effect_added_share", "scope_added_external_share"}},
		AuditEventID: "audit_interlock_0001",
	}
}

// TestDecisionDraftExample: the draft's example marshals to the draft's
// JSON byte for byte (after compaction), in table order.
func TestDecisionDraftExample(t *testing.T) {
	got, err := json.Marshal(draftDecision())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, readTestdata(t, "gateway/draft_example.json")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("got  %s\nwant %s", got, want.Bytes())
	}
	// And back, strictly.
	dec := json.NewDecoder(bytes.NewReader(want.Bytes()))
	dec.DisallowUnknownFields()
	var d GatewayDecisionReceipt
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
}

// TestDecisionFieldOrder pins every JSON name and their order: the draft's
// table order, then the hashes and the receipt status, then the members of
// the per-call records (phase, the decision completed, the server receipt
// as received).
func TestDecisionFieldOrder(t *testing.T) {
	d := draftDecision()
	d.ShadowMode = true
	d.ShadowDecisions = []ShadowDecision{{Action: "deny", MatchedRule: "no_prod_deploys", Reason: "deploys to prod are refused", Stage: "policy"}}
	d.ArgumentScanResult.Findings = []ScanFinding{{Rule: "github-pat", Class: "secret", Confidence: "high", Path: "/arguments/token", Action: "redact"}}
	d.ArgumentScanResult.Reason = "r"
	d.InputHash = HashPrefix + strings.Repeat("1", 64)
	d.OutputHash = HashPrefix + strings.Repeat("2", 64)
	d.ToolSchemaHash = HashPrefix + strings.Repeat("3", 64)
	d.ToolDescriptionHash = HashPrefix + strings.Repeat("4", 64)
	d.ServerReceiptStatus = StatusOK
	d.Phase = PhaseOutcome
	d.CompletesDecisionID = "gw_dec_interlock_0000"
	d.DecisionEventID = "0b6f6bb0-0000-4000-8000-000000000000"
	d.ServerReceiptBase64 = "eyJyZWNlaXB0X2lkIjoibWNwX3JjcHRfcm9hbV8wMDAxIn0="
	d.ServerReceiptHash = HashPrefix + strings.Repeat("5", 64)
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "gateway/decision_all_fields.json", append(out, '\n'))
	want := []string{
		"gateway_decision_id", "schema_version", "issued_at", "server_receipt_id", "gateway_id",
		"server_id", "tool_name", "actor_ref_id", "role", "action", "matched_rule", "reason",
		"policy_version", "metadata_confidence", "warnings", "argument_scan_result",
		"response_scan_result", "drift_result", "shadow_mode", "shadow_decisions", "audit_event_id",
		"input_hash", "output_hash", "tool_schema_hash", "tool_description_hash", "server_receipt_status",
		"phase", "completes_decision_id", "decision_event_id", "server_receipt_base64", "server_receipt_hash",
	}
	if got := topLevelNames(t, out); !slices.Equal(got, want) {
		t.Errorf("names = %q\nwant    %q", got, want)
	}
	// A minimal decision writes the required members, confidence and shadow_mode.
	minimal := &GatewayDecisionReceipt{GatewayDecisionID: "gw_dec_x", SchemaVersion: "0.1", IssuedAt: "2026-05-19T08:15:31.000Z", ServerID: "s", ToolName: "t", Action: "deny"}
	out, _ = json.Marshal(minimal)
	if string(out) != `{"gateway_decision_id":"gw_dec_x","schema_version":"0.1","issued_at":"2026-05-19T08:15:31.000Z","server_id":"s","tool_name":"t","action":"deny","metadata_confidence":0,"shadow_mode":false}` {
		t.Errorf("minimal decision = %s", out)
	}
}

func topLevelNames(t *testing.T, raw []byte) []string {
	t.Helper()
	ms, err := objectMembers(raw)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.name)
	}
	return names
}

func TestHeldResponseScan(t *testing.T) {
	out, _ := json.Marshal(HeldResponseScan())
	if string(out) != `{"status":"not_run","reason":"gateway-mediated tool call held before upstream forwarding"}` {
		t.Errorf("HeldResponseScan = %s", out)
	}
}

// TestOutcomeKeepsReceiptBytes: an outcome record carries the server
// receipt exactly as received, however it is formatted (member order,
// whitespace, escapes), and the bytes it gives back re-verify; its
// canonical encoding is what RFC 8785 makes of encoding/json's.
func TestOutcomeKeepsReceiptBytes(t *testing.T) {
	receipt := signed(t, AlgEd25519)
	var m map[string]any
	if err := json.Unmarshal(receipt, &m); err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(m, "", "\t") // the same receipt, not canonical
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"as signed": receipt, "indented": indented} {
		t.Run(name, func(t *testing.T) {
			r, _, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			out := &GatewayDecisionReceipt{
				GatewayDecisionID: NewGatewayDecisionID(), SchemaVersion: SchemaVersion, IssuedAt: Timestamp(time.Now()),
				ServerID: "roam-code-local", ToolName: "publish_artifact", Action: "allow", AuditEventID: NewAuditEventID(),
				Phase: PhaseOutcome, CompletesDecisionID: NewGatewayDecisionID(), ServerReceiptID: r.ReceiptID,
				ServerReceiptBase64: base64.StdEncoding.EncodeToString(raw),
			}
			enc, err := CanonicalJSON(out)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(out)
			if want, _ = Canonical(want); !bytes.Equal(enc, want) {
				t.Fatalf("CanonicalJSON\n%s\nwant\n%s", enc, want)
			}
			var back GatewayDecisionReceipt
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatal(err)
			}
			got, err := back.ReceiptBytes()
			if err != nil || !bytes.Equal(got, raw) {
				t.Fatalf("ReceiptBytes = %q, %v; want the bytes received", got, err)
			}
			if Verify(got, r, testKeys) != StatusOK {
				t.Error("the stored server receipt does not re-verify")
			}
		})
	}
	bad := &GatewayDecisionReceipt{GatewayDecisionID: "gw_dec_x", ServerReceiptBase64: "not base64!"}
	if _, err := bad.ReceiptBytes(); err == nil || !strings.Contains(err.Error(), "gw_dec_x") {
		t.Errorf("ReceiptBytes of bad base64: %v", err)
	}
	if b, err := (&GatewayDecisionReceipt{}).ReceiptBytes(); b != nil || err != nil {
		t.Errorf("ReceiptBytes without a receipt = %q, %v", b, err)
	}
}

func TestIDs(t *testing.T) {
	re := regexp.MustCompile(`^(gw_dec_|audit_|mcp_rcpt_unnamed_)[0-9A-HJKMNP-TV-Z]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		for _, id := range []string{NewGatewayDecisionID(), NewAuditEventID(), NewUnnamedReceiptID()} {
			if !re.MatchString(id) || seen[id] {
				t.Fatalf("bad or repeated id %q", id)
			}
			seen[id] = true
		}
	}
	if !strings.HasPrefix(NewGatewayDecisionID(), "gw_dec_") || !strings.HasPrefix(NewAuditEventID(), "audit_") {
		t.Error("prefixes")
	}
	// The ULID specification's example timestamp.
	if got := newULID(time.UnixMilli(1469918176385))[:10]; got != "01ARYZ6S41" {
		t.Errorf("ULID time part = %s, want 01ARYZ6S41", got)
	}
	a, b := newULID(time.UnixMilli(1000)), newULID(time.UnixMilli(1001))
	if a >= b {
		t.Errorf("ULIDs do not sort by time: %s %s", a, b)
	}
	if got := Timestamp(time.Date(2026, 5, 19, 8, 15, 30, 0, time.UTC)); got != "2026-05-19T08:15:30.000Z" {
		t.Errorf("Timestamp = %s", got)
	}
}
