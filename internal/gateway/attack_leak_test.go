package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
)

// TestRefusedFrameContentNotRecorded: a frame refused by the strict parse
// is recorded by its size and why, never its content (record: "Frame
// contents are never recorded"; handleServer: "the content is not (it may
// hold secrets)"). But the reason recorded is the parser's message, which
// quotes the frame: a duplicated member name whole ("duplicate member name
// sk-live-4242"), and the bytes after a bad escape ("invalid surrogate
// pair `\udc00sk-liv`"). The secret reaches the decision log (a shareable
// record) and stderr, from either side.
func TestRefusedFrameContentNotRecorded(t *testing.T) {
	for _, tc := range []struct{ name, from, frame string }{
		{"server duplicate name", "s", `{"jsonrpc":"2.0","id":5,"result":{"sk-live-4242":1,"sk-live-4242":2}}`},
		{"server bad surrogate", "s", `{"jsonrpc":"2.0","id":5,"result":{"k":"\udc00sk-live-4242"}}`},
		{"client duplicate name", "c", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read","arguments":{"sk-live-4242":1,"sk-live-4242":2}}}`},
		{"client bad surrogate", "c", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read","arguments":{"k":"\udc00sk-live-4242"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, path := openLog(t)
			r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Log: log})
			r.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
			r.got()
			if tc.from == "s" {
				r.serve(tc.frame)
			} else {
				r.send(tc.frame)
			}
			r.recv() // the answer (the client's own bytes may be echoed to it)
			deadline := time.Now().Add(5 * time.Second)
			var rejected []string
			for len(rejected) == 0 && time.Now().Before(deadline) {
				for _, ev := range logEvents(t, path, decisionlog.TypeFrameRejected) {
					rejected = append(rejected, string(ev))
				}
				time.Sleep(5 * time.Millisecond)
			}
			for _, ev := range rejected {
				if strings.Contains(ev, "sk-liv") {
					t.Errorf("the frame.rejected event records the frame's content: %s", ev)
				}
			}
		})
	}
}
