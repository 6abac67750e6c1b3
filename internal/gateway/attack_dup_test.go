package gateway

import (
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// TestDuplicateToolNameInOneListingIsNotReadOnly: a server lists the same
// tool name twice in one tools/list page, first as destructive, then as
// read-only. A client that keeps the first definition (a list shown to the
// user or model as received) sees a destructive tool, the gateway keeps the
// last (map assignment) and lets a readonly_agent call it. Toward the more
// dangerous value, a name defined twice must not be read-only (or must not
// be catalogued at all).
func TestDuplicateToolNameInOneListingIsNotReadOnly(t *testing.T) {
	r := newRig(t, Config{Policy: readonlyPolicy(t, ""), Principal: policy.Principal{Role: "readonly_agent"}})
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.got()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r.got()
	r.serve(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` +
		`{"name":"frobnicate","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true}},` +
		`{"name":"frobnicate","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`)
	r.recv()
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"frobnicate","arguments":{}}}`)
	select {
	case l := <-r.srvLines:
		if strings.Contains(l, `"tools/call"`) {
			t.Fatalf("a tool listed twice, once as destructive, reached the server for a readonly_agent: %s", l)
		}
	case l := <-r.lines:
		if !strings.Contains(l, `"error"`) {
			t.Fatalf("client got %s, want a denial", l)
		}
	}
}
