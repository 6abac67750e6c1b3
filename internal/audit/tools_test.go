package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// TestToolCacheFollowsTheDefinition: a tool whose definition changes under
// the same name (a new tools/list) gets facts of the new definition; the
// same definition gets the same facts; the cache stays bounded.
func TestToolCacheFollowsTheDefinition(t *testing.T) {
	tc := newToolCache(evidence.Keys{})
	c := call(true)
	a := tc.get(c)
	if b := tc.get(call(true)); b != a {
		t.Fatal("the same definition was computed again")
	}
	for _, change := range []func(*gateway.Call){
		func(c *gateway.Call) { c.Tool.Description = "reads files" },
		func(c *gateway.Call) {
			c.Tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"password":{}}}`)
		},
		func(c *gateway.Call) {
			c.Tool.Meta = json.RawMessage(`{"dev.gatehouse/security":{"side_effect":"destructive"}}`)
		},
		func(c *gateway.Call) { c.Tool.Annotations.ReadOnlyHint = nil },
		func(c *gateway.Call) { no := false; c.Tool.Annotations.OpenWorldHint = &no },
		func(c *gateway.Call) { c.Known = false },
	} {
		c2 := call(true)
		change(c2)
		f := tc.get(c2)
		if f == a || !f.key.matches(c2) || f.key.matches(c) {
			t.Fatalf("a changed definition got the old facts")
		}
		if want := newToolFacts(c2, evidence.Keys{}); f.schemaHash != want.schemaHash || f.descHash != want.descHash || f.confidence != want.confidence {
			t.Fatalf("cached facts differ from fresh ones: %+v, %+v", f, want)
		}
	}
	for i := range 2 * maxCachedTools {
		c := call(true)
		c.Tool.Description = fmt.Sprint(i)
		tc.get(c)
		if len(tc.m) > maxCachedTools {
			t.Fatalf("cache holds %d definitions", len(tc.m))
		}
	}
}

// TestRecorderConcurrent: calls of several tools recorded at once (run
// with -race) each get their own tool's hashes.
func TestRecorderConcurrent(t *testing.T) {
	led := &memLedger{}
	r, err := New(Config{Ledger: led, GatewayID: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	schemas := []string{`{"type":"object"}`, `{"type":"object","properties":{"a":{}}}`, `{"type":"string"}`}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				c := call(true)
				k := (g + i) % len(schemas)
				c.Tool.InputSchema = json.RawMessage(schemas[k])
				c.Principal.ID = fmt.Sprint(k) // names the schema in the receipt
				if err := r.Decided(c)(); err != nil {
					t.Error(err)
					return
				}
				if withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: []byte(`{"content":[]}`)})(); withhold {
					t.Error(why)
					return
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for _, s := range schemas {
		h, _ := evidence.Hash([]byte(s))
		want = append(want, h)
	}
	n := 0
	for _, e := range led.entries {
		if e.Kind != KindGatewayDecision {
			continue // the outcome names the decision; it has no tool hashes
		}
		var d evidence.GatewayDecisionReceipt
		if err := json.Unmarshal(e.Payload, &d); err != nil {
			t.Fatal(err)
		}
		var k int
		if _, err := fmt.Sscan(d.ActorRefID, &k); err != nil || d.ToolSchemaHash != want[k] {
			t.Fatalf("decision of schema %q has tool_schema_hash %q, want %q", d.ActorRefID, d.ToolSchemaHash, want[k])
		}
		n++
	}
	if n != 8*30 {
		t.Fatalf("%d decision records, want %d", n, 8*30)
	}
}

// TestDecisionRecordsNormalizedIntent: the gateway decision receipts of a
// call record the metadata_conflict warnings and the metadata_confidence
// of the tool's normalized intent (evidence.md §4, §6): the gateway's
// (Call.Intent) when it gives one, else the same values computed from the
// definition; a receipt that disagrees with the declaration adds its
// conflict on the outcome. A tool the catalogue no longer vouches for
// (Known false) is unknown, whatever it was listed as.
func TestDecisionRecordsNormalizedIntent(t *testing.T) {
	yes := true
	note := func(withIntent bool) *gateway.Call {
		c := call(true)
		c.Name = "note"
		c.Tool = mcp.Tool{Name: "note", Annotations: mcp.Annotations{ReadOnlyHint: &yes},
			Meta: json.RawMessage(`{"dev.gatehouse/security":{"declared_side_effects":["write"]}}`)}
		if withIntent {
			c.Intent = evidence.ToolIntentOf(&c.Tool)
		}
		return c
	}
	warnings := func(v map[string]any) []string {
		var out []string
		ws, _ := v["warnings"].([]any)
		for _, w := range ws {
			out = append(out, w.(string))
		}
		return out
	}
	conflicts := []string{"metadata_conflict:declared_side_effects", "metadata_conflict:side_effect"}
	for _, withIntent := range []bool{true, false} {
		led := &memLedger{}
		r, err := New(Config{Ledger: led, Keys: keys(), GatewayID: "gw"})
		if err != nil {
			t.Fatal(err)
		}
		c := note(withIntent)
		if err := r.Decided(c)(); err != nil {
			t.Fatal(err)
		}
		// The server's receipt declares read_only: one more
		// disagreement, on side_effect, already warned.
		res := signedResult(t, func(m map[string]any) { m["tool_name"] = "note"; m["side_effect"] = "read_only" })
		if withhold, why := r.Responded(c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: res})(); withhold {
			t.Fatal(why)
		}
		decision, outcome := led.payload(t, "gateway_decision", 0), led.payload(t, "gateway_outcome", 0)
		if got := warnings(decision); !reflect.DeepEqual(got, conflicts) {
			t.Errorf("intent %v: decision warnings = %v, want %v", withIntent, got, conflicts)
		}
		if got := decision["metadata_confidence"]; got != 0.45 {
			t.Errorf("intent %v: decision metadata_confidence = %v, want 0.45", withIntent, got)
		}
		// The outcome carries what the outcome adds: the receipt's
		// disagreement is on side_effect, already in the decision, so the
		// outcome repeats none of the decision's warnings.
		for _, w := range warnings(outcome) {
			if slices.Contains(conflicts, w) {
				t.Errorf("intent %v: outcome warnings %v repeat the decision's %s", withIntent, warnings(outcome), w)
			}
		}
		// verified receipt: effects [write, read] weigh 0.75 (annotation
		// adds read), side_effect mutating (meta) against the receipt's
		// read_only and readOnlyHint weighs 0.75, externality 0.75, the
		// rest unknown.
		if got := outcome["metadata_confidence"]; got != 0.45 {
			t.Errorf("intent %v: outcome metadata_confidence = %v, want 0.45", withIntent, got)
		}
	}
	// Stale: listed once, not trusted now.
	c := note(false)
	c.Known = false
	if f := newToolFacts(c, evidence.Keys{}); f.intent.SideEffect != "destructive" || f.confidence != 0 || f.intent.Warnings() != nil {
		t.Errorf("facts of a tool not known: %+v", f.intent)
	}
}

// TestRecordTools: the gateway's own tool states are appended as one
// group, each an RFC 8785 payload under its own audit_event_id; a write
// failure is returned.
func TestRecordTools(t *testing.T) {
	r, led := newRecorder(t)
	recs := []gateway.ToolRecord{
		{Kind: ledger.KindToolBaseline, Payload: toolstate.BaselineRecord{ServerID: "s", Tool: "b", Hash: "sha256:x", Origin: toolstate.OriginFirstUse, ApprovedBy: "gw", ApprovedAt: "t"}},
		{Kind: ledger.KindToolQuarantine, Payload: toolstate.QuarantineRecord{ServerID: "s", Tool: "a", Automatic: true, Rule: "drift", QuarantinedBy: "gw", Reason: "r", QuarantinedAt: "t"}},
	}
	if err := r.RecordTools(recs); err != nil {
		t.Fatal(err)
	}
	if len(led.groups) != 1 || led.groups[0] != 2 {
		t.Fatalf("groups %v, want one of 2", led.groups)
	}
	if got, want := string(led.entries[1].Payload), `{"automatic":true,"matched_rule":"drift","quarantined_at":"t","quarantined_by":"gw","reason":"r","server_id":"s","tool_name":"a"}`; got != want {
		t.Errorf("payload %s\nwant %s", got, want)
	}
	if led.entries[0].RecordID == led.entries[1].RecordID || !strings.HasPrefix(led.entries[0].RecordID, "audit_") {
		t.Errorf("record ids %q %q", led.entries[0].RecordID, led.entries[1].RecordID)
	}
	led.fail = errors.New("disk full")
	if err := r.RecordTools(recs[:1]); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failed write: %v", err)
	}
}
