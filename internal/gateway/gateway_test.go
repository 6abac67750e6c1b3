package gateway

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

const testTools = `{"tools":[` +
	`{"name":"read","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":true}},` +
	`{"name":"write","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":false}},` +
	// read-only by its annotations, writing by its _meta declaration: the
	// gateway normalizes it to mutating (evidence.md §4; intent_test.go).
	`{"name":"note","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"dev.gatehouse/security":{"declared_side_effects":["write"]}}}]}`

// harness runs a Session between an in-memory client and an in-memory
// server. The server answers tools/list with testTools and echoes every
// other request's id with an empty result; it records every line it gets.
type harness struct {
	t        *testing.T
	toGW     *io.PipeWriter // client -> gateway
	fromGW   *bufio.Reader  // gateway -> client
	clientR  *io.PipeReader // the client's end of fromGW; closing it fails writes to the client
	mu       sync.Mutex
	received []string // lines the server got
	sess     *Session
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	cr, cw := io.Pipe() // client writes, gateway reads
	gr, gw := io.Pipe() // gateway writes to client
	sr, sw := io.Pipe() // gateway writes to server
	or, ow := io.Pipe() // server writes to gateway
	h := &harness{t: t, toGW: cw, fromGW: bufio.NewReader(gr), clientR: gr}
	h.sess = New(cfg, transport.NewStream(cr, gw, 0, nil), transport.NewStream(or, sw, 0, nil))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = h.sess.RunClient(ctx); sw.Close() }()
	go func() { _ = h.sess.RunServer(ctx) }()
	go func() { // the fake server
		br := bufio.NewReader(sr)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				ow.Close()
				return
			}
			h.mu.Lock()
			h.received = append(h.received, line)
			h.mu.Unlock()
			m, perr := jsonrpc.Parse([]byte(line))
			if perr != nil || m.Kind != jsonrpc.KindRequest {
				continue
			}
			result := `{}`
			if m.Method == "tools/list" {
				result = testTools
			}
			_, _ = io.WriteString(ow, `{"jsonrpc":"2.0","id":`+m.ID.String()+`,"result":`+result+"}\n")
		}
	}()
	t.Cleanup(func() { cancel(); cw.Close(); gr.Close(); or.Close() })
	return h
}

func (h *harness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.toGW, line); err != nil {
		h.t.Fatalf("write to gateway: %v", err)
	}
}

func (h *harness) recv() string {
	h.t.Helper()
	ch := make(chan string, 1)
	go func() {
		s, _ := h.fromGW.ReadString('\n')
		ch <- s
	}()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		h.t.Fatal("no frame from the gateway within 5s")
		return ""
	}
}

func (h *harness) serverGot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.received...)
}

func readonlyPolicy(t *testing.T, extra string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(`name: t
version: "1"
defaults:
  action: allow
`+extra+`
rules:
  - id: readonly_agent_no_mutating_tools
    when: principal.role == "readonly_agent" && tool.side_effect != "read_only"
    action: deny
    reason: readonly agents may not write
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecisionLogFailureFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		extra    string
		wantCode string
		forward  bool
	}{
		{"fail_closed (default)", "", `"code":-32081`, false},
		{"fail_open", "  on_log_failure: fail_open\n", `"result"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, err := decisionlog.Open(filepath.Join(dir, "d.jsonl"), "gatehouse://test/x")
			if err != nil {
				t.Fatal(err)
			}
			log.Close() // every write now fails
			h := newHarness(t, Config{Policy: readonlyPolicy(t, tc.extra), Log: log, Principal: policy.Principal{Role: "readonly_agent"}})
			h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			h.recv()
			h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"k":"sk-secretvalue"}}}` + "\n")
			got := h.recv()
			if !strings.Contains(got, tc.wantCode) || !strings.Contains(got, `"id":2`) {
				t.Fatalf("answer = %s, want %s for id 2", got, tc.wantCode)
			}
			if strings.Contains(got, "sk-secretvalue") {
				t.Fatalf("answer echoes an argument value: %s", got)
			}
			forwarded := false
			for _, l := range h.serverGot() {
				if strings.Contains(l, `"name":"read"`) {
					forwarded = true
				}
			}
			if forwarded != tc.forward {
				t.Fatalf("forwarded = %v, want %v", forwarded, tc.forward)
			}
		})
	}
}

func TestUnknownToolFetchUsesPrivateIDs(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, ""), Principal: policy.Principal{Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	// No tools/list from the client: the gateway must fetch it itself.
	h.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"read","arguments":{}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":"a","result"`) {
		t.Fatalf("allowed call answer = %s", got)
	}
	h.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"nosuchtool","arguments":{}}}` + "\n")
	got := h.recv()
	if !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, RuleUnknownTool) {
		t.Fatalf("unknown tool answer = %s", got)
	}
	lists := 0
	for _, l := range h.serverGot() {
		if strings.Contains(l, `"tools/list"`) {
			lists++
			if !strings.Contains(l, `"id":"gatehouse-`) {
				t.Fatalf("private tools/list without a private id: %s", l)
			}
		}
		if strings.Contains(l, "nosuchtool") {
			t.Fatalf("denied call reached the server: %s", l)
		}
	}
	if lists != 2 {
		t.Fatalf("server got %d private tools/list, want 2 (one per unknown tool)", lists)
	}
}

