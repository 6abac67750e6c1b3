package receiptse2e

import (
	"fmt"
	"testing"
)

// TestServerExitWhileACallIsHeldKeepsTheCapture: a tools/call that waits
// for the gateway's own tools/list when the server exits is decided once
// the fetch ends (a decision event, a receipt). But stdio.Run returns
// without waiting for the goroutine of the held call, and the CLI closes
// the receipt sidecar and writes the session stop meanwhile: in some runs
// the decision event is in the log and its receipt is not (the sidecar was
// already closed, so not even the incomplete-capture diagnostic is
// written), and `gatehouse verify capture` rejects the gateway's own
// capture (event_population). Run a few times: the loss is a race.
func TestServerExitWhileACallIsHeldKeepsTheCapture(t *testing.T) {
	t.Parallel()
	for i := range 10 {
		f := newFiles(t)
		h := start(t, wrapRun{flags: f.flags(true), server: append(f.server(), "--list-delay-ms", "5000", "--exit-after-ms", "600", "--exit-code", "3")})
		h.play([]step{{line: initialize(`"init"`, "2025-06-18") + initialized, reply: `"init"`}})
		h.Send(toolCall(fmt.Sprint(i+1), "not_listed_yet", `{}`)) // held: the fetch is answered after the server has exited
		h.read()                                                  // answered: denied, or -32603 (the server exited)
		if code := h.wait(); code != 3 {
			t.Fatalf("run %d: exit %d, want the server's 3; stderr:\n%s", i, code, h.Tail())
		}
		if code, v := verifyCapture(t, f.receipts, f.log); code != 0 {
			t.Fatalf("run %d: the gateway's own capture is rejected (exit %d): %v", i, code, v.failed())
		}
	}
}
