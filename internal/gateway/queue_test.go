package gateway

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// gatedEvidence makes a call's evidence durable only when the gate named by
// its arguments' "gate" member is opened; calls without a gate are durable
// at once.
type gatedEvidence struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func newGatedEvidence(names ...string) *gatedEvidence {
	g := &gatedEvidence{gates: map[string]chan struct{}{}}
	for _, n := range names {
		g.gates[n] = make(chan struct{})
	}
	return g
}

func (g *gatedEvidence) open(name string) { close(g.gates[name]) }

func (g *gatedEvidence) Decided(c *Call) func() error {
	var ch chan struct{}
	for k, v := range g.gates {
		if strings.Contains(string(c.Arguments), `"gate":"`+k+`"`) {
			ch = v
		}
	}
	return func() error {
		if ch != nil {
			<-ch
		}
		return nil
	}
}

func (g *gatedEvidence) Responded(*Call, *jsonrpc.Message) func() (bool, string) {
	return func() (bool, string) { return false, "" }
}

// waitServerGot reports whether the server received a line containing sub
// within d.
func (h *harness) waitServerGot(sub string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		for _, l := range h.serverGot() {
			if strings.Contains(l, sub) {
				return true
			}
		}
	}
	return false
}

func gatedCall(id, gate string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"read","arguments":{"gate":"` + gate + `"}}}` + "\n"
}

// TestQueueDoesNotHoldReadyFramesBehindEvidence: frames whose evidence is
// durable (and frames that need none) reach the server while a later
// call still waits for its ledger write (a regression found in review: the
// queue held its writer across the wait).
func TestQueueDoesNotHoldReadyFramesBehindEvidence(t *testing.T) {
	ev := newGatedEvidence("x", "b")
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Evidence: ev})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.send(gatedCall("X", "x") + gatedCall("A", "none") + `{"jsonrpc":"2.0","id":"P","method":"ping"}` + "\n" + gatedCall("B", "b"))
	time.Sleep(50 * time.Millisecond)
	ev.open("x")
	for _, id := range []string{`"id":"X"`, `"id":"A"`, `"id":"P"`} {
		if !h.waitServerGot(id, 2*time.Second) {
			t.Fatalf("%s did not reach the server while a later call waited for its evidence", id)
		}
	}
	if h.waitServerGot(`"id":"B"`, 50*time.Millisecond) {
		t.Fatal("B was forwarded before its evidence was durable")
	}
	ev.open("b")
	if !h.waitServerGot(`"id":"B"`, 2*time.Second) {
		t.Fatal("B not forwarded once durable")
	}
}

// TestDirectFramesDoNotWaitForABatchsEvidence: with Evidence on, a batch's
// members are decided in place and wait for the ledger; a progress
// notification that arrived before it still goes at once.
func TestDirectFramesDoNotWaitForABatchsEvidence(t *testing.T) {
	ev := newGatedEvidence("b")
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Evidence: ev})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.sess.mu.Lock()
	h.sess.revision = "2025-03-26"
	h.sess.mu.Unlock()
	h.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":1}}` + "\n" +
		"[" + strings.TrimSuffix(gatedCall("B", "b"), "\n") + "]\n")
	if !h.waitServerGot("notifications/progress", 2*time.Second) {
		t.Fatal("the progress notification waited behind the batch's evidence")
	}
	ev.open("b")
	if !h.waitServerGot(`"id":"B"`, 2*time.Second) {
		t.Fatal("the batch member was not forwarded once durable")
	}
}

// TestClientWriteFailureDoesNotStopDirectServerFrames: when an answer to
// the client cannot be written, frames written to the server directly
// (notifications/cancelled) still go; the queue gives up its hold on the
// server's writer (a regression found in review).
func TestClientWriteFailureDoesNotStopDirectServerFrames(t *testing.T) {
	ev := newGatedEvidence("x")
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Evidence: ev, Principal: policyPrincipal("readonly_agent")})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.clientR.Close() // the client stops reading: answers to it fail
	h.send(gatedCall("X", "x") +
		`{"jsonrpc":"2.0","id":"D","method":"tools/call","params":{"name":"write","arguments":{}}}` + "\n" +
		gatedCall("E", "none"))
	ev.open("x")
	if !h.waitServerGot(`"id":"X"`, 2*time.Second) {
		t.Fatal("X, durable and allowed, did not reach the server")
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"E"}}` + "\n")
	if !h.waitServerGot("notifications/cancelled", 2*time.Second) {
		t.Fatal("notifications/cancelled did not reach the server after a failed write to the client")
	}
}

func policyPrincipal(role string) policy.Principal { return policy.Principal{Role: role} }
