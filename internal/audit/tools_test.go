package audit

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
)

// TestToolCacheFollowsTheDefinition: a tool whose definition changes under
// the same name (a new tools/list) gets facts of the new definition; the
// same definition gets the same facts; the cache stays bounded.
func TestToolCacheFollowsTheDefinition(t *testing.T) {
	tc := newToolCache()
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
		if want := newToolFacts(c2); f.schemaHash != want.schemaHash || f.descHash != want.descHash || f.confidence != want.confidence {
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
