package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// equivalenceCase is one call and its response (nil: not forwarded).
type equivalenceCase struct {
	name    string
	require evidence.Requirement
	call    func() *gateway.Call
	result  func(t *testing.T) []byte
	rpcErr  bool
}

func equivalenceCases() []equivalenceCase {
	no := false
	withTool := func(mod func(*gateway.Call)) func() *gateway.Call {
		return func() *gateway.Call {
			c := call(true)
			mod(c)
			return c
		}
	}
	plain := func(*testing.T) []byte {
		return []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"b":1.50,"a":"<&>"}}`)
	}
	receipt := func(mutate func(map[string]any)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return signedResult(t, mutate) }
	}
	return []equivalenceCase{
		{name: "bench call", call: benchCall, result: benchResult2},
		{name: "denied", call: func() *gateway.Call {
			c := call(false)
			c.Decision.Action = policy.ActionDeny
			c.Decision.Reason = "no <write> & \u2028 \x01 \"quoted\""
			return c
		}},
		{name: "shadow", call: withTool(func(c *gateway.Call) {
			c.Decision.Shadows = []policy.ShadowDecision{{Rule: "shadow_rule", Action: policy.ActionDeny, Stage: "policy"}, {Rule: "r<2>", Action: policy.ActionMonitor, Reason: "\u2028", Stage: "policy"}}
		}), result: plain},
		{name: "shadow mode", require: evidence.RequireVerified, call: withTool(func(c *gateway.Call) {
			c.ShadowMode = true
			c.DecisionEventID = "0b6f6bb0-0000-4000-8000-000000000000"
			c.Decision.Rule, c.Decision.Reason = "shadow_mode", "shadow mode"
			c.Decision.Shadows = []policy.ShadowDecision{{Rule: "unknown_tool", Action: policy.ActionDeny, Reason: "not listed", Stage: "unknown_tool"}}
			c.ResponseShadows = []policy.ShadowDecision{{Rule: "scanning", Action: policy.ActionRedact, Reason: "secret", Stage: "scan"}}
		}), result: plain},
		{name: "unknown tool", call: withTool(func(c *gateway.Call) { c.Known, c.Tool = false, mcp.Tool{} }), result: plain},
		{name: "declaration and heuristics", call: withTool(func(c *gateway.Call) {
			c.Name, c.Tool.Name = "sendEmailHTTP", "sendEmailHTTP"
			c.Tool.Description = "Sends an e-mail through a web hook"
			c.Tool.Annotations = mcp.Annotations{OpenWorldHint: &no}
			c.Tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"password":{},"creditCard":{},"repo":{}}}`)
			c.Tool.Meta = json.RawMessage(`{"dev.gatehouse/security":{"data_classes":["pii"],"required_scopes":["mail:send"],"side_effect":"mutating"}}`)
		}), result: plain},
		{name: "inexact schema and arguments", call: withTool(func(c *gateway.Call) {
			c.Tool.InputSchema = json.RawMessage(`{"maximum":12345678901234567890}`)
			c.Arguments = []byte(`{"n":9007199254740993}`)
		}), result: func(*testing.T) []byte { return []byte(`{"n":9007199254740993}`) }},
		{name: "no arguments, json-rpc error", call: withTool(func(c *gateway.Call) { c.Arguments = nil }), rpcErr: true},
		{name: "verified receipt", require: evidence.RequireVerified, call: withTool(func(*gateway.Call) {}), result: receipt(nil)},
		{name: "verified receipt with intent", call: withTool(func(*gateway.Call) {}), result: receipt(func(m map[string]any) {
			m["side_effect"], m["declared_side_effects"], m["data_classes"] = "read_only", []string{"read"}, []string{"internal"}
		})},
		{name: "conflicting receipt", require: evidence.RequirePresent, call: withTool(func(*gateway.Call) {}), result: receipt(func(m map[string]any) {
			m["tool_name"], m["input_hash"] = "other", evidence.HashPrefix+strings.Repeat("0", 64)
		})},
		{name: "tampered receipt", require: evidence.RequirePresent, call: withTool(func(*gateway.Call) {}), result: func(t *testing.T) []byte {
			return []byte(strings.Replace(string(signedResult(t, nil)), `"tool_name":"read"`, `"tool_name":"rm"`, 1))
		}},
		{name: "unsigned receipt with problems", require: evidence.RequireVerified, call: withTool(func(*gateway.Call) {}), result: func(*testing.T) []byte {
			return []byte(`{"_meta":{"interlock.receipt_id":"r1","interlock.tool_name":"read","interlock.issued_at":"yesterday","interlock.side_effect":"read_only"}}`)
		}},
		{name: "receipt with an inexact number", call: withTool(func(*gateway.Call) {}), result: func(*testing.T) []byte {
			return []byte(`{"_meta":{"dev.gatehouse/security-receipt":{"receipt_id":"r2","big":12345678901234567890}}}`)
		}},
		{name: "receipt without receipt_id", require: evidence.RequireVerified, call: withTool(func(*gateway.Call) {}), result: receipt(func(m map[string]any) { delete(m, "receipt_id") })},
		{name: "receipt_id with a control character", call: withTool(func(*gateway.Call) {}), result: receipt(func(m map[string]any) { m["receipt_id"] = "r\u0007" })},
		{name: "receipt with odd strings", call: withTool(func(*gateway.Call) {}), result: func(*testing.T) []byte {
			return []byte(`{"_meta":{"dev.gatehouse/security-receipt":{"tool_name":"read","receipt_id":"r<3>\u2028\u00e9","note":"\u0041\/x","n":1.0E2}}}`)
		}},
	}
}

