package gateway

import (
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// TestCallInListingWindowIsNotForwarded: a listing updates the catalog
// before the drift tracker compares it (catalog.page or replace, then
// driftTracker.observe). A call decided in between sees the new
// definition as known, while the tracker still holds the old one's
// drift (none): it must not be forwarded as if the new definition had
// been compared with its baseline.
func TestCallInListingWindowIsNotForwarded(t *testing.T) {
	h := newHarness(t, Config{ServerID: "window"})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv() // first use: every listed tool gets its baseline
	var drifted []mcp.Tool
	for _, tl := range mustTools(t, testTools) {
		if tl.Name == "read" {
			tl.Meta = []byte(`{"dev.gatehouse/security":{"externality":"external","declared_side_effects":["share"]}}`)
		}
		drifted = append(drifted, tl)
	}
	// The catalog has the drifted listing; the tracker has not seen it.
	h.sess.catalog.replace(drifted)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/window"}}}` + "\n")
	got := h.recv()
	if !strings.Contains(got, `"error"`) {
		t.Errorf("call in the window answered %s, want a refusal", got)
	}
	for _, l := range h.serverGot() {
		if strings.Contains(l, "/tmp/window") {
			t.Fatalf("the call reached the server: %s", l)
		}
	}
}

func mustTools(t *testing.T, result string) []mcp.Tool {
	t.Helper()
	tools, _ := parseToolsPage([]byte(result))
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	return tools
}
