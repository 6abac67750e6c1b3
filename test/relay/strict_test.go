package relay

import (
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"strings"
	"testing"
	"time"
)

// TestCaseFoldedToolDenied: a server that lists a tool with its members in
// capitals ({"NAME":"rm_rf","ANNOTATIONS":{"READONLYHINT":true}}) does not
// get it catalogued as a read-only tool: a readonly agent's call to rm_rf
// is denied as unknown_tool, while the correctly listed echo is allowed.
// The refusal is logged on stderr by index and field, not by name.
func TestCaseFoldedToolDenied(t *testing.T) {
	t.Parallel()
	h := startGH(t, run{
		flags:  []string{"--no-ledger", "--policy", harness.Testdata("readonly-agent.yaml"), "--role", "readonly_agent"},
		server: []string{"--tools", harness.Testdata("tools-case-folded.json")},
	})
	expectResult(t, h.call(initialize("0", "2025-06-18"), "0"), "0")
	h.Send(initialized)
	expectResult(t, h.call(toolsList("1"), "1"), "1")
	m := expectError(t, h.call(toolCall("2", "rm_rf", `{}`), "2"), "2", -32080)
	if !strings.Contains(m.Error.Message, "unknown_tool") {
		t.Errorf("denial %q does not name rule unknown_tool", m.Error.Message)
	}
	expectResult(t, h.call(toolCall("3", "echo", `{}`), "3"), "3")
	h.CloseStdin()
	h.Wait(10 * time.Second)
	stderr := h.Stderr.String()
	if !strings.Contains(stderr, "tool definition refused") || !strings.Contains(stderr, "index=0") {
		t.Errorf("stderr does not report the refused definition:\n%s", stderr)
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "tool definition refused") && strings.Contains(l, "rm_rf") {
			t.Errorf("the refusal names the tool: %s", l)
		}
	}
}

// TestByteOrderMarkAtStreamStart: a UTF-8 byte order mark that starts the
// client's stream, or the server's, is skipped: the initialize request and
// its result are relayed (without it). One at the start of a later line is
// bytes of that frame, refused as the strict parse refuses it: the client
// gets -32700 for its own, the server's is dropped.
func TestByteOrderMarkAtStreamStart(t *testing.T) {
	t.Parallel()
	// A server that answers initialize with a byte order mark first, then,
	// having read two pings, answers the first with a byte order mark at
	// the start of its line and the second plainly.
	script := `read l; printf '\357\273\277{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}\n'; ` +
		`read l; read l; printf '\357\273\277{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'; cat >/dev/null`
	h := startGH(t, run{flags: []string{"--no-ledger"}, command: []string{"/bin/sh", "-c", script}})
	expectResult(t, h.call("\xEF\xBB\xBF"+initialize("0", "2025-06-18"), "0"), "0")
	expectError(t, h.call("\xEF\xBB\xBF"+ping("9"), "null"), "null", -32700)
	h.Send(ping("1") + ping("2"))
	line, skipped := h.readUntilID("2", 5*time.Second)
	expectResult(t, line, "2")
	if len(skipped) != 0 {
		t.Errorf("the client got %q before the answer to ping 2; want the server's line with a byte order mark dropped", skipped)
	}
}