// benchResult2 is benchResult with the signature of a case's result.
func benchResult2(*testing.T) []byte { return benchResult(benchCall()) }

// TestRecordsCanonicalByConstruction: for calls covering every path
// (denied, shadow, unknown tool, declarations, inexact numbers, JSON-RPC
// errors, verified, unsigned, tampered and conflicting receipts, strings
// that encoding/json escapes), every record is one entry whose payload is
// already what RFC 8785 makes of encoding/json's form of the record (the
// gateway encodes its records once, canonical by construction), and the
// records link as docs/ledger.md says (checkRecords). Each call runs twice
// on the same Recorder, so the second one takes the cached tool facts.
func TestRecordsCanonicalByConstruction(t *testing.T) {
	for _, tc := range equivalenceCases() {
		t.Run(tc.name, func(t *testing.T) {
			led := &memLedger{}
			r, err := New(Config{Ledger: led, Keys: keys(), Require: tc.require, GatewayID: "gw"})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				c := tc.call()
				if err := r.Decided(c)(); err != nil {
					t.Fatal(err)
				}
				if c.Forwarded {
					resp := &jsonrpc.Message{Kind: jsonrpc.KindResponse}
					if tc.rpcErr {
						resp.Error = []byte(`{"code":-32000,"message":"failed"}`)
					} else {
						resp.Result = tc.result(t)
					}
					r.Responded(c, resp)()
					if found, _, ok := evidence.Find(resp.Result, evidence.DefaultReceiptKeys); ok {
						out := led.payload(t, KindGatewayOutcome, len(led.entries)/2-1)
						if got := storedReceipt(t, out); !bytes.Equal(got, found) {
							t.Errorf("stored server receipt %s, want %s", got, found)
						}
					}
				}
			}
			want := 2
			if tc.call().Forwarded {
				want = 4
			}
			if len(led.entries) != want {
				t.Fatalf("%d entries, want %d: %s", len(led.entries), want, led.kinds())
			}
			for _, e := range led.entries {
				var rc evidence.GatewayDecisionReceipt
				if err := json.Unmarshal(e.Payload, &rc); err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(&rc)
				if err != nil {
					t.Fatal(err)
				}
				canon, err := jcs.Canonical(b)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(canon, e.Payload) {
					t.Errorf("%s payload is not the canonical form of its record:\n got %s\nwant %s", e.Kind, e.Payload, canon)
				}
			}
			checkRecords(t, led)
		})
	}
}

