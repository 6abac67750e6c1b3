package gateway

import (
	"encoding/json"
	"testing"
	"time"
)

// TestServerGoneAnswersAHeldBatch: under 2025-03-26 a batch whose tools/call
// names a tool the gateway does not know waits for the catalog fetch on a
// goroutine of its own. Its members are not pending yet (they are added
// when the batch is decided after the fetch), so when the server exits
// ServerGone answers none of them; the fetch then ends, the members are
// decided and added as pending, and the write of the rest of the batch to
// the dead server fails: the tools/call member is denied at best and the
// ping member is never answered (with the real binary, neither is, in some
// runs). Every request of the batch must get an answer: -32603 that the
// server exited (or, for the call, its denial).
func TestServerGoneAnswersAHeldBatch(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), FetchTimeout: time.Minute})
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r.got()
	r.serve(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`)
	r.recv()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	r.send(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	privateID(t, r.got()) // the batch is held: the fetch waits for an answer that never comes
	// The server exits: its stream ends, and the front end calls ServerGone.
	r.serverOut.Close()
	if err := r.sess.ServerGone("gatehouse: the server exited before answering"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	deadline := time.After(3 * time.Second)
	for len(got) < 2 {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("client stream ended; answered %v", got)
			}
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error *rpcError       `json:"error"`
			}
			if json.Unmarshal([]byte(l), &resp) == nil && resp.Error != nil {
				got[string(resp.ID)] = true
			}
		case <-deadline:
			t.Fatalf("after the server exited, the held batch's requests answered: %v; want 1 and 2 both answered", got)
		}
	}
}
