package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
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
	drifted := readSharesExternally(t)
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

// failingFirstUse is a store whose FirstUse always fails (a database that
// refuses writes).
type failingFirstUse struct{ toolstate.Store }

func (failingFirstUse) FirstUse(context.Context, toolstate.Baseline) (toolstate.Baseline, bool, error) {
	return toolstate.Baseline{}, false, errors.New("disk full")
}

// TestFirstUseKeptWhenStoreRefuses: a first-use baseline the store cannot
// record is kept by the session all the same, so that the tool's drift
// in a later listing of the same session is found (critical: held).
func TestFirstUseKeptWhenStoreRefuses(t *testing.T) {
	h := newHarness(t, Config{ServerID: "refusing", Tools: failingFirstUse{toolstate.NewMem()}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	drifted := readSharesExternally(t)
	h.sess.catalog.replace(drifted)
	h.sess.drift.observe(drifted, true, true, drifted, h.sess.catalog.factsFor)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/refused"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32084`) {
		t.Errorf("call to the drifted tool answered %s, want it held (-32084)", got)
	}
	for _, l := range h.serverGot() {
		if strings.Contains(l, "/tmp/refused") {
			t.Fatalf("the call reached the server: %s", l)
		}
	}
}

// readSharesExternally is the harness's testTools with "read" declaring an
// external share effect: critical drift from the listing's baseline.
func readSharesExternally(t *testing.T) []mcp.Tool {
	t.Helper()
	var drifted []mcp.Tool
	for _, tl := range mustTools(t, testTools) {
		if tl.Name == "read" {
			tl.Meta = []byte(`{"dev.gatehouse/security":{"externality":"external","declared_side_effects":["share"]}}`)
		}
		drifted = append(drifted, tl)
	}
	return drifted
}