// checkRecords checks the per-call records in m (docs/ledger.md,
// "Per-call records"): every entry is a gateway_decision or a
// gateway_outcome whose record_id is its payload's audit_event_id; every
// gateway_decision_id and audit_event_id names one record; an outcome
// names, as completes_decision_id, a decision stored before it, of the same
// server and tool, and repeats none of its argument scan, hashes or
// warnings; the phases are "decision" and "outcome".
func checkRecords(t *testing.T, m *memLedger) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	decisions := map[string]*evidence.GatewayDecisionReceipt{}
	ids := map[string]bool{}
	for _, e := range m.entries {
		var rc evidence.GatewayDecisionReceipt
		if err := json.Unmarshal(e.Payload, &rc); err != nil {
			t.Fatalf("%s %s: %v", e.Kind, e.RecordID, err)
		}
		if e.RecordID != rc.AuditEventID || !strings.HasPrefix(rc.AuditEventID, evidence.PrefixAuditEvent) {
			t.Errorf("%s entry %s holds the record of audit event %q", e.Kind, e.RecordID, rc.AuditEventID)
		}
		for _, id := range []string{rc.GatewayDecisionID, rc.AuditEventID} {
			if ids[id] {
				t.Errorf("%s: id %s names two records", e.Kind, id)
			}
			ids[id] = true
		}
		switch e.Kind {
		case KindGatewayDecision:
			// A decision record carries a server receipt only when it is
			// the listed tool's own (tool-level) receipt it references.
			if rc.Phase != evidence.PhaseDecision || rc.CompletesDecisionID != "" || rc.ServerReceiptBase64 != "" && rc.ServerReceiptID == "" || rc.SynthesizedReceipt != nil {
				t.Errorf("decision record %s: phase %q completes %q", rc.GatewayDecisionID, rc.Phase, rc.CompletesDecisionID)
			}
			decisions[rc.GatewayDecisionID] = &rc
		case KindGatewayOutcome:
			d := decisions[rc.CompletesDecisionID]
			if rc.Phase != evidence.PhaseOutcome || d == nil || d.ServerID != rc.ServerID || d.ToolName != rc.ToolName {
				t.Errorf("outcome record %s: phase %q completes %q, which is not a stored decision of its call", rc.GatewayDecisionID, rc.Phase, rc.CompletesDecisionID)
			}
			// What the decision holds is not repeated.
			if rc.ArgumentScanResult != nil || rc.InputHash != "" || rc.ToolSchemaHash != "" || rc.ToolDescriptionHash != "" {
				t.Errorf("outcome record %s repeats the decision's argument scan or hashes", rc.GatewayDecisionID)
			}
			if d != nil && len(d.Warnings) > 0 && len(rc.Warnings) >= len(d.Warnings) && slices.Equal(rc.Warnings[:len(d.Warnings)], d.Warnings) {
				t.Errorf("outcome record %s repeats the decision's warnings %q", rc.GatewayDecisionID, d.Warnings)
			}
			if rc.ServerReceiptID == "" || (rc.ServerReceiptBase64 == "") == (rc.SynthesizedReceipt == nil) && !strings.Contains(strings.Join(rc.Warnings, ";"), "not stored") {
				t.Errorf("outcome record %s: server receipt %q, stored %v, synthesized %v", rc.GatewayDecisionID, rc.ServerReceiptID, rc.ServerReceiptBase64 != "", rc.SynthesizedReceipt != nil)
			}
		default:
			t.Errorf("entry of kind %s", e.Kind)
		}
	}
}

// storedReceipt returns the server receipt an outcome payload carries as
// received (server_receipt_base64 decoded).
func storedReceipt(t *testing.T, out map[string]any) []byte {
	t.Helper()
	s, _ := out["server_receipt_base64"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || s == "" {
		t.Fatalf("server_receipt_base64 %q: %v", s, err)
	}
	return b
}
