package verify

import (
	"bytes"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
)

// TestLineSafeDecisionLogAccepted: request lines whose string id and tool
// name hold raw line breaks and controls (valid JSON: only C0 must be
// escaped in a string) get decision events that write them escaped; the
// receipts write them escaped too; the capture is still accepted, the
// receipt's rpc_id and the id projection being the id token written
// line-safe.
func TestLineSafeDecisionLogAccepted(t *testing.T) {
	calls := []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\u2028b\",\"method\":\"tools/call\",\"params\":{\"name\":\"t\u0085\u009b\x7f\",\"arguments\":{}}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\u2029\\u001b]0;x\\u0007\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\\u001b]0;pwned\\u0007\",\"arguments\":{}}}\r\n",
	}
	b := build(t, calls, receipts.Limits{}, nil)
	for _, r := range []string{"\u2028", "\u2029", "\u0085", "\u009b", "\x7f"} {
		if bytes.Contains(read(t, b.dlog), []byte(r)) {
			t.Fatalf("decision log holds %q as it is", r)
		}
		if bytes.Contains(read(t, b.receipts), []byte(r)) {
			t.Fatalf("receipts hold %q as it is", r)
		}
	}
	rep := capture(t, b)
	if !rep.OK {
		var text bytes.Buffer
		rep.WriteText(&text)
		t.Fatalf("capture rejected:\n%s", text.String())
	}
}
