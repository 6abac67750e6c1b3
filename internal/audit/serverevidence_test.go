package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// newRecorder returns a Recorder on a memLedger with the test keys.
func newRecorder(t *testing.T) (*Recorder, *memLedger) {
	t.Helper()
	led := &memLedger{}
	r, err := New(Config{Ledger: led, Keys: keys(), GatewayID: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	return r, led
}

// outcomeOf records one forwarded call c with result and returns its
// outcome record.
func outcomeOf(t *testing.T, r *Recorder, led *memLedger, c *gateway.Call, result []byte) map[string]any {
	t.Helper()
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: result})()
	return led.payload(t, KindGatewayOutcome, countKind(led, KindGatewayOutcome)-1)
}

func countKind(led *memLedger, kind string) int {
	led.mu.Lock()
	defer led.mu.Unlock()
	n := 0
	for _, e := range led.entries {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func TestToolHashConflicts(t *testing.T) {
	c := call(true)
	schemaHash, _ := evidence.Hash(c.Tool.InputSchema)
	descHash, _ := evidence.DescriptionHash(c.Tool.Description)
	other := evidence.HashPrefix + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name         string
		known        bool
		schema, desc string
		want         []string
	}{
		{"both match", true, schemaHash, descHash, nil},
		{"absent", true, "", "", nil},
		{"schema differs", true, other, descHash, []string{evidence.ConflictToolSchemaHash}},
		{"description differs", true, schemaHash, other, []string{evidence.ConflictToolDescriptionHash}},
		{"both differ", true, other, other, []string{evidence.ConflictToolSchemaHash, evidence.ConflictToolDescriptionHash}},
		{"tool not listed", false, other, other, []string{WarnToolHashesNotCompared}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, led := newRecorder(t)
			c := call(true)
			if !tc.known {
				c.Known, c.Tool = false, mcp.Tool{}
			}
			res := signedResult(t, func(m map[string]any) {
				if tc.schema != "" {
					m["tool_schema_hash"] = tc.schema
				}
				if tc.desc != "" {
					m["tool_description_hash"] = tc.desc
				}
			})
			out := outcomeOf(t, r, led, c, res)
			var got []string
			for _, w := range toStrings(out["warnings"]) {
				if strings.Contains(w, "tool_schema_hash") || strings.Contains(w, "tool_description_hash") {
					got = append(got, w)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
			if tc.known {
				// A conflict is a receipt conflict: the receipt is not a
				// normalization source and each lowers confidence by 0.1.
				want := evidence.Confidence(evidence.ToolIntentOf(&c.Tool), len(tc.want))
				if len(tc.want) > 0 && out["metadata_confidence"] != want {
					t.Errorf("metadata_confidence %v, want %v", out["metadata_confidence"], want)
				}
			}
			if s := out["server_receipt_status"]; s != "ok" {
				t.Errorf("status %v, want ok: a tool hash conflict is not tampering", s)
			}
		})
	}
}

// chainedResult returns a result with a signed receipt of ledger "L" at
// seq whose previous_hash is prev ("" for none).
func chainedResult(t *testing.T, seq int64, prev string) (result []byte, receiptHash string) {
	t.Helper()
	res := signedResult(t, func(m map[string]any) {
		m["receipt_id"] = fmt.Sprintf("mcp_rcpt_%d", seq)
		m["ledger_id"] = "L"
		m["ledger_seq"] = seq
		if prev != "" {
			m["previous_hash"] = prev
		}
	})
	raw, _, ok := evidence.Find(res, evidence.DefaultReceiptKeys)
	if !ok {
		t.Fatal("no receipt")
	}
	h, err := evidence.Hash(raw)
	if err != nil {
		t.Fatal(err)
	}
	return res, h
}

func TestReceiptChainInRecords(t *testing.T) {
	wrong := evidence.HashPrefix + strings.Repeat("e", 64)
	type step struct {
		seq    int64
		prev   string // "link" for the previous receipt's hash
		status string
		warn   string // a warning the outcome must carry
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"honest", []step{{1, "", "ok", ""}, {2, "link", "ok", ""}, {3, "link", "ok", ""}}},
		{"gap", []step{{1, "", "ok", ""}, {3, "link", "tampered", "gap: ledger_seq 2 missing before ledger_seq 3"}}},
		{"repeat", []step{{1, "", "ok", ""}, {2, "link", "ok", ""}, {2, "link", "tampered", "ledger_seq 2 repeats"}}},
		{"broken link", []step{{1, "", "ok", ""}, {2, wrong, "tampered", "previous_hash of ledger_seq 2 is not the hash of ledger_seq 1"}}},
		{"missing link", []step{{1, "", "ok", ""}, {2, "", "tampered", "previous_hash missing after ledger_seq 1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, led := newRecorder(t)
			last := ""
			for i, s := range tc.steps {
				prev := s.prev
				if prev == "link" {
					prev = last
				}
				res, h := chainedResult(t, s.seq, prev)
				last = h
				c := call(true)
				c.ID = jsonrpc.NewID(fmt.Appendf(nil, "%d", i+1))
				out := outcomeOf(t, r, led, c, res)
				if out["server_receipt_status"] != s.status {
					t.Errorf("step %d: status %v, want %s; warnings %q", i, out["server_receipt_status"], s.status, out["warnings"])
				}
				if s.warn != "" && !slices.ContainsFunc(toStrings(out["warnings"]), func(w string) bool { return strings.Contains(w, s.warn) }) {
					t.Errorf("step %d: warnings %q, want %q", i, out["warnings"], s.warn)
				}
				if out["server_receipt_hash"] != h {
					t.Errorf("step %d: server_receipt_hash %v is not the hash previous_hash links to (%s)", i, out["server_receipt_hash"], h)
				}
			}
			checkRecords(t, led)
		})
	}
}

// TestReceiptChainOutOfOrder: an honest server numbers two concurrent
// calls 2 and 3 and answers 3 first; neither is tampered.
func TestReceiptChainOutOfOrder(t *testing.T) {
	r, led := newRecorder(t)
	res1, h1 := chainedResult(t, 1, "")
	out := outcomeOf(t, r, led, call(true), res1)
	if out["server_receipt_status"] != "ok" {
		t.Fatalf("first: %v", out)
	}
	a, b := call(true), call(true)
	a.ID, b.ID = jsonrpc.NewID([]byte("2")), jsonrpc.NewID([]byte("3"))
	if err := r.Decided(a)(); err != nil {
		t.Fatal(err)
	}
	if err := r.Decided(b)(); err != nil {
		t.Fatal(err)
	}
	res2, h2 := chainedResult(t, 2, h1)
	res3, _ := chainedResult(t, 3, h2)
	r.Responded(b, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res3})()
	r.Responded(a, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res2})()
	for i := 1; i <= 2; i++ {
		out := led.payload(t, KindGatewayOutcome, i)
		if out["server_receipt_status"] != "ok" {
			t.Errorf("outcome %d: status %v, warnings %q", i, out["server_receipt_status"], out["warnings"])
		}
	}
	if w := toStrings(led.payload(t, KindGatewayOutcome, 1)["warnings"]); !slices.Contains(w, evidence.ChainPending) {
		t.Errorf("the receipt that came first has warnings %q, want %q", w, evidence.ChainPending)
	}
}

