package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// TestCaseFoldedToolIsNotCatalogued: a tools/list page whose definition
// spells its members in another case ("NAME", "ANNOTATIONS",
// "READONLYHINT") was catalogued by encoding/json as a read-only tool, so a
// readonly agent's call to it was allowed. The strict decoder skips it: the
// call is denied as unknown_tool (after the gateway's own fetch finds it
// no better), and never reaches the server. The valid tool of the same page
// is catalogued.
func TestCaseFoldedToolIsNotCatalogued(t *testing.T) {
	var logBuf syncBuffer
	p := newPipes(t, Config{Policy: readonlyPolicy(t, ""), Principal: policy.Principal{Role: "readonly_agent"}, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	const page = `{"tools":[{"NAME":"rm_rf","ANNOTATIONS":{"READONLYHINT":true}},{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
	go io.WriteString(p.client, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	readLine(t, p.toServer)
	go io.WriteString(p.server, `{"jsonrpc":"2.0","id":1,"result":`+page+"}\n")
	if got := readLine(t, p.toClient); !strings.Contains(got, `"NAME":"rm_rf"`) {
		t.Fatalf("client got %q, want the page relayed unchanged", got)
	}

	go io.WriteString(p.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`+"\n")
	got := readLine(t, p.toServer)
	m, err := jsonrpc.Parse([]byte(got))
	if err != nil || m.Method != "tools/list" {
		t.Fatalf("server got %q; want the gateway's own tools/list (the call must not be forwarded: rm_rf is not a known read-only tool)", got)
	}
	go io.WriteString(p.server, `{"jsonrpc":"2.0","id":`+m.ID.String()+`,"result":`+page+"}\n")
	if got := readLine(t, p.toClient); !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, RuleUnknownTool) {
		t.Fatalf("client got %q, want the call denied with rule %s", got, RuleUnknownTool)
	}

	// The page's valid tool was catalogued: its call goes to the server.
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{}}}` + "\n"
	go io.WriteString(p.client, call)
	if got := readLine(t, p.toServer); got != call {
		t.Fatalf("server got %q, want the allowed call %q", got, call)
	}
	// Each refusal is logged by index, name length and field: never the
	// name the server gave.
	refusals := 0
	for _, l := range strings.Split(logBuf.String(), "\n") {
		if !strings.Contains(l, "tool definition refused") {
			continue
		}
		refusals++
		if !strings.Contains(l, "index=0") || !strings.Contains(l, "field=/name") || strings.Contains(l, "rm_rf") {
			t.Fatalf("log line %q, want the refusal by index and field, without the name", l)
		}
	}
	if refusals != 2 {
		t.Fatalf("%d refusals logged, want 2 (the client's listing and the gateway's fetch):\n%s", refusals, logBuf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the session's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
