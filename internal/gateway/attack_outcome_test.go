package gateway

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
)

// respondedCounter is an Evidence that counts the outcomes it is given.
type respondedCounter struct{ decided, responded atomic.Int32 }

func (r *respondedCounter) Decided(*Call) func() error {
	r.decided.Add(1)
	return func() error { return nil }
}

func (r *respondedCounter) Responded(*Call, *jsonrpc.Message) func() (bool, string) {
	r.responded.Add(1)
	return func() (bool, string) { return false, "" }
}

// TestRefusedResponseToAForwardedCallHasAnOutcome: a forwarded tools/call
// whose response the gateway refuses (it fails the strict parse, or is over
// the frame limit) is answered by the gateway with -32603 (failResponse),
// but its evidence never gets an outcome: Responded is not called, the
// ledger has the decision record alone, and `ledger verify` reports the
// call as "outcome unknown (the gateway stopped before the response, or a
// deferred outcome was lost)", though the gateway ran on and answered it.
// The outcome the client saw (the response refused) must be recorded.
func TestRefusedResponseToAForwardedCallHasAnOutcome(t *testing.T) {
	ev := &respondedCounter{}
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Evidence: ev})
	tools, _ := parseToolsPage([]byte(testTools))
	r.sess.catalog.replace(tools)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
	if got := r.got(); !strings.Contains(got, `"tools/call"`) {
		t.Fatalf("server got %s, want the call", got)
	}
	r.serve(`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":{}}`)
	if e := errorOf(t, r.recv(), "1"); e.Code != -32603 {
		t.Fatalf("answer %+v, want -32603", e)
	}
	time.Sleep(100 * time.Millisecond)
	if ev.decided.Load() != 1 || ev.responded.Load() != 1 {
		t.Fatalf("Decided %d, Responded %d times; want 1 and 1: the call the gateway answered has no outcome record", ev.decided.Load(), ev.responded.Load())
	}
}