func TestToolsListChangedMarksCatalogStale(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, "")})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	if _, known, stale := h.sess.catalog.lookup("read"); !known || stale {
		t.Fatalf("after tools/list: known=%v stale=%v", known, stale)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- h.sess.handleServer(transport.NewFrame([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")))
	}()
	if got := h.recv(); !strings.Contains(got, "list_changed") {
		t.Fatalf("client got %s, want the notification", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, _, stale := h.sess.catalog.lookup("read"); !stale {
		t.Fatal("catalog not stale after list_changed")
	}
}

func TestDeniedCallsNeverReachTheServer(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, "  deny_response: tool_result\n"), Principal: policy.Principal{Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write","arguments":{"content":"hunter2"}}}` + "\n")
	got := h.recv()
	if !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "readonly_agent_no_mutating_tools") || strings.Contains(got, "hunter2") {
		t.Fatalf("denial = %s", got)
	}
	for _, l := range h.serverGot() {
		if strings.Contains(l, "hunter2") {
			t.Fatalf("denied call reached the server: %s", l)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

func TestToolCallParamsInAnotherCaseAreRefused(t *testing.T) {
	for _, params := range []string{
		`{"NAME":"write","arguments":{}}`,
		`{"name":"echo","Arguments":{"path":"/etc/shadow"}}`,
		`{"name":"echo","arguments":{},"_META":{}}`,
	} {
		if _, ok := parseToolCall([]byte(params)); ok {
			t.Errorf("parseToolCall(%s) accepted", params)
		}
	}
	if p, ok := parseToolCall([]byte(`{"name":"echo","arguments":{"Path":"a"}}`)); !ok || p.name != "echo" {
		t.Errorf("a plain call was refused")
	}
}

func TestArgumentNameInAnotherCaseIsDenied(t *testing.T) {
	h := newHarness(t, Config{Policy: readonlyPolicy(t, "")})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	// A policy reading arguments.path would not see "PATH"; a server
	// matching names case-insensitively would use it as path.
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"PATH":"/etc/shadow"}}}` + "\n")
	got := h.recv()
	if !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, RuleArgumentNameCase) {
		t.Fatalf("answer = %s", got)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/a","other":1}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":3,"result"`) {
		t.Fatalf("exact names refused: %s", got)
	}
	for _, l := range h.serverGot() {
		if strings.Contains(l, "/etc/shadow") {
			t.Fatalf("the call reached the server: %s", l)
		}
	}
}

// TestCachedDecisionFollowsTheToolDefinition: with a policy that depends
// only on the tool, a decision is reused for the same definition and taken
// again when the definition changes (a read-only tool that turns mutating
// is denied from then on).
func TestCachedDecisionFollowsTheToolDefinition(t *testing.T) {
	pol := readonlyPolicy(t, "")
	if !pol.DependsOnlyOnTool() {
		t.Fatal("the test policy should be cacheable")
	}
	h := newHarness(t, Config{Policy: pol, Principal: policy.Principal{Role: "readonly_agent"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	for _, id := range []string{"2", "3"} {
		h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/a"}}}` + "\n")
		if got := h.recv(); !strings.Contains(got, `"id":`+id+`,"result"`) {
			t.Fatalf("read-only call %s refused: %s", id, got)
		}
	}
	if _, ok := h.sess.catalog.decision("read", h.sess.catalog.gen); !ok {
		t.Fatal("no decision cached for a policy that depends only on the tool")
	}
	// The server redefines read as mutating (as a later listing would).
	tools, _ := parseToolsPage([]byte(`{"tools":[{"name":"read","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":false}}]}`))
	h.sess.catalog.replace(tools)
	h.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/b"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32080`) || !strings.Contains(got, "readonly_agent_no_mutating_tools") {
		t.Fatalf("call after the definition changed = %s, want the readonly denial", got)
	}
	for _, l := range h.serverGot() {
		if strings.Contains(l, "/tmp/b") {
			t.Fatalf("the call reached the server: %s", l)
		}
	}
}

// TestNoDecisionCacheForPerCallPolicies: a policy reading arguments is
// evaluated on every call.
func TestNoDecisionCacheForPerCallPolicies(t *testing.T) {
	p2, err := policy.Parse("t.yaml", []byte("name: a\nversion: \"1\"\nrules:\n  - id: no_shadow\n    when: 'has(arguments.path) && arguments.path == \"/etc/shadow\"'\n    action: deny\n    reason: no\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Policy: p2})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/a"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"id":2,"result"`) {
		t.Fatalf("allowed call refused: %s", got)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/shadow"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32080`) {
		t.Fatalf("second call with other arguments = %s, want a denial", got)
	}
}
