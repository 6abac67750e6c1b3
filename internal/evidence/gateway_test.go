package evidence

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
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
// table order, then the hashes and the receipt status.
func TestDecisionFieldOrder(t *testing.T) {
	d := draftDecision()
	d.ShadowMode = true
	d.ArgumentScanResult.Findings = 2
	d.ArgumentScanResult.Reason = "r"
	d.InputHash = HashPrefix + strings.Repeat("1", 64)
	d.OutputHash = HashPrefix + strings.Repeat("2", 64)
	d.ToolSchemaHash = HashPrefix + strings.Repeat("3", 64)
	d.ToolDescriptionHash = HashPrefix + strings.Repeat("4", 64)
	d.ServerReceiptStatus = StatusOK
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "gateway/decision_all_fields.json", append(out, '\n'))
	want := []string{
		"gateway_decision_id", "schema_version", "issued_at", "server_receipt_id", "gateway_id",
		"server_id", "tool_name", "actor_ref_id", "role", "action", "matched_rule", "reason",
		"policy_version", "metadata_confidence", "warnings", "argument_scan_result",
		"response_scan_result", "drift_result", "shadow_mode", "audit_event_id",
		"input_hash", "output_hash", "tool_schema_hash", "tool_description_hash", "server_receipt_status",
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

// TestLineage stores a server receipt, a decision in both phases and its
// audit events as canonical JSON, then walks server_receipt_id ->
// gateway_decision_id -> audit_event_id and back using only the stored
// payload members the ledger's filters read, and checks that each event's
// hashes pin exactly the stored records it links.
func TestLineage(t *testing.T) {
	receipt := signed(t, AlgEd25519)
	r, _, _ := Parse(receipt)
	storedReceipt, err := Canonical(receipt)
	if err != nil {
		t.Fatal(err)
	}
	d := &GatewayDecisionReceipt{
		GatewayDecisionID: NewGatewayDecisionID(), SchemaVersion: SchemaVersion, IssuedAt: Timestamp(time.Now()),
		ServerID: "roam-code-local", ToolName: "publish_artifact", Action: "allow",
	}
	var decisions, events []map[string]json.RawMessage // as stored
	var decisionPayloads [][]byte
	store := func(phase string, sr []byte) AuditEvent {
		t.Helper()
		ev := d.Event(phase)
		dec, err := CanonicalJSON(d)
		if err != nil {
			t.Fatal(err)
		}
		ev.Link(dec, sr)
		b, err := CanonicalJSON(&ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][]byte{dec, b} {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(p, &m); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(p, dec) {
				decisions = append(decisions, m)
				decisionPayloads = append(decisionPayloads, dec)
			} else {
				events = append(events, m)
			}
		}
		return ev
	}
	decisionEvent := store(PhaseDecision, nil)
	firstID := d.AuditEventID
	d.ServerReceiptID = r.ReceiptID
	d.ServerReceiptStatus = Verify(receipt, r, testKeys)
	d.ResponseScanResult = &ScanResult{Status: ScanPass}
	outcomeEvent := store(PhaseOutcome, storedReceipt)
	if decisionEvent.AuditEventID != firstID || outcomeEvent.AuditEventID != d.AuditEventID || firstID == d.AuditEventID {
		t.Fatalf("event ids not linked: %s %s %s", decisionEvent.AuditEventID, outcomeEvent.AuditEventID, d.AuditEventID)
	}
	for _, m := range events {
		for _, k := range []string{"tool_name", "server_id", "action", "gateway_decision_id", "audit_event_id", "gateway_decision_hash"} {
			if _, ok := m[k]; !ok {
				t.Errorf("stored event lacks %s", k)
			}
		}
		for _, k := range []string{"decision", "server_receipt"} {
			if _, ok := m[k]; ok {
				t.Errorf("stored event copies %s instead of referencing it", k)
			}
		}
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	if str(events[0], "server_receipt_hash") != "" {
		t.Errorf("decision-phase event has a server_receipt_hash: %s", events[0]["server_receipt_hash"])
	}
	// Forward: receipt id -> events -> decision id -> every event of it.
	var decisionID string
	for _, m := range events {
		if str(m, "server_receipt_id") == r.ReceiptID {
			decisionID = str(m, "gateway_decision_id")
		}
	}
	var ids []string
	for _, m := range events {
		if str(m, "gateway_decision_id") == decisionID {
			ids = append(ids, str(m, "audit_event_id"))
		}
	}
	sort.Strings(ids)
	want := []string{firstID, d.AuditEventID}
	sort.Strings(want)
	if decisionID != d.GatewayDecisionID || !slices.Equal(ids, want) {
		t.Errorf("forward walk: %s %v", decisionID, ids)
	}
	// Backward: each event -> the stored decision that names it (hash
	// checked) -> for the outcome, the stored server receipt (hash
	// checked), which re-verifies.
	for i, ev := range events {
		var dec map[string]json.RawMessage
		var payload []byte
		for j, m := range decisions {
			if str(m, "audit_event_id") == str(ev, "audit_event_id") {
				dec, payload = m, decisionPayloads[j]
			}
		}
		if dec == nil {
			t.Fatalf("event %d: no stored decision names it", i)
		}
		if h, _ := Hash(payload); h != str(ev, "gateway_decision_hash") || str(dec, "gateway_decision_id") != str(ev, "gateway_decision_id") {
			t.Errorf("event %d: gateway_decision_hash %s, stored decision hashes to %s", i, ev["gateway_decision_hash"], h)
		}
		if i == 0 {
			continue
		}
		if str(dec, "server_receipt_id") != r.ReceiptID {
			t.Fatalf("backward walk: the outcome decision names receipt %q", str(dec, "server_receipt_id"))
		}
		if h, _ := Hash(storedReceipt); h != str(ev, "server_receipt_hash") {
			t.Errorf("server_receipt_hash %s, stored receipt hashes to %s", ev["server_receipt_hash"], h)
		}
		pr, _, _ := Parse(storedReceipt)
		if pr == nil || pr.ReceiptID != r.ReceiptID || Verify(storedReceipt, pr, testKeys) != StatusOK {
			t.Error("stored server receipt does not re-verify")
		}
		if str(ev, "verification_status") != "ok" || str(ev, "phase") != PhaseOutcome {
			t.Errorf("outcome event %v", ev)
		}
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