// toolWithReceipt is a listed tool whose security _meta is receipt.
func toolWithReceipt(name string, receipt []byte) mcp.Tool {
	return mcp.Tool{Name: name, Description: "publishes", InputSchema: json.RawMessage(`{"type":"object"}`),
		Meta: json.RawMessage(`{"dev.gatehouse/security":` + string(receipt) + `}`)}
}

// TestToolLevelReceipt: a decision made before forwarding references the
// listed tool's own receipt (the draft's Example Flow) and keeps it as
// listed.
func TestToolLevelReceipt(t *testing.T) {
	draft, err := os.ReadFile("testdata/draft_server_receipt.json")
	if err != nil {
		t.Fatal(err)
	}
	draft = bytes.TrimSpace(draft) // the value's bytes, as FindToolReceipt returns them
	signed := func(mutate func(map[string]any)) []byte {
		m := map[string]any{"receipt_id": "mcp_rcpt_tool_1", "schema_version": "0.1", "issued_at": "2026-11-30T10:00:00Z",
			"server_id": "srv", "tool_name": "publish_artifact", "tool_call_id": "listing", "side_effect": "mutating"}
		if mutate != nil {
			mutate(m)
		}
		b, _ := json.Marshal(m)
		s, err := evidence.Sign(b, evidence.AlgEd25519, ed25519.NewKeyFromSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		serverID string
		receipt  []byte
		id       string
		status   string
		warnings []string // warnings the decision must carry
	}{
		{"the draft's example", "roam-code-local", draft, "mcp_rcpt_roam_0001", "unsigned", []string{
			toolReceiptWarning + "tool_schema_hash: not \"sha256:\"", toolReceiptWarning + "status unsigned"}},
		{"signed with the server's key", "srv", signed(nil), "mcp_rcpt_tool_1", "ok", nil},
		{"tampered", "srv", []byte(strings.Replace(string(signed(nil)), `"mutating"`, `"read_only"`, 1)), "mcp_rcpt_tool_1", "tampered", []string{toolReceiptWarning + "status tampered"}},
		{"another server's", "srv", signed(func(m map[string]any) { m["server_id"] = "elsewhere" }), "mcp_rcpt_tool_1", "ok",
			[]string{toolReceiptWarning + evidence.ConflictServerID}},
		{"schema hash differs", "srv", signed(func(m map[string]any) { m["tool_schema_hash"] = evidence.HashPrefix + strings.Repeat("0", 64) }), "mcp_rcpt_tool_1", "ok",
			[]string{toolReceiptWarning + evidence.ConflictToolSchemaHash}},
		{"an id of the gateway's", "srv", signed(func(m map[string]any) { m["receipt_id"] = "mcp_rcpt_gw_x" }), "", "ok",
			[]string{toolReceiptWarning + "no usable receipt_id; referenced as "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, led := newRecorder(t)
			c := call(false) // held before forwarding
			c.Name, c.ServerID, c.Tool = "publish_artifact", tc.serverID, toolWithReceipt("publish_artifact", tc.receipt)
			c.Decision = policy.Decision{Action: policy.ActionDeny, Rule: "high_risk_externality_drift", Reason: "r", PolicyVersion: "1"}
			if err := r.Decided(c)(); err != nil {
				t.Fatal(err)
			}
			d := led.payload(t, KindGatewayDecision, 0)
			id, _ := d["server_receipt_id"].(string)
			if tc.id != "" && id != tc.id || tc.id == "" && !strings.HasPrefix(id, evidence.PrefixUnnamedReceipt) {
				t.Errorf("server_receipt_id %q, want %q", id, tc.id)
			}
			if d["server_receipt_status"] != tc.status {
				t.Errorf("server_receipt_status %v, want %s", d["server_receipt_status"], tc.status)
			}
			b64, _ := d["server_receipt_base64"].(string)
			got, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || string(got) != string(tc.receipt) {
				t.Errorf("server_receipt_base64 is not the receipt as listed: %q", got)
			}
			if h, _ := evidence.Hash(tc.receipt); d["server_receipt_hash"] != h {
				t.Errorf("server_receipt_hash %v, want %s", d["server_receipt_hash"], h)
			}
			ws := toStrings(d["warnings"])
			for _, w := range tc.warnings {
				if !slices.ContainsFunc(ws, func(x string) bool { return strings.HasPrefix(x, w) }) {
					t.Errorf("warnings %q, want %q", ws, w)
				}
			}
			if tc.warnings == nil && slices.ContainsFunc(ws, func(x string) bool { return strings.HasPrefix(x, toolReceiptWarning) }) {
				t.Errorf("warnings %q, want none about the tool-level receipt", ws)
			}
			checkRecords(t, led)
			if d["action"] != "deny" || d["response_scan_result"].(map[string]any)["status"] != "not_run" {
				t.Errorf("decision %v", d)
			}
		})
	}
	t.Run("no tool-level receipt", func(t *testing.T) {
		r, led := newRecorder(t)
		c := call(false)
		c.Tool = toolWithReceipt("read", []byte(`{"side_effect":"read_only"}`))
		if err := r.Decided(c)(); err != nil {
			t.Fatal(err)
		}
		d := led.payload(t, KindGatewayDecision, 0)
		if _, ok := d["server_receipt_id"]; ok {
			t.Errorf("a declaration without receipt_id is referenced: %v", d)
		}
	})
}

// TestServerEvidenceReachesPolicy: tool hash conflicts count in
// receipt.conflicts and a broken chain is receipt.status "tampered" for
// the policy's receipt rules.
func TestServerEvidenceReachesPolicy(t *testing.T) {
	pol, err := policy.Parse("r.yaml", []byte(`name: r
version: "1"
rules:
  - id: no_conflicting_receipts
    when: receipt.conflicts >= 2
    action: deny
    reason: the receipt disagrees with the listed tool
  - id: no_tampered_receipts
    when: receipt.status == "tampered"
    action: deny
    reason: the receipt chain is broken
`))
	if err != nil {
		t.Fatal(err)
	}
	other := evidence.HashPrefix + strings.Repeat("0", 64)
	led := &memLedger{}
	r, err := New(Config{Ledger: led, Keys: keys(), GatewayID: "gw", Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	c := call(true)
	if err := r.Decided(c)(); err != nil {
		t.Fatal(err)
	}
	res := signedResult(t, func(m map[string]any) { m["tool_schema_hash"], m["tool_description_hash"] = other, other })
	if withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res})(); !withhold || why != "the receipt disagrees with the listed tool" {
		t.Errorf("tool hash conflicts: withhold %v (%q)", withhold, why)
	}
	res1, _ := chainedResult(t, 1, "")
	res2, _ := chainedResult(t, 2, other)
	for i, res := range [][]byte{res1, res2} {
		c := call(true)
		c.ID = jsonrpc.NewID(fmt.Appendf(nil, "%d", i+10))
		if err := r.Decided(c)(); err != nil {
			t.Fatal(err)
		}
		withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res})()
		if withhold != (i == 1) || i == 1 && why != "the receipt chain is broken" {
			t.Errorf("chain receipt %d: withhold %v (%q)", i+1, withhold, why)
		}
	}
}
