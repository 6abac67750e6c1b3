package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestBusyBatchKeepsItsOtherMembers: under 2025-03-26, when every place for
// calls held for the catalog fetch is taken (MaxHeld), a batch that needs
// the fetch is refused whole: each request member gets -32083, and every
// other member is dropped without a word. A member that is the client's
// response to a server request (here sampling/createMessage "s1") never
// reaches the server, which waits for it forever; a notification member
// (notifications/cancelled, notifications/initialized) is lost the same
// way. Only the members that need the fetch should be refused; the
// others go through as they would in any batch.
func TestBusyBatchKeepsItsOtherMembers(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), FetchTimeout: time.Minute, MaxHeld: 1})
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r.got()
	r.serve(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`)
	r.recv()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	// The one place is taken by a call waiting for a fetch that never ends.
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
	privateID(t, r.got())
	r.serve(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`)
	r.recv()
	r.send(`[{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"other","arguments":{}}}]`)
	if e := errorOf(t, r.recv(), "2"); e.Code != CodeBusy {
		t.Fatalf("answer %+v, want -32083", e)
	}
	select {
	case l := <-r.srvLines:
		if !strings.Contains(l, `"s1"`) {
			t.Fatalf("server got %s, want the client's response to s1", l)
		}
	case <-time.After(time.Second):
		t.Fatal("the client's response to the server's request s1, in a batch refused as busy, never reached the server")
	}
}
