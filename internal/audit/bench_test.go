package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// discardLedger queues nothing: the Recorder's own cost.
type discardLedger struct{}

func (discardLedger) EnqueueAll(_ context.Context, recs []ledger.Record) (func() ([]ledger.Entry, error), error) {
	return func() ([]ledger.Entry, error) { return make([]ledger.Entry, len(recs)), nil }, nil
}

// benchCall is the call gatehouse-bench makes (bench/harness.go): the
// fakeserver's read-only echo tool with 1 KiB of arguments {"data":"..."}.
func benchCall() *gateway.Call {
	yes := true
	data := strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_", 16)[:1013]
	return &gateway.Call{
		Name: "echo", Known: true, ServerID: "fakeserver", ToolCallID: "req_1",
		Tool: mcp.Tool{
			Name:        "echo",
			Description: "Echoes its arguments back as structured content.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":true}`),
			Annotations: mcp.Annotations{ReadOnlyHint: &yes},
		},
		ID:        jsonrpc.NewID([]byte("1")),
		Arguments: []byte(`{"data":"` + data + `"}`),
		Principal: policy.Principal{ID: "bench", Role: "readonly_agent"},
		Decision:  policy.Decision{Action: policy.ActionAllow, Rule: "allow_read_only", Reason: "read-only tools are allowed", PolicyVersion: "sha256:0123"},
		Forwarded: true,
	}
}

// benchResult is the fakeserver's echo result for benchCall (no receipt:
// the gateway synthesizes one).
func benchResult(c *gateway.Call) []byte {
	return []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + string(c.Arguments) + `}`)
}

// BenchmarkRecorderCall is one forwarded call's evidence: Decided, then
// Responded with a result without a server receipt (5 ledger entries).
// "discard" measures the Recorder alone; "memledger" adds a real Ledger
// over a memory store (Enqueue's checks, the writer, leaf hashing).
func BenchmarkRecorderCall(b *testing.B) {
	run := func(b *testing.B, led Appender) {
		r, err := New(Config{Ledger: led, GatewayID: "bench-gw"})
		if err != nil {
			b.Fatal(err)
		}
		tmpl := benchCall()
		result := benchResult(tmpl)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			c := *tmpl
			if err := r.Decided(&c)(); err != nil {
				b.Fatal(err)
			}
			if withhold, why := r.Responded(&c, &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: result})(); withhold {
				b.Fatal(why)
			}
		}
	}
	b.Run("discard", func(b *testing.B) { run(b, discardLedger{}) })
	b.Run("memledger", func(b *testing.B) {
		l, err := ledger.New(context.Background(), ledger.NewMemStore(), ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close(context.Background())
		run(b, l)
	})
}
