package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// memLedger records appends in memory.
type memLedger struct {
	mu      sync.Mutex
	entries []ledger.Entry
	groups  []int // the size of every EnqueueAll group, in order
	fail    error
}

func (m *memLedger) EnqueueAll(_ context.Context, recs []ledger.Record) (func() ([]ledger.Entry, error), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		err := m.fail
		return func() ([]ledger.Entry, error) { return nil, err }, nil
	}
	var es []ledger.Entry
	for _, rc := range recs {
		e := ledger.Entry{Seq: int64(len(m.entries)), Kind: rc.Kind, RecordID: rc.RecordID, Payload: append([]byte(nil), rc.Payload...)}
		m.entries = append(m.entries, e)
		es = append(es, e)
	}
	m.groups = append(m.groups, len(recs))
	return func() ([]ledger.Entry, error) { return es, nil }, nil
}

func (m *memLedger) kinds() string {
	var k []string
	for _, e := range m.entries {
		k = append(k, e.Kind)
	}
	return strings.Join(k, ",")
}

func (m *memLedger) payload(t *testing.T, kind string, n int) map[string]any {
	t.Helper()
	for _, e := range m.entries {
		if e.Kind == kind {
			if n == 0 {
				var v map[string]any
				if err := json.Unmarshal(e.Payload, &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			n--
		}
	}
	t.Fatalf("no %s entry #%d in %s", kind, n, m.kinds())
	return nil
}

var seed = make([]byte, ed25519.SeedSize)

func call(forwarded bool) *gateway.Call {
	yes := true
	return &gateway.Call{
		Name: "read", Known: true, ServerID: "srv", ToolCallID: "req_1",
		Tool:      mcp.Tool{Name: "read", Description: "reads", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: mcp.Annotations{ReadOnlyHint: &yes}},
		ID:        jsonrpc.NewID([]byte("1")),
		Arguments: []byte(`{"path":"/a"}`),
		Principal: policy.Principal{ID: "u1", Role: "readonly_agent"},
		Decision:  policy.Decision{Action: policy.ActionAllow, Rule: "default", Reason: "r", PolicyVersion: "1"},
		Forwarded: forwarded,
	}
}

func signedResult(t *testing.T, mutate func(map[string]any)) []byte {
	t.Helper()
	r := map[string]any{
		"receipt_id": "mcp_rcpt_1", "schema_version": "0.1", "issued_at": "2026-11-30T10:00:00Z",
		"server_id": "srv", "tool_name": "read", "tool_call_id": "req_1",
	}
	if mutate != nil {
		mutate(r)
	}
	b, _ := json.Marshal(r)
	signed, err := evidence.Sign(b, evidence.AlgEd25519, ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"content":[{"type":"text","text":"ok"}],"_meta":{"dev.gatehouse/security-receipt":` + string(signed) + `}}`)
}

func keys() evidence.Keys {
	return evidence.Keys{Ed25519: map[string]ed25519.PublicKey{"srv": ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)}}
}

func TestLineageAndStatuses(t *testing.T) {
	tamper := func(t *testing.T) []byte {
		b := signedResult(t, nil)
		return []byte(strings.Replace(string(b), `"tool_name":"read"`, `"tool_name":"rm"`, 1))
	}
	for _, tc := range []struct {
		name     string
		result   func(t *testing.T) []byte
		require  evidence.Requirement
		status   string
		withhold bool
		action   string
	}{
		{"verified", func(t *testing.T) []byte { return signedResult(t, nil) }, "verified", "ok", false, "allow"},
		{"no receipt, none required", func(*testing.T) []byte { return []byte(`{"content":[]}`) }, "none", "empty", false, "allow"},
		{"no receipt, present required", func(*testing.T) []byte { return []byte(`{"content":[]}`) }, "present", "empty", true, "deny"},
		{"tampered", tamper, "present", "tampered", true, "deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := &memLedger{}
			r, err := New(Config{Ledger: led, Keys: keys(), Require: tc.require, GatewayID: "gw"})
			if err != nil {
				t.Fatal(err)
			}
			c := call(true)
			if err := r.Decided(c)(); err != nil {
				t.Fatal(err)
			}
			res := tc.result(t)
			withhold, _ := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res})()
			if withhold != tc.withhold {
				t.Fatalf("withhold = %v, want %v", withhold, tc.withhold)
			}
			// Two records, one entry each (evidence.md §9.1).
			if got, want := led.kinds(), "gateway_decision,gateway_outcome"; got != want {
				t.Fatalf("entries %s, want %s", got, want)
			}
			if fmt.Sprint(led.groups) != "[1 1]" {
				t.Fatalf("groups %v, want [1 1] (decision, outcome)", led.groups)
			}
			out := led.payload(t, KindGatewayOutcome, 0)
			if out["server_receipt_status"] != tc.status || out["action"] != tc.action || out["phase"] != "outcome" {
				t.Fatalf("outcome receipt status %v action %v phase %v, want %s %s outcome", out["server_receipt_status"], out["action"], out["phase"], tc.status, tc.action)
			}
			dec := led.payload(t, KindGatewayDecision, 0)
			if dec["input_hash"] == "" || dec["tool_schema_hash"] == nil || dec["phase"] != "decision" {
				t.Fatalf("decision receipt %v", dec)
			}
			// One id, one record; the outcome names the decision it
			// completes; each entry is the audit event its record names.
			if dec["gateway_decision_id"] == out["gateway_decision_id"] || out["completes_decision_id"] != dec["gateway_decision_id"] {
				t.Fatalf("outcome %v / decision %v: ids not distinct or not linked", out["gateway_decision_id"], dec["gateway_decision_id"])
			}
			checkRecords(t, led)
			// The server's receipt, when it sent one, is kept as received.
			if found, _, ok := evidence.Find(res, evidence.DefaultReceiptKeys); ok {
				if got := storedReceipt(t, out); !bytes.Equal(got, found) {
					t.Fatalf("stored server receipt\n%s\nwant the bytes received\n%s", got, found)
				}
			} else if sr, _ := out["synthesized_receipt"].(map[string]any); sr == nil || sr["receipt_id"] != out["server_receipt_id"] {
				t.Fatalf("no synthesized receipt named by server_receipt_id: %v", out)
			}
		})
	}
}

// TestReceiptWithoutUsableID: a server receipt whose receipt_id is missing
// or cannot be a ledger record id is still stored, unchanged, in the
// outcome record, which references it under an id of the gateway's, with a
// warning; the call is not failed for it.
func TestReceiptWithoutUsableID(t *testing.T) {
	for name, mutate := range map[string]func(map[string]any){
		"missing":           func(m map[string]any) { delete(m, "receipt_id") },
		"not a string":      func(m map[string]any) { m["receipt_id"] = 7 },
		"control character": func(m map[string]any) { m["receipt_id"] = "r\n1" },
		"too long":          func(m map[string]any) { m["receipt_id"] = strings.Repeat("r", ledger.MaxRecordID+1) },
		"gateway's prefix": func(m map[string]any) {
			m["receipt_id"] = evidence.PrefixSynthesizedReceipt + "01M8PHBNSK235C3GXTW74EHMGT"
		},
		"unnamed prefix": func(m map[string]any) { m["receipt_id"] = evidence.PrefixUnnamedReceipt + "01M8PHBNSK235C3GXTW74EHMGT" },
	} {
		t.Run(name, func(t *testing.T) {
			led := &memLedger{}
			r, err := New(Config{Ledger: led, Keys: keys(), Require: evidence.RequirePresent, GatewayID: "gw"})
			if err != nil {
				t.Fatal(err)
			}
			c := call(true)
			if err := r.Decided(c)(); err != nil {
				t.Fatal(err)
			}
			res := signedResult(t, mutate)
			if withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res})(); withhold {
				t.Fatalf("withheld: %s", why)
			}
			if got, want := led.kinds(), "gateway_decision,gateway_outcome"; got != want {
				t.Fatalf("entries %s, want %s", got, want)
			}
			out := led.payload(t, KindGatewayOutcome, 0)
			id, _ := out["server_receipt_id"].(string)
			if !strings.HasPrefix(id, evidence.PrefixUnnamedReceipt) || id == evidence.PrefixUnnamedReceipt+"01M8PHBNSK235C3GXTW74EHMGT" {
				t.Fatalf("server receipt referenced as %q", id)
			}
			found, _, _ := evidence.Find(res, evidence.DefaultReceiptKeys)
			if got := storedReceipt(t, out); !bytes.Equal(got, found) {
				t.Fatalf("stored server receipt %s, want %s", got, found)
			}
			if !strings.Contains(strings.Join(toStrings(out["warnings"]), ";"), "no usable receipt_id; referenced as "+id) {
				t.Fatalf("no warning: %v", out["warnings"])
			}
			checkRecords(t, led)
		})
	}
}

func TestDeniedCallIsHeldNotRun(t *testing.T) {
	led := &memLedger{}
	r, _ := New(Config{Ledger: led})
	c := call(false)
	c.Decision.Action = policy.ActionDeny
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	if led.kinds() != "gateway_decision" {
		t.Fatalf("entries %s", led.kinds())
	}
	d := led.payload(t, KindGatewayDecision, 0)
	scan, _ := d["response_scan_result"].(map[string]any)
	if d["action"] != "deny" || scan["status"] != "not_run" || scan["reason"] != evidence.ReasonHeldBeforeForwarding {
		t.Fatalf("denied receipt %v", d)
	}
}

func TestInexactNumbersAreAnErrorPathNotRounded(t *testing.T) {
	led := &memLedger{}
	r, _ := New(Config{Ledger: led})
	c := call(true)
	c.Arguments = []byte(`{"n":12345678901234567890}`)
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	d := led.payload(t, KindGatewayDecision, 0)
	if _, ok := d["input_hash"]; ok {
		t.Fatalf("input_hash %v computed from a number JSON cannot carry", d["input_hash"])
	}
	if !strings.Contains(strings.Join(toStrings(d["warnings"]), ";"), "input_hash not computed") {
		t.Fatalf("no warning: %v", d["warnings"])
	}
}

func TestLedgerFailureIsReported(t *testing.T) {
	led := &memLedger{fail: ledger.ErrWrite}
	r, _ := New(Config{Ledger: led})
	if err := r.Decided(call(true))(); err == nil {
		t.Fatal("Decided succeeded with a failing ledger")
	}
	c := call(true)
	c.State = &state{receipt: &evidence.GatewayDecisionReceipt{}}
	if withhold, _ := r.Responded(c, &jsonrpc.Message{Result: []byte(`{}`)})(); !withhold {
		t.Fatal("an outcome that could not be recorded was relayed")
	}
}

func toStrings(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, e := range a {
			out = append(out, e.(string))
		}
	}
	return out
}

// TestReceiptRulesDecideTheOutcome: the policy's receipt rules decide a
// forwarded call again on its response: a deny withholds the response and
// is recorded in the outcome receipt with its rule; a monitor and a shadow
// rule leave it through, recorded (the shadow rule in shadow_decisions);
// the request's phase is unaffected. In shadow mode nothing is withheld:
// the outcome is allow and every would-have decision, receipts.require's
// included, is in shadow_decisions, with shadow_mode true.
func TestReceiptRulesDecideTheOutcome(t *testing.T) {
	pol, err := policy.Parse("r.yaml", []byte(`name: r
version: "1"
rules:
  - id: signed_receipts_only
    tools: ["read"]
    when: receipt.status == "unsigned" && principal.role == "readonly_agent"
    action: deny
    reason: unsigned receipts are not accepted from this server
  - id: watch_empty
    when: receipt.status == "empty"
    action: monitor
    reason: the server sent no receipt
  - id: strict_trial
    when: receipt.status != "ok"
    action: deny
    reason: only verified receipts
    mode: shadow
`))
	if err != nil {
		t.Fatal(err)
	}
	unsigned := func(t *testing.T) []byte {
		return []byte(`{"_meta":{"dev.gatehouse/security-receipt":{"receipt_id":"r9","server_id":"srv","tool_name":"read","tool_call_id":"req_1","schema_version":"0.1","issued_at":"2026-11-30T10:00:00Z"}}}`)
	}
	for _, tc := range []struct {
		name       string
		shadowMode bool
		require    evidence.Requirement
		result     func(t *testing.T) []byte
		withhold   bool
		action     string
		rule       string
		warning    string
		shadows    string // the outcome's shadow_decisions: action/rule/stage, joined by ", "
	}{
		{"verified", false, "", func(t *testing.T) []byte { return signedResult(t, nil) }, false, "allow", "default", "", ""},
		{"unsigned", false, "", unsigned, true, "deny", "signed_receipts_only", "", "deny/strict_trial/evidence"},
		{"none", false, "", func(*testing.T) []byte { return []byte(`{"content":[]}`) }, false, "monitor", "watch_empty", "receipt rule watch_empty: the server sent no receipt", "deny/strict_trial/evidence"},
		{"unsigned in shadow mode", true, evidence.RequireVerified, unsigned, false, "allow", "default", "",
			"deny/receipts.require/evidence, deny/signed_receipts_only/evidence, deny/strict_trial/evidence"},
		{"none in shadow mode", true, "", func(*testing.T) []byte { return []byte(`{"content":[]}`) }, false, "allow", "default", "",
			"monitor/watch_empty/evidence, deny/strict_trial/evidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := &memLedger{}
			r, err := New(Config{Ledger: led, Keys: keys(), GatewayID: "gw", Policy: pol, Require: tc.require})
			if err != nil {
				t.Fatal(err)
			}
			c := call(true)
			c.ShadowMode = tc.shadowMode
			c.DecisionEventID = "0b6f6bb0-0000-4000-8000-000000000001"
			if err := r.Decided(c)(); err != nil {
				t.Fatal(err)
			}
			withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: tc.result(t)})()
			if withhold != tc.withhold || withhold && why != "unsigned receipts are not accepted from this server" {
				t.Fatalf("withhold %v (%q), want %v", withhold, why, tc.withhold)
			}
			dec := led.payload(t, KindGatewayDecision, 0)
			out := led.payload(t, KindGatewayOutcome, 0)
			if dec["decision_event_id"] != c.DecisionEventID || out["decision_event_id"] != nil {
				t.Errorf("decision_event_id: decision %v outcome %v, want %s on the decision only", dec["decision_event_id"], out["decision_event_id"], c.DecisionEventID)
			}
			if dec["action"] != "allow" || dec["matched_rule"] != "default" {
				t.Errorf("the request's receipt changed: %v %v", dec["action"], dec["matched_rule"])
			}
			if out["action"] != tc.action || out["matched_rule"] != tc.rule {
				t.Errorf("outcome: action %v rule %v, want %s %s", out["action"], out["matched_rule"], tc.action, tc.rule)
			}
			if ws := strings.Join(toStrings(out["warnings"]), "; "); tc.warning != "" && !strings.Contains(ws, tc.warning) {
				t.Errorf("outcome warnings %q lack %q", ws, tc.warning)
			}
			var shadows []string
			list, _ := out["shadow_decisions"].([]any)
			for _, x := range list {
				m := x.(map[string]any)
				shadows = append(shadows, fmt.Sprintf("%v/%v/%v", m["action"], m["matched_rule"], m["stage"]))
			}
			if got := strings.Join(shadows, ", "); got != tc.shadows {
				t.Errorf("outcome shadow_decisions %q, want %q", got, tc.shadows)
			}
			if out["shadow_mode"] != tc.shadowMode || dec["shadow_mode"] != tc.shadowMode {
				t.Errorf("shadow_mode: decision %v outcome %v, want %v", dec["shadow_mode"], out["shadow_mode"], tc.shadowMode)
			}
		})
	}
}

// deferLedger is a memLedger whose appends are durable only when release
// is closed, and which records which groups were deferred.
type deferLedger struct {
	memLedger
	release  chan struct{}
	deferred []time.Duration // per group, 0: not deferred
}

func (d *deferLedger) enqueue(ctx context.Context, recs []ledger.Record, within time.Duration) (func() ([]ledger.Entry, error), error) {
	w, err := d.memLedger.EnqueueAll(ctx, recs)
	d.mu.Lock()
	d.deferred = append(d.deferred, within)
	d.mu.Unlock()
	return func() ([]ledger.Entry, error) { <-d.release; return w() }, err
}

func (d *deferLedger) EnqueueAll(ctx context.Context, recs []ledger.Record) (func() ([]ledger.Entry, error), error) {
	return d.enqueue(ctx, recs, 0)
}

func (d *deferLedger) EnqueueAllDeferred(ctx context.Context, recs []ledger.Record, within time.Duration) (func() ([]ledger.Entry, error), error) {
	return d.enqueue(ctx, recs, within)
}

// TestDeferOutcome: with Config.DeferOutcome the outcome record is queued
// deferred (it rides the next group commit) and the response is released
// without waiting for it to be durable, while the decision is still
// awaited; receipts.require still withholds. Without it, the outcome is
// awaited. New refuses DeferOutcome on a ledger that cannot defer.
func TestDeferOutcome(t *testing.T) {
	if _, err := New(Config{Ledger: &memLedger{}, DeferOutcome: time.Millisecond}); err == nil {
		t.Fatal("DeferOutcome accepted on a ledger that cannot defer")
	}
	for _, tc := range []struct {
		name         string
		defer_       time.Duration
		require      evidence.Requirement
		wantWithhold bool
	}{
		{"deferred", 10 * time.Millisecond, evidence.RequireNone, false},
		{"deferred, withheld by receipts.require", 10 * time.Millisecond, evidence.RequirePresent, true},
		{"durable before the response", 0, evidence.RequireNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := &deferLedger{release: make(chan struct{})}
			r, err := New(Config{Ledger: led, GatewayID: "gw", DeferOutcome: tc.defer_, Require: tc.require})
			if err != nil {
				t.Fatal(err)
			}
			c := call(true)
			decided := make(chan error, 1)
			go func() { decided <- r.Decided(c)() }()
			select {
			case <-decided:
				t.Fatal("Decided's wait returned before the decision was durable")
			case <-time.After(20 * time.Millisecond):
			}
			close(led.release) // from now on everything is durable at once
			if err := <-decided; err != nil {
				t.Fatal(err)
			}
			led.release = make(chan struct{}) // the outcome is not durable until closed again
			wait := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: []byte(`{"content":[]}`)})
			got := make(chan bool, 1)
			go func() { w, _ := wait(); got <- w }()
			select {
			case w := <-got:
				if tc.defer_ == 0 {
					t.Fatal("the response was released before its outcome was durable")
				}
				if w != tc.wantWithhold {
					t.Fatalf("withhold %v, want %v", w, tc.wantWithhold)
				}
			case <-time.After(50 * time.Millisecond):
				if tc.defer_ > 0 {
					t.Fatal("a deferred outcome held the response back")
				}
			}
			close(led.release)
			if tc.defer_ == 0 {
				if w := <-got; w != tc.wantWithhold {
					t.Fatalf("withhold %v, want %v", w, tc.wantWithhold)
				}
			}
			if want := fmt.Sprint([]time.Duration{0, tc.defer_}); fmt.Sprint(led.deferred) != want {
				t.Fatalf("groups deferred %v, want %s (decision never deferred)", led.deferred, want)
			}
			if led.kinds() != "gateway_decision,gateway_outcome" {
				t.Fatalf("entries %s", led.kinds())
			}
		})
	}
}
