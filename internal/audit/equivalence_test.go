package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// recorder is what Recorder and refRecorder have in common.
type recorder interface {
	Decided(c *gateway.Call) func() error
	Responded(c *gateway.Call, resp *jsonrpc.Message) func() (bool, string)
}

var (
	idPattern   = regexp.MustCompile(`(gw_dec_|audit_|mcp_rcpt_gw_|mcp_rcpt_unnamed_)[0-9A-HJKMNP-TV-Z]{26}`)
	timePattern = regexp.MustCompile(`"issued_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`)
	linkPattern = regexp.MustCompile(`"(gateway_decision|server_receipt)_hash":"sha256:[0-9a-f]{64}"`)
)

// stable replaces the generated ids of one run's entries by their order of
// first appearance, the gateway's timestamps by a constant and the audit
// events' hashes of the records they link (which cover those ids and
// times; checkLinks checks them) by their names, so that two runs of the
// same calls compare byte for byte.
func stable(entries []string) []string {
	ids := map[string]string{}
	out := make([]string, len(entries))
	for i, e := range entries {
		e = idPattern.ReplaceAllStringFunc(e, func(id string) string {
			if _, ok := ids[id]; !ok {
				ids[id] = fmt.Sprintf("%s#%d", idPattern.FindStringSubmatch(id)[1], len(ids))
			}
			return ids[id]
		})
		e = linkPattern.ReplaceAllString(e, `"${1}_hash":"H"`)
		out[i] = timePattern.ReplaceAllString(e, `"issued_at":"T"`)
	}
	return out
}

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
			c.Decision.Shadow = &policy.ShadowDecision{Rule: "shadow_rule", Action: policy.ActionDeny}
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

// TestSameRecordsAsReference: the Recorder writes the same entries, byte
// for byte (ids and timestamps aside), as the Recorder before canonical
// encoding and the tool cache (refRecorder), for calls covering every
// path: denied, shadow, unknown tool, declarations, inexact numbers,
// JSON-RPC errors, verified, unsigned, tampered and conflicting receipts,
// and strings that encoding/json escapes. Each call runs twice on the same
// Recorder, so the second one takes the cached tool facts.
func TestSameRecordsAsReference(t *testing.T) {
	for _, tc := range equivalenceCases() {
		t.Run(tc.name, func(t *testing.T) {
			run := func(rec recorder) {
				c := tc.call()
				if err := rec.Decided(c)(); err != nil {
					t.Fatal(err)
				}
				if c.Forwarded {
					resp := &jsonrpc.Message{Kind: jsonrpc.KindResponse}
					if tc.rpcErr {
						resp.Error = []byte(`{"code":-32000,"message":"failed"}`)
					} else {
						resp.Result = tc.result(t)
					}
					rec.Responded(c, resp)()
				}
			}
			cfg := func(led *memLedger) Config {
				return Config{Ledger: led, Keys: keys(), Require: tc.require, GatewayID: "gw"}
			}
			newLed, refLed := &memLedger{}, &memLedger{}
			r, err := New(cfg(newLed))
			if err != nil {
				t.Fatal(err)
			}
			ref := &refRecorder{cfg: r.cfg}
			ref.cfg.Ledger = refLed
			for range 2 {
				run(r)
				run(ref)
			}
			checkLinks(t, newLed)
			checkLinks(t, refLed)
			got, want := stable(newLed.strings()), stable(refLed.strings())
			if len(got) != len(want) {
				t.Fatalf("%d entries, want %d:\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("entry %d:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		})
	}
}

// strings returns the entries as "kind record_id payload".
func (m *memLedger) strings() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.entries {
		out = append(out, e.Kind+" "+e.RecordID+" "+string(e.Payload))
	}
	return out
}

// checkLinks checks that every audit event's gateway_decision_hash is the
// hash of the stored decision receipt that names the event, and its
// server_receipt_hash (present exactly when the event names a server
// receipt) that of the server receipt stored in the same group before it.
func checkLinks(t *testing.T, m *memLedger) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	type event struct {
		ID           string `json:"audit_event_id"`
		DecisionHash string `json:"gateway_decision_hash"`
		ReceiptID    string `json:"server_receipt_id"`
		ReceiptHash  string `json:"server_receipt_hash"`
	}
	decisions := map[string]string{} // audit_event_id named -> hash
	receipts := map[string]string{}  // receipt_id -> hash of the latest stored
	events := 0
	for _, e := range m.entries {
		h, err := evidence.Hash(e.Payload)
		if err != nil {
			t.Fatalf("%s %s: %v", e.Kind, e.RecordID, err)
		}
		switch e.Kind {
		case KindServerReceipt:
			receipts[e.RecordID] = h
		case KindGatewayDecision:
			var d struct {
				AuditEventID string `json:"audit_event_id"`
			}
			if err := json.Unmarshal(e.Payload, &d); err != nil {
				t.Fatal(err)
			}
			decisions[d.AuditEventID] = h
		case KindAuditEvent:
			events++
			var ev event
			if err := json.Unmarshal(e.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			if want, ok := decisions[ev.ID]; !ok || ev.DecisionHash != want {
				t.Errorf("event %s: gateway_decision_hash %q, the stored decision that names it hashes to %q", ev.ID, ev.DecisionHash, want)
			}
			if want := receipts[ev.ReceiptID]; ev.ReceiptID != "" && ev.ReceiptHash != want || ev.ReceiptID == "" && ev.ReceiptHash != "" {
				t.Errorf("event %s: server_receipt_hash %q for receipt %q, stored receipt hashes to %q", ev.ID, ev.ReceiptHash, ev.ReceiptID, want)
			}
		}
	}
	if events == 0 {
		t.Error("no audit event stored")
	}
}
